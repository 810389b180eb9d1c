# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.basil.vsphere.plugins.modules import basil_rebalance_window as window


@pytest.mark.parametrize("text,seconds", [("3h", 10800), ("180m", 10800), ("1h30m", 5400), ("2d", 172800),
                                          ("soon", None), ("", None)])
def test_durations(text, seconds):
    assert window.seconds(text) == seconds


def test_only_differing_fields_are_sent_and_a_second_run_changes_nothing(basil, run_module):
    result = run_module(window, cron="0 2 * * *", duration="3h", max_moves=8)
    assert result["changed_fields"] == ["cron"]
    assert [r for r in basil.requests if r[0] == "PUT"][0][1] == "/api/v1/schedules/rebalance"
    again = run_module(window, cron="0 2 * * *", duration="3h", max_moves=8)
    assert again["changed"] is False


def test_reset_forgets_the_changes_once(basil, run_module):
    run_module(window, max_gb=100)
    assert run_module(window, state="reset")["changed"] is True
    assert run_module(window, state="reset")["changed"] is False


def test_check_mode_shows_the_diff_and_changes_nothing(basil, run_module):
    result = run_module(window, check_mode=True, diff=True, max_moves=3)
    assert result["changed"] is True
    assert (result["diff"]["before"]["max_moves"], result["diff"]["after"]["max_moves"]) == (8, 3)
    assert basil.writes() == []

# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.basil.vsphere.plugins.modules import basil_plan


@pytest.mark.parametrize(
    "state,current,expected",
    [
        ("present", None, ["create"]),
        ("approved", None, ["create", "approve"]),
        ("applied", None, ["create", "apply"]),
        ("applied", "proposed", ["apply"]),
        ("applied", "approved", ["apply"]),
        ("applied", "running", []),
        ("applied", "succeeded", []),
        ("approved", "succeeded", []),
        ("cancelled", "approved", ["cancel"]),
        ("cancelled", "succeeded", []),
        ("cancelled", None, []),
    ],
)
def test_actions_take_a_plan_to_the_wanted_state(state, current, expected):
    assert basil_plan.actions_for(state, current) == expected


def test_applied_creates_applies_and_is_idempotent(basil, run_module):
    first = run_module(basil_plan, pod="gold", state="applied", poll_interval=0.01)
    assert first["changed"] is True
    assert first["actions"] == ["create", "apply"]
    assert first["plan_state"] == "succeeded"
    assert first["moves_succeeded"] == 1
    second = run_module(basil_plan, pod="gold", state="applied")
    assert second["changed"] is False
    assert second["actions"] == []
    assert second["plan_id"] == first["plan_id"]
    assert len(basil.plans) == 1


def test_check_mode_reports_and_changes_nothing(basil, run_module):
    result = run_module(basil_plan, check_mode=True, diff=True, pod="gold", state="applied")
    assert result["changed"] is True
    assert result["actions"] == ["create", "apply", "wait"]
    assert result["diff"] == dict(before=dict(plan=None, state=None), after=dict(plan=None, state="succeeded"))
    assert basil.plans == {}
    assert basil.writes() == []


def test_a_stale_recommendation_fails_with_basil_s_message(basil, run_module):
    basil.stale = True
    result = run_module(basil_plan, pod="gold", state="present")
    assert result["failed"] is True
    assert "can no longer be planned" in result["msg"]
    assert "the pod changed since" in result["msg"]
    assert result["status"] == 409


def test_an_unknown_plan_names_basil_s_answer(basil, run_module):
    result = run_module(basil_plan, plan_id=99, state="cancelled")
    assert result["failed"] is True
    assert result["msg"] == "GET /plans/99: HTTP 404 (not_found): Basil says: no plan 99"


def test_a_bad_token_fails_with_401(basil, run_module):
    result = run_module(basil_plan, pod="gold", basil_token="wrong")
    assert result["failed"] is True
    assert result["status"] == 401
    assert "a valid API token is needed" in result["msg"]

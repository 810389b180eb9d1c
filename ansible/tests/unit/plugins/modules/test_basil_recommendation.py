# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.basil.vsphere.plugins.modules import basil_recommendation


def test_a_recommendation_without_moves_says_why_and_how_many_disks_are_pinned():
    out = basil_recommendation.describe(
        dict(
            id=None, moves=[], before=dict(imbalance=0.5), after=dict(imbalance=0.5),
            stop_reason="no eligible disk lowers the imbalance; 2 disks that could are pinned (see pinned_blocking)",
            pinned_blocking_total=2,
        )
    )  # fmt: skip
    assert out == dict(
        move_count=0, total_gb=0.0, imbalance_before=0.5, imbalance_after=0.5,
        stop_reason="no eligible disk lowers the imbalance; 2 disks that could are pinned (see pinned_blocking)",
        pinned_blocking_total=2,
    )  # fmt: skip


def test_moves_are_counted_with_their_gb_and_no_recommendation_is_no_move():
    moves = [dict(size_gb=10), dict(size_gb="2.5")]
    out = basil_recommendation.describe(dict(id=3, moves=moves, before=dict(imbalance=0.9), after={}))
    assert (out["move_count"], out["total_gb"], out["imbalance_after"], out["pinned_blocking_total"]) == (
        2, 12.5, None, 0,
    )  # fmt: skip
    assert basil_recommendation.describe(None) == dict(move_count=0, total_gb=0.0, pinned_blocking_total=0)

# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.basil.vsphere.plugins.modules import basil_pool

TREE = dict(
    name="lun6", datastore="6diskLUN", sioc=True,
    root=dict(reservation=1000, limit="unlimited"),
    pools=[dict(name="gold", shares="high", children=[dict(vm="oltp-1", reservation=400)])],
)


def test_present_creates_then_changes_nothing(basil, run_module):
    first = run_module(basil_pool, **TREE)
    assert (first["changed"], first["action"]) == (True, "create")
    second = run_module(basil_pool, **TREE)
    assert (second["changed"], second["action"]) == (False, "none")
    assert basil.pools["lun6"]["version"] == 1


def test_a_change_replaces_with_the_version_read_and_diffs(basil, run_module):
    run_module(basil_pool, **TREE)
    changed = dict(TREE, root=dict(reservation=1200, limit="unlimited"))
    result = run_module(basil_pool, diff=True, **changed)
    assert (result["changed"], result["action"]) == (True, "replace")
    assert result["diff"]["before"]["root"]["reservation"] == 1000
    assert result["diff"]["after"]["root"]["reservation"] == 1200
    assert basil.pools["lun6"]["version"] == 2


def test_check_mode_validates_and_saves_nothing(basil, run_module):
    result = run_module(basil_pool, check_mode=True, **TREE)
    assert result["changed"] is True
    assert basil.pools == {}
    assert basil.writes() == []


def test_invalid_trees_fail_naming_each_field(basil, run_module):
    bad = dict(TREE, pools=[dict(vm="ghost-1"), dict(vm="ghost-2")])
    result = run_module(basil_pool, **bad)
    assert result["failed"] is True
    assert [p["field"] for p in result["problems"]] == ["pools[0].vm", "pools[1].vm"]
    assert "pools[1].vm: no VM 'ghost-2'" in result["msg"]
    assert basil.pools == {}


def test_absent_deletes_once(basil, run_module):
    run_module(basil_pool, **TREE)
    assert run_module(basil_pool, name="lun6", state="absent")["changed"] is True
    assert run_module(basil_pool, name="lun6", state="absent")["changed"] is False
    assert basil.pools == {}


def test_differences_use_basil_s_defaults():
    assert basil_pool.differences(dict(datastore="a", vcenter="lab"), dict(datastore="a", root={}, pools=[])) == []
    assert basil_pool.differences(dict(datastore="a", sioc=True), dict(datastore="a")) == ["sioc"]

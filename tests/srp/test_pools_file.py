"""POOLS.yaml and DEMAND.json: loading into the core types, and every problem named by its field path."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from basil.errors import ValidationError
from basil.srp.pools_file import (
    load_demand,
    load_pools,
    pools_from_data,
    read_demand,
    read_pools,
    read_tags,
)
from basil.srp.tree import NodeKind, PoolTree

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def pool_problems(tmp_path: Path, text: str, reservable: float | None = None) -> list[str]:
    tree, problems = read_pools(write(tmp_path, "pools.yaml", text), reservable)
    assert tree is None
    return [str(p) for p in problems]


def test_the_example_loads() -> None:
    tree = load_pools(EXAMPLES / "srp-pools.yaml", reservable_capacity=4500)
    assert [n.name for n in tree.pools] == ["RP1", "RP2", "RP3"]
    assert tree.vm_names() == {f"VM{i}" for i in range(1, 7)}
    snapshot = load_demand(EXAMPLES / "srp-demand.json", tree)
    assert snapshot.vms["VM1"].host == "esx-01"
    assert [d.name for d in snapshot.vms["VM2"].disks] == ["scsi0:0", "scsi0:1"]


def test_nested_pools_leaves_levels_and_unlimited(tmp_path: Path) -> None:
    tree = load_pools(
        write(
            tmp_path,
            "pools.yaml",
            """
root: {reservation: 1000, limit: 5000, shares: high}
pools:
  - name: sales
    reservation: 1000
    shares: high
    children:
      - {vm: web1, reservation: 100, limit: unlimited}
      - name: emea
        limit: 800
        children:
          - {vm: db1, disk: "scsi0:1", shares: low}
  - {vm: loner}
""",
        )
    )
    by_name = {n.name: n for n in tree.nodes}
    assert by_name["root"].controls.shares == 2000
    assert by_name["sales"].controls.reservation == 1000
    assert math.isinf(by_name["web1"].controls.limit)
    assert by_name["emea"].controls.limit == 800
    assert by_name["db1/scsi0:1"].kind is NodeKind.DISK
    assert by_name["db1/scsi0:1"].controls.shares == 500
    assert by_name["loner"].parent == 0


def test_root_and_pools_are_optional(tmp_path: Path) -> None:
    tree = load_pools(write(tmp_path, "pools.yaml", "pools:\n  - {vm: a}\n"))
    assert tree.root.controls.reservation == 0
    assert math.isinf(tree.root.controls.limit)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("pools: {}\n", "pools.yaml:pools: must be a list", id="pools-not-list"),
        pytest.param("[1, 2]\n", "pools.yaml: must be a mapping", id="document-not-mapping"),
        pytest.param("root: {}\nextra: 1\n", "pools.yaml:extra: unknown key", id="unknown-top-key"),
        pytest.param(
            "pools:\n  - {name: P, colour: red}\n",
            "pools.yaml:pools[0].colour: unknown key",
            id="unknown-key",
        ),
        pytest.param(
            "pools:\n  - {name: P, vm: a}\n", "pools.yaml:pools[0]: has both name", id="name-and-vm"
        ),
        pytest.param("pools:\n  - {reservation: 5}\n", "pools.yaml:pools[0]: needs name", id="neither"),
        pytest.param("pools:\n  - 42\n", "pools.yaml:pools[0]: must be a mapping", id="not-mapping"),
        pytest.param(
            "pools:\n  - {name: 7}\n", "pools.yaml:pools[0].name: must be a string", id="name-not-string"
        ),
        pytest.param(
            "pools:\n  - {name: P, reservation: lots}\n",
            "pools.yaml:pools[0].reservation: must be a number",
            id="reservation-not-number",
        ),
        pytest.param(
            "pools:\n  - {name: P, limit: -1}\n",
            "pools.yaml:pools[0].limit: -1 is vSphere's spelling",
            id="minus-one",
        ),
        pytest.param(
            "pools:\n  - {name: P, shares: medium}\n",
            "pools.yaml:pools[0].shares: unknown share level",
            id="shares",
        ),
        pytest.param(
            "pools:\n  - {name: P, shares: true}\n",
            "pools.yaml:pools[0].shares: must be a number",
            id="shares-bool",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: {vm: a}}\n",
            "pools.yaml:pools[0].children: must be a list",
            id="children",
        ),
        pytest.param(
            "pools:\n  - {name: P, reservation: -3}\n",
            "pools.yaml:pools[0].reservation: must not be negative",
            id="negative",
        ),
        pytest.param(
            "pools:\n  - {name: P, reservation: 9, limit: 3}\n",
            "pools.yaml:pools[0].reservation: reservation 9 is above the limit 3",
            id="r-above-l",
        ),
        pytest.param(
            "pools:\n  - {name: P}\n  - {name: P}\n",
            "pools.yaml:pools[1].name: duplicate pool name 'P' (also at pools[0])",
            id="duplicate",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{vm: a}]}\n  - {name: Q, children: [{vm: a}]}\n",
            "pools.yaml:pools[1].children[0]: VM 'a' is in two pools: pool 'P' and pool 'Q'",
            id="vm-twice",
        ),
        pytest.param(
            "pools:\n  - name: P\n    limit: 100\n"
            "    children: [{vm: a, reservation: 80}, {vm: b, reservation: 80}]\n",
            "pools.yaml:pools[0].limit: the children's reservations add up to 160 IOPS",
            id="children-above-limit",
        ),
        pytest.param(
            "root: {reservation: 0}\npools:\n  - {vm: a, reservation: 10}\n",
            "pools.yaml:root.reservation: the reservations below the root add up to 10",
            id="root-admission",
        ),
        pytest.param(
            "pools: &loop\n  - name: P\n    children: *loop\n",
            "the pools would form a cycle",
            id="yaml-alias-cycle",
        ),
        pytest.param("pools:\n  - {name: P, name: Q}\n", "duplicate key 'name'", id="duplicate-yaml-key"),
        pytest.param("pools: [\n", "pools.yaml:line 2, column 1: not valid YAML", id="yaml-syntax"),
    ],
)
def test_each_pools_problem_names_its_field(tmp_path: Path, text: str, expected: str) -> None:
    found = pool_problems(tmp_path, text)
    assert any(expected in p for p in found), found


def test_a_pool_that_contains_itself_is_a_cycle() -> None:
    # YAML refuses recursive aliases itself (above); data built in code can still loop.
    pool: dict[str, object] = {"name": "P", "children": []}
    pool["children"] = [{"vm": "a"}, pool]
    tree, problems = pools_from_data({"pools": [pool]})
    assert tree is None
    assert [str(p) for p in problems] == [
        "POOLS.yaml:pools[0].children[1]: this pool contains itself: the pools would form a cycle"
    ]


def test_problems_below_a_pool_without_a_name_are_still_reported(tmp_path: Path) -> None:
    found = pool_problems(
        tmp_path, "pools:\n  - {name: 5, children: [{vm: a, reservation: -1}, {colour: red}]}\n"
    )
    assert found == [
        "pools.yaml:pools[0].name: must be a string, got 5 (quote it in YAML)",
        "pools.yaml:pools[0].children[1]: needs name (a pool), vm (a VM or disk leaf) or tag (the VMs "
        "carrying a tag)",
        "pools.yaml:pools[0].children[0].reservation: must not be negative (got -1)",
    ]


# --- tag leaves -------------------------------------------------------------------------------------

TAGS = {
    "qos/gold": ("db1", "db2"),
    "qos/silver": ("web1", "web2", "db2"),
    "qos/bronze": ("batch1",),
    "qos/empty": (),
}


def tag_tree(text: str, tags: dict[str, tuple[str, ...]] | None = None) -> tuple[PoolTree | None, list[str]]:
    tree, problems = pools_from_data(yaml.safe_load(text), tags=TAGS if tags is None else tags)
    return tree, [str(p) for p in problems]


def test_a_tag_leaf_is_one_whole_vm_leaf_per_tagged_vm_with_its_settings() -> None:
    tree, problems = tag_tree(
        """
root: {reservation: 500}
pools:
  - name: gold
    shares: high
    children: [{tag: qos/gold, reservation: 100, limit: 900, shares: low}]
  - name: batch
    children: [{tag: qos/bronze}, {tag: qos/empty}, {vm: other}]
"""
    )
    assert problems == []
    assert tree is not None
    by_name = {n.name: n for n in tree.nodes}
    assert tree.vm_names() == {"db1", "db2", "batch1", "other"}
    for vm in ("db1", "db2"):
        assert by_name[vm].kind is NodeKind.VM
        assert tree.nodes[by_name[vm].parent].name == "gold"
        assert (by_name[vm].controls.reservation, by_name[vm].controls.limit) == (100, 900)
        assert by_name[vm].controls.shares == 500
    assert tree.nodes[by_name["batch1"].parent].name == "batch"


def test_two_tags_of_one_pool_reach_a_vm_once() -> None:
    tree, problems = tag_tree("pools:\n  - {name: P, children: [{tag: qos/gold}, {tag: qos/silver}]}\n")
    assert problems == []
    assert tree is not None
    assert sorted(n.name for n in tree.leaves) == ["db1", "db2", "web1", "web2"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/platinum}]}\n",
            "POOLS.yaml:pools[0].children[0].tag: unknown tag 'qos/platinum'",
            id="unknown-tag",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: gold}]}\n",
            "POOLS.yaml:pools[0].children[0].tag: must be category/name, got 'gold'",
            id="no-category",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold, disk: 'scsi0:0'}]}\n",
            "POOLS.yaml:pools[0].children[0].disk: unknown key",
            id="tag-with-disk",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold, vm: db1}]}\n",
            "POOLS.yaml:pools[0].children[0]: has both vm and tag",
            id="tag-and-vm",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold, reservation: 9, limit: 3}]}\n",
            "POOLS.yaml:pools[0].children[0].reservation: reservation 9 is above the limit 3",
            id="bad-controls",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold}]}\n  - {name: Q, children: [{vm: db2}]}\n",
            "POOLS.yaml:pools[0].children[0].tag: VM 'db2' carries tag 'qos/gold' and is also in the "
            "tree by name at pools[1].children[0]; give it one place",
            id="name-and-tag",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold}, {vm: db1, disk: 'scsi0:1'}]}\n",
            "VM 'db1' carries tag 'qos/gold' and is also in the tree by its disk 'scsi0:1' at "
            "pools[0].children[1]",
            id="disk-and-tag",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold}]}\n"
            "  - {name: Q, children: [{tag: qos/silver}]}\n",
            "POOLS.yaml:pools[1].children[0].tag: VM 'db2' carries tags 'qos/gold' (in pool 'P', at "
            "pools[0].children[0]) and 'qos/silver' (in pool 'Q'); a VM can be in one pool only",
            id="two-tags-two-pools",
        ),
        pytest.param(
            "pools:\n  - {name: P, children: [{tag: qos/gold, limit: 50}, {tag: qos/silver}]}\n",
            "POOLS.yaml:pools[0].children[1].tag: VM 'db2' carries tags 'qos/gold' (at pools[0].children[0]) "
            "and 'qos/silver' of the same pool with different reservation, limit or shares",
            id="two-tags-one-pool-different-settings",
        ),
    ],
)
def test_each_tag_problem_names_its_field(text: str, expected: str) -> None:
    tree, found = tag_tree(text)
    assert tree is None
    assert any(expected in p for p in found), found


def test_tag_conflicts_name_vms_by_their_labels_and_are_all_reported() -> None:
    data = {"pools": [{"name": "P", "children": [{"tag": "qos/gold"}]}, {"tag": "qos/silver"}]}
    tree, problems = pools_from_data(
        data, tags={"qos/gold": ("vm-1", "vm-2"), "qos/silver": ("vm-1", "vm-2")}, labels={"vm-1": "db1"}
    )
    assert tree is None
    found = [str(p) for p in problems]
    assert len(found) == 2, found
    assert "VM 'db1' carries tags 'qos/gold' (in pool 'P'" in found[0]
    assert "'qos/silver' (under the root)" in found[0]
    assert "VM 'vm-2'" in found[1]


def test_tag_leaves_without_tags_are_a_problem() -> None:
    tree, problems = pools_from_data({"pools": [{"tag": "qos/gold"}]})
    assert tree is None
    assert [p.field for p in problems] == ["POOLS.yaml:pools[0].tag"]
    assert "--tags" in problems[0].message


def test_tags_file(tmp_path: Path) -> None:
    path = write(tmp_path, "tags.json", json.dumps({"qos/gold": ["a", "b"], "gold": ["c"], "qos/x": [1]}))
    tags, problems = read_tags(path)
    assert tags == {"qos/gold": ("a", "b")}
    assert [str(p) for p in problems] == [
        "tags.json:gold: a tag is named category/name",
        "tags.json:qos/x: must be a list of VM names",
    ]
    assert read_tags(write(tmp_path, "bad.json", "[1]"))[0] is None
    assert read_tags(tmp_path / "missing.json")[0] is None


def test_reservable_capacity_is_admission_control(tmp_path: Path) -> None:
    found = pool_problems(tmp_path, "root: {reservation: 5000}\n", reservable=4000)
    assert any("root.reservation" in p and "reservable capacity" in p for p in found), found


def test_every_pools_problem_at_once(tmp_path: Path) -> None:
    text = """
root: {reservation: 100, colour: blue}
pools:
  - {name: P, reservation: -1, children: [{vm: a}, {vm: b, limit: many}]}
  - {name: P}
  - {name: Q, children: [{vm: a}]}
"""
    with pytest.raises(ValidationError) as caught:
        load_pools(write(tmp_path, "pools.yaml", text))
    fields = [p.field for p in caught.value.problems]
    assert fields == [
        "pools.yaml:root.colour",
        "pools.yaml:pools[0].children[1].limit",
        "pools.yaml:pools[0].reservation",
        "pools.yaml:pools[1].name",
        "pools.yaml:pools[2].children[0]",
    ]


# --- DEMAND.json ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> PoolTree:
    return load_pools(
        write(
            tmp_path,
            "pools.yaml",
            "pools:\n  - {name: P, children: [{vm: a}, {vm: b}, {vm: c, disk: 'scsi0:0'}]}\n",
        )
    )


def demand_problems(tmp_path: Path, data: object, tree: PoolTree | None) -> list[str]:
    text = data if isinstance(data, str) else json.dumps(data)
    snapshot, problems = read_demand(write(tmp_path, "demand.json", text), tree)
    assert snapshot is None
    return [str(p) for p in problems]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param([1], "demand.json: must be an object", id="not-object"),
        pytest.param({"a": 5}, "demand.json:a: must be an object", id="entry-not-object"),
        pytest.param({"a": {"iops": 5}}, "demand.json:a.latency_ms: is required", id="missing-latency"),
        pytest.param(
            {"a": {"iops": "x", "latency_ms": 1}}, "demand.json:a.iops: must be a number", id="not-number"
        ),
        pytest.param(
            {"a": {"iops": -5, "latency_ms": 1}},
            "demand.json:a.iops: must be a finite non-negative",
            id="negative",
        ),
        pytest.param(
            {"a": {"iops": 1, "latency_ms": 1, "colour": 1}},
            "demand.json:a.colour: unknown key",
            id="unknown",
        ),
        pytest.param({"a": {}}, "demand.json:a: needs iops and latency_ms", id="empty"),
        pytest.param(
            {"a": {"iops": 1, "latency_ms": 1, "disks": {}}}, "demand.json:a: give either", id="own-and-disks"
        ),
        pytest.param(
            {"a": {"disks": []}}, "demand.json:a.disks: must be a non-empty object", id="disks-list"
        ),
        pytest.param(
            {"a": {"disks": {"scsi0:0": {"iops": 1}}}},
            "demand.json:a.disks.scsi0:0.latency_ms: is required",
            id="disk-missing-latency",
        ),
        pytest.param(
            {"a": {"iops": 1, "latency_ms": 1, "host": 3}},
            "demand.json:a.host: must be a non-empty",
            id="host",
        ),
        pytest.param(
            {"a": {"iops": 1, "latency_ms": 1, "io_size_kb": 0}},
            "demand.json:a.io_size_kb: must be a positive",
            id="size",
        ),
        pytest.param(
            {"zed": {"iops": 1, "latency_ms": 1}}, "demand.json:zed: is not in any pool", id="unknown-vm"
        ),
        pytest.param(
            {"c": {"iops": 1, "latency_ms": 1}}, "demand.json:c: its disks are pool leaves", id="disk-leaf"
        ),
        pytest.param(
            {"c": {"disks": {"scsi0:9": {"iops": 1, "latency_ms": 1}}}},
            "demand.json:c.disks.scsi0:9: this disk is not in any pool",
            id="unknown-disk",
        ),
        pytest.param(
            '{"a": {"iops": 1, "iops": 2, "latency_ms": 1}}', "duplicate key 'iops'", id="duplicate-key"
        ),
        pytest.param('{"a": {"iops": NaN, "latency_ms": 1}}', "NaN is not a number JSON allows", id="nan"),
        pytest.param('{"a": ', "demand.json:line 1, column 7: not valid JSON", id="syntax"),
    ],
)
def test_each_demand_problem_names_its_field(
    tmp_path: Path, tree: PoolTree, data: object, expected: str
) -> None:
    found = demand_problems(tmp_path, data, tree)
    assert any(expected in p for p in found), found


def test_every_demand_problem_at_once(tmp_path: Path, tree: PoolTree) -> None:
    data = {
        "a": {"iops": -1, "latency_ms": "slow"},
        "b": {"iops": 1},
        "ghost": {"iops": 1, "latency_ms": 1},
    }
    with pytest.raises(ValidationError) as caught:
        load_demand(write(tmp_path, "demand.json", json.dumps(data)), tree)
    assert [p.field for p in caught.value.problems] == [
        "demand.json:a.latency_ms",
        "demand.json:b.latency_ms",
        "demand.json:ghost",
    ]


def test_demand_without_a_tree_checks_only_its_own_shape(tmp_path: Path) -> None:
    snapshot, problems = read_demand(write(tmp_path, "d.json", '{"anyone": {"iops": 1, "latency_ms": 2}}'))
    assert problems == []
    assert snapshot is not None
    assert snapshot.vms["anyone"].latency_ms == 2


def test_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    tree, problems = read_pools(tmp_path / "absent.yaml")
    assert tree is None
    assert "cannot read the file" in str(problems[0])

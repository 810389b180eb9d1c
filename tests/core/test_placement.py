"""Initial placement: rank eligible datastores by resulting N; say why the others are excluded."""

from __future__ import annotations

import math

import pytest

from basil.core.constraints import ANTI_AFFINITY, HOSTS, KEEP_TOGETHER, MAINTENANCE, SPACE
from basil.core.normalized_load import MODEL_NEW
from basil.core.placement import POD_MISMATCH, PlacementRequest, place, placement_to_dict
from basil.core.snapshot import Rules
from basil.core.workload_model import FLAG_SEQUENTIAL, WorkloadConstants, load_metric
from basil.errors import ValidationError

from .builders import datastore, disk, example, snapshot, workload


def test_table2_new_disk_goes_where_the_resulting_n_is_lowest() -> None:
    doc = example("basil-table2.json")
    w = workload(7, 8, 70, 100)
    result = place(doc.snapshot, PlacementRequest(size_gb=10, workload=w), doc.params)
    k = WorkloadConstants()
    assert result.load == pytest.approx(load_metric(w, k))
    # Recompute each datastore's N with the new disk from the models, independently.
    sums: dict[str, float] = {}
    for d in doc.snapshot.disks:
        assert d.workload is not None
        sums[d.datastore] = sums.get(d.datastore, 0.0) + load_metric(d.workload, k)
    perf = {ds.name: ds.performance for ds in doc.snapshot.datastores}
    expected = {name: (sums[name] + result.load) / p for name, p in perf.items() if p is not None}
    assert [r.datastore for r in result.ranked] == sorted(expected, key=expected.__getitem__)
    assert {r.datastore: r.n_after for r in result.ranked} == pytest.approx(expected)
    assert result.recommended is not None
    assert result.recommended.datastore == "9diskLUN"
    assert result.recommended.rank == 1
    assert "lowest resulting normalized load" in result.recommended.reason


def test_excluded_datastores_carry_every_reason() -> None:
    snap = snapshot(
        [
            datastore("ok"),
            datastore("maint", maintenance=True, hosts=("esx-2",)),
            datastore("full", capacity_gb=100, free_gb=12),
            datastore("foe"),
        ],
        [disk("vm9/d0", "foe"), disk("vm5/d0", "ok")],
        rules=Rules(anti_affinity=(frozenset({"vm5", "vm9"}),), splittable_vms=frozenset({"vm5"})),
    )
    result = place(snap, PlacementRequest(size_gb=5, load=10, vm="vm5", hosts=frozenset({"esx-1"})))
    assert [r.datastore for r in result.ranked] == ["ok"]
    reasons = {e.datastore: [v.code for v in e.reasons] for e in result.excluded}
    assert reasons == {"maint": [MAINTENANCE, HOSTS], "full": [SPACE], "foe": [ANTI_AFFINITY]}


def test_an_existing_vms_disks_are_kept_together() -> None:
    snap = snapshot(
        [datastore("a", performance=0.5), datastore("b", performance=5.0)],
        [disk("vm1/d0", "a", load=100)],
    )
    result = place(snap, PlacementRequest(size_gb=5, load=10, vm="vm1"))
    assert [r.datastore for r in result.ranked] == ["a"]
    assert [v.code for v in result.excluded[0].reasons] == [KEEP_TOGETHER]
    split = place(
        snapshot(list(snap.datastores), list(snap.disks), rules=Rules(splittable_vms=frozenset({"vm1"}))),
        PlacementRequest(size_gb=5, load=10, vm="vm1"),
    )
    assert split.recommended is not None
    assert split.recommended.datastore == "b"


def test_pod_filter() -> None:
    snap = snapshot([datastore("a", pod="gold"), datastore("b", pod="silver")], [])
    result = place(snap, PlacementRequest(size_gb=1, load=1, pod="silver"))
    assert [r.datastore for r in result.ranked] == ["b"]
    assert result.excluded[0].reasons[0].code == POD_MISMATCH


def test_new_datastore_ranks_with_the_stand_in_and_says_so() -> None:
    snap = snapshot(
        [datastore("busy", performance=2.0), datastore("new", performance=None)],
        [disk("vm1/d0", "busy", load=500)],
    )
    result = place(snap, PlacementRequest(size_gb=1, load=50))
    assert result.recommended is not None
    assert result.recommended.datastore == "new"
    assert result.recommended.model == MODEL_NEW
    assert result.recommended.performance == 2.0
    assert "stand-in" in result.recommended.reason


def test_no_eligible_datastore() -> None:
    snap = snapshot([datastore("m", maintenance=True)], [])
    result = place(snap, PlacementRequest(size_gb=1, load=1))
    assert result.recommended is None
    assert placement_to_dict(result)["recommended"] is None


def test_sequential_workload_is_flagged() -> None:
    snap = snapshot([datastore("a")], [])
    result = place(snap, PlacementRequest(size_gb=1, workload=workload(4, 64, 90, 0)))
    assert result.flags == (FLAG_SEQUENTIAL,)
    assert result.recommended is not None
    assert "sequential" in result.recommended.reason


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        pytest.param(PlacementRequest(size_gb=-1, load=1), "size_gb", id="negative-size"),
        pytest.param(PlacementRequest(size_gb=math.nan, load=1), "size_gb", id="nan-size"),
        pytest.param(PlacementRequest(size_gb=1), "workload", id="no-load"),
        pytest.param(
            PlacementRequest(size_gb=1, workload=workload(1, 8, 150, 10)), "read_pct", id="read-pct"
        ),
        pytest.param(PlacementRequest(size_gb=1, load=1, pod="nope"), "pod", id="unknown-pod"),
        pytest.param(PlacementRequest(size_gb=1, load=-4), "load", id="negative-load"),
    ],
)
def test_bad_requests_name_the_field(request_: PlacementRequest, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        place(snapshot([datastore("a")], []), request_)
    assert field in {p.field for p in err.value.problems}


def test_placement_json_shape() -> None:
    doc = example("basil-table2.json")
    data = placement_to_dict(place(doc.snapshot, PlacementRequest(size_gb=10, load=100), doc.params))
    assert data["recommended"] == data["ranked"][0]["datastore"]
    assert set(data["ranked"][0]) >= {"rank", "datastore", "n_before", "n_after", "reason", "free_after_gb"}

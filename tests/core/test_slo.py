"""The SLO goal (Lipetz et al.): the M/M/1-with-priorities model, the damage, the priority gradient,
the cost-limited placement and its errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from basil.core.constraints import PlacementState, build_units
from basil.core.device_model import PER_DEVICE_P
from basil.core.normalized_load import resolve_models
from basil.core.params import BalancerParams
from basil.core.slo import (
    DEVICE_TABLE,
    REASON_SLO,
    STOP_SLO_MET,
    STOP_SLO_NO_GAIN,
    PriorityGroup,
    SloParams,
    SloResult,
    assign_groups,
    damage_of,
    damage_with_moves,
    gradient_step,
    group_shares,
    mm1_priority_response,
    recommend_slo,
)
from basil.core.snapshot import Datastore, Disk, Snapshot
from basil.core.workload_model import WorkloadParams
from basil.errors import ValidationError

H = frozenset({"esx-1"})
READS = WorkloadParams(oio=4.0, io_size_kb=8.0, read_pct=100.0, random_pct=100.0)
OLTP = WorkloadParams(oio=4.0, io_size_kb=8.0, read_pct=70.0, random_pct=100.0)


def tier(name: str, kind: str | None, devices: int | None, *, hosts: frozenset[str] = H) -> Datastore:
    return Datastore(
        name=name, capacity_gb=2000.0, free_gb=1600.0, hosts=hosts, device_kind=kind, spindles=devices
    )


def vdisk(vm: str, on: str, iops: float, workload: WorkloadParams = OLTP, size_gb: float = 50.0) -> Disk:
    return Disk(id=f"{vm}/d", vm=vm, datastore=on, size_gb=size_gb, hosts=H, workload=workload, iops=iops)


def groups(**members: list[str]) -> SloParams:
    drts = {"gold": 2.0, "silver": 10.0, "bronze": 30.0}
    return SloParams(groups=tuple(PriorityGroup(g, drts[g], vms=tuple(vms)) for g, vms in members.items()))


def three_tiers(gold_on: str = "sata") -> tuple[Snapshot, SloParams]:
    """Four busy gold disks on SATA, silver on FC, bronze on SSD: the placement without QoS."""
    disks = [vdisk(f"gold{i}", gold_on, 150.0) for i in range(4)]
    disks += [vdisk(f"silver{i}", "fc", 150.0) for i in range(4)]
    disks += [vdisk(f"bronze{i}", "ssd", 150.0) for i in range(4)]
    snap = Snapshot(
        datastores=(tier("ssd", "ssd", 4), tier("fc", "fc15k", 8), tier("sata", "sata7k", 12)),
        disks=tuple(disks),
    )
    slo = groups(
        gold=[f"gold{i}" for i in range(4)],
        silver=[f"silver{i}" for i in range(4)],
        bronze=[f"bronze{i}" for i in range(4)],
    )
    return snap, slo


def run(snap: Snapshot, slo: SloParams, **params: object) -> SloResult:
    return recommend_slo(snap, BalancerParams(**params), slo, assign_groups(slo, snap))  # type: ignore[arg-type]


def applied(snap: Snapshot, result: SloResult) -> Snapshot:
    where = {d.id: d.datastore for d in snap.disks}
    for m in result.plan.moves:
        for d in m.disks:
            where[d] = m.target
    return dataclasses.replace(
        snap, disks=tuple(dataclasses.replace(d, datastore=where[d.id]) for d in snap.disks)
    )


# --- the queueing model --------------------------------------------------------------------------------


def test_mm1_priority_hand_checked() -> None:
    # One device, S = 10 ms for both classes, 20 and 30 IO/s: ρ1 = 0.2, ρ2 = 0.3, W0 = Σ ρ S = 5 ms.
    # Cobham: W1 = 5 / (1 · 0.8) = 6.25 ms, W2 = 5 / (0.8 · 0.5) = 12.5 ms; RT = S + W.
    rt = mm1_priority_response([10.0, 10.0], [20.0, 30.0], [0, 1], priority=True)
    assert rt == pytest.approx([16.25, 22.5])
    # Plain M/M/1 (SIOC off): W = W0 / (1 − ρ) = 10 ms, RT = S / (1 − ρ) = 20 ms for both.
    assert mm1_priority_response([10.0, 10.0], [20.0, 30.0], [0, 1], priority=False) == pytest.approx(
        [20.0, 20.0]
    )


def test_mm1_priority_conserves_work() -> None:
    # Kleinrock's conservation law: priorities move waiting between classes, the ρ-weighted mean
    # wait stays the FCFS one.
    service, rates, classes = [4.0, 6.0, 9.0], [30.0, 25.0, 20.0], [0, 1, 2]
    prio = mm1_priority_response(service, rates, classes, devices=2.0, priority=True)
    fcfs = mm1_priority_response(service, rates, classes, devices=2.0, priority=False)
    rho = [lam * s / 1000.0 / 2.0 for s, lam in zip(service, rates, strict=True)]

    def mean(rts: list[float]) -> float:
        return sum(r * (rt - s) for r, rt, s in zip(rho, rts, service, strict=True))

    assert mean(prio) == pytest.approx(mean(fcfs))
    assert prio[0] < fcfs[0] < prio[2]


def test_round_predicts_what_the_formula_gives() -> None:
    # Reads only, 8 KB random on one FC device (Table I: 4 ms + 8 KB at 60 MB/s).
    s = 4.0 + 8.0 / 1024.0 / 60.0 * 1000.0
    assert DEVICE_TABLE["fc15k"].service_ms(8.0, 1.0, write=False) == pytest.approx(s)
    snap = Snapshot(
        datastores=(tier("fc", "fc15k", 1), tier("sata", "sata7k", 1)),
        disks=(vdisk("g", "fc", 20.0, READS), vdisk("b", "fc", 30.0, READS)),
    )
    slo = dataclasses.replace(groups(gold=["g"], bronze=["b"]), priority_queues=True)
    # Hand-checked: ρ = λ S, W0 = (ρg + ρb) S, Wg = W0/(1 − ρg), Wb = W0/((1 − ρg)(1 − ρg − ρb)).
    rg, rb = 0.020 * s, 0.030 * s
    w0 = (rg + rb) * s
    expected = {"gold": s + w0 / (1 - rg), "bronze": s + w0 / ((1 - rg) * (1 - rg - rb))}
    report = run(snap, slo, max_moves=0).pod("default")
    got = {g.name: g.predicted_ms_before for g in report.groups if g.disks}
    assert got == pytest.approx(expected)
    assert report.damage_before == pytest.approx(damage_of(expected["gold"], 2.0))
    assert report.utilisation_before["fc"] == pytest.approx(rg + rb)


def test_every_device_kind_has_a_table_row() -> None:
    assert set(DEVICE_TABLE) == set(PER_DEVICE_P)


def test_damage_function() -> None:
    assert damage_of(1.5, 2.0) == 0.0
    assert damage_of(2.0, 2.0) == 0.0
    assert damage_of(5.0, 2.0) == pytest.approx(4.5)  # (5 − 2)² / 2


def test_gradient_step() -> None:
    # Above its DRT a disk gains priority (×RT/DRT), below it yields; no DRT or idle: unchanged.
    priority = np.array([0.5, 0.1, 0.01, 0.5])
    rt = np.array([4.0, 5.0, 50.0, math.nan])
    drt = np.array([2.0, 10.0, math.nan, 2.0])
    assert gradient_step(priority, rt, drt) == pytest.approx([1.0, 0.05, 0.01, 0.5])


# --- the round -----------------------------------------------------------------------------------------


def test_gold_moves_to_the_fast_tier_with_reasons_and_effects() -> None:
    snap, slo = three_tiers()
    result = run(snap, slo, max_moves=8)
    report = result.pod("default")
    moves = result.plan.moves
    assert moves
    assert all(m.target == "ssd" for m in moves)
    assert [m.vm for m in moves[:4]] == ["gold0", "gold1", "gold2", "gold3"]
    # Past gold, a move that leaves the damage as it is only relieves a source over the 30 % cap.
    for m in moves[4:]:
        assert result.effects[m.number].damage_after == result.effects[m.number].damage_before
        assert report.utilisation_before[m.source] > slo.utilisation_cap
    gold = next(g for g in report.groups if g.name == "gold")
    assert gold.predicted_ms_before is not None
    assert gold.predicted_ms_after is not None
    assert gold.predicted_ms_before > gold.drt_ms >= gold.predicted_ms_after
    assert report.damage_after < report.damage_before / 6
    damage = report.damage_before
    for m in moves[:4]:
        assert m.reason_code == REASON_SLO
        assert m.reason.startswith(f"{m.vm} (gold) from sata")
        assert "damage" in m.reason
        effect = result.effects[m.number]
        assert effect.damage_before == pytest.approx(damage)
        assert effect.damage_after < effect.damage_before
        assert "gold" in {e.group for e in effect.groups}
        damage = effect.damage_after
    assert damage == pytest.approx(report.damage_after)
    assert report.utilisation_after["ssd"] <= slo.utilisation_cap


def test_budget_limits_the_exchanges() -> None:
    snap, slo = three_tiers()
    result = run(snap, slo, max_moves=2)
    assert len(result.plan.moves) == 2
    report = result.pod("default")
    assert 0 < report.damage_after < report.damage_before
    assert result.plan.pods[0].stop == "budget_moves"
    gb = run(snap, slo, max_gb=60.0)
    assert len(gb.plan.moves) == 1


def test_utilisation_cap_is_respected() -> None:
    # An empty SSD and a 1.2 % cap: two gold disks (0.58 % each there) fit, a third would not.
    snap, slo = three_tiers()
    moved = tuple(
        dataclasses.replace(d, datastore="sata") if d.vm.startswith("bronze") else d for d in snap.disks
    )
    result = run(dataclasses.replace(snap, disks=moved), dataclasses.replace(slo, utilisation_cap=0.012))
    assert [m.target for m in result.plan.moves] == ["ssd", "ssd"]
    assert 0.011 < result.pod("default").utilisation_after["ssd"] <= 0.012
    # No target can take any unit under a 0.1 % cap: nothing moves.
    assert not run(snap, dataclasses.replace(slo, utilisation_cap=0.001)).plan.moves


def test_met_groups_move_nothing() -> None:
    snap, slo = three_tiers(gold_on="ssd")
    result = run(snap, slo)
    assert not result.plan.moves
    assert result.plan.pods[0].stop == STOP_SLO_MET
    assert result.pod("default").damage_before == 0.0


def test_unreachable_group_says_by_how_much_and_does_not_thrash() -> None:
    snap, slo = three_tiers()
    # 0.05 ms is below the SSD's own service time: no placement meets it.
    hard = dataclasses.replace(slo, groups=(dataclasses.replace(slo.groups[0], drt_ms=0.05), *slo.groups[1:]))
    first = run(snap, hard)
    report = first.pod("default")
    assert len(report.unmet) == 1
    assert report.unmet[0].startswith("group gold misses its DRT of 0.05 ms by")
    assert "group gold misses" in first.plan.pods[0].stop_reason
    second = run(applied(snap, first), hard)
    assert not second.plan.moves
    assert second.plan.pods[0].stop == STOP_SLO_NO_GAIN
    assert "group gold misses its DRT of 0.05 ms" in second.plan.pods[0].stop_reason


def test_hard_constraints_hold() -> None:
    # The SSD is not visible from the disks' host: gold goes to FC instead (silver
    # may make room on SATA), never to the SSD.
    snap, slo = three_tiers()
    ssd = tier("ssd", "ssd", 4, hosts=frozenset({"esx-9"}))
    blind = dataclasses.replace(snap, datastores=(ssd, *snap.datastores[1:]))
    result = run(blind, slo)
    assert result.plan.moves
    assert all(m.target != "ssd" for m in result.plan.moves)
    assert {m.vm for m in result.plan.moves if m.target == "fc"} <= {f"gold{i}" for i in range(4)}


def test_fcfs_and_priority_queues_differ_only_in_waiting_order() -> None:
    snap, slo = three_tiers()
    fcfs = run(snap, slo, max_moves=0).pod("default")
    prio = run(snap, dataclasses.replace(slo, priority_queues=True), max_moves=0).pod("default")
    assert (fcfs.queue_model, prio.queue_model) == ("fcfs", "priority")
    assert fcfs.utilisation_before == prio.utilisation_before


# --- bad input -----------------------------------------------------------------------------------------


def fields(err: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [p.field for p in err.value.problems]


def test_drt_must_be_positive() -> None:
    snap, slo = three_tiers()
    bad = dataclasses.replace(slo, groups=(dataclasses.replace(slo.groups[0], drt_ms=0.0), *slo.groups[1:]))
    with pytest.raises(ValidationError) as err:
        recommend_slo(snap, BalancerParams(), bad, {})
    assert fields(err) == ["slo.groups[0].drt_ms"]


def test_tag_naming_no_group() -> None:
    snap, slo = three_tiers()
    with pytest.raises(ValidationError) as err:
        assign_groups(slo, snap, vm_tags={"bronze0": ["basil-slo/platinum"], "gold0": ["other/x"]})
    assert fields(err) == ["slo.vm_tags.bronze0"]
    assert "platinum" in str(err.value)


def test_disk_in_two_groups() -> None:
    snap, slo = three_tiers()
    with pytest.raises(ValidationError) as err:
        assign_groups(slo, snap, vm_tags={"bronze0": ["basil-slo/gold"]})
    assert fields(err) == ["slo.groups"]
    assert "bronze0/d is in two groups" in str(err.value)


def test_unknown_members_and_pools() -> None:
    snap, slo = three_tiers()
    extra = dataclasses.replace(slo.groups[0], vms=("nobody",), pools=("erp",))
    with pytest.raises(ValidationError) as err:
        assign_groups(dataclasses.replace(slo, groups=(extra, *slo.groups[1:])), snap, pool_vms={})
    assert fields(err) == ["slo.groups[0].vms[0]", "slo.groups[0].pools[0]"]


def test_tier_without_model_or_kind() -> None:
    snap, slo = three_tiers()
    unknown = dataclasses.replace(snap, datastores=(*snap.datastores[:2], tier("sata", None, None)))
    with pytest.raises(ValidationError) as err:
        run(unknown, slo)
    assert fields(err) == ["datastores[2].device_kind"]


def test_membership_naming_an_unknown_group() -> None:
    snap, slo = three_tiers()
    with pytest.raises(ValidationError) as err:
        recommend_slo(snap, BalancerParams(), slo, {"gold0/d": "platinum"})
    assert fields(err) == ["slo.membership.gold0/d"]


# --- properties on random tiered pods --------------------------------------------------------------


def random_pod(seed: int) -> tuple[Snapshot, SloParams]:
    rng = np.random.default_rng(seed)
    hosts = ("esx-1", "esx-2", "esx-3")
    stores = [
        Datastore(
            name=f"{kind}-{i}",
            capacity_gb=float(rng.choice([600.0, 1500.0, 4000.0])),
            free_gb=0.0,
            hosts=frozenset(hosts[: 2 + i % 2]),
            device_kind=kind,
            spindles=int(rng.integers(2, 12)),
        )
        for i, kind in enumerate(["ssd", "fc15k", "fc15k", "sata7k", "sata7k"])
    ]
    disks: list[Disk] = []
    members: dict[str, list[str]] = {"gold": [], "silver": [], "bronze": []}
    for v in range(int(rng.integers(12, 30))):
        vm = f"vm{v}"
        if v % 4 < 3:  # every fourth VM has no group
            members[("gold", "silver", "bronze")[v % 4]].append(vm)
        w = WorkloadParams(4.0, float(rng.choice([4.0, 8.0, 32.0])), float(rng.uniform(50, 100)), 100.0)
        disks.append(
            Disk(
                id=f"{vm}/d",
                vm=vm,
                datastore=stores[int(rng.integers(0, len(stores)))].name,
                size_gb=float(rng.choice([20.0, 60.0, 150.0])),
                hosts=frozenset({hosts[int(rng.integers(0, 2))]}),
                workload=w,
                iops=float(rng.lognormal(4.0, 0.8)),
            )
        )
    used = {s.name: sum(d.size_gb for d in disks if d.datastore == s.name) for s in stores}
    stores = [dataclasses.replace(s, capacity_gb=max(s.capacity_gb, used[s.name] * 1.5)) for s in stores]
    stores = [dataclasses.replace(s, free_gb=s.capacity_gb - used[s.name]) for s in stores]
    return Snapshot(datastores=tuple(stores), disks=tuple(disks)), groups(**members)


@pytest.mark.parametrize("seed", range(8), ids=lambda s: f"seed{s}")
def test_properties_of_a_round(seed: int) -> None:
    snap, slo = random_pod(seed)
    result = run(snap, slo, max_moves=4, max_gb=400.0)
    moves = result.plan.moves
    report = result.pod("default")
    # Within the budget, never worse, and each move's effect starts where the last one ended.
    assert len(moves) <= 4
    assert sum(m.size_gb for m in moves) <= 400.0 + 1e-9
    assert report.damage_after <= report.damage_before
    if moves:
        assert report.damage_after < report.damage_before
    damage = report.damage_before
    for m in moves:
        effect = result.effects[m.number]
        assert effect.damage_before == pytest.approx(damage)
        damage = effect.damage_after
    # Hard constraints hold move by move (hosts, space headroom), each unit moves once.
    params = BalancerParams()
    state = PlacementState(snap, resolve_models(snap, params), params)
    units = {frozenset(u.disks): u for u in build_units(snap, resolve_models(snap, params), params)}
    for m in moves:
        unit = units[frozenset(m.disks)]
        assert state.violations(unit, m.target, new_limit=False) == []
        state.apply(unit, m.source, m.target)
    assert len({m.vm for m in moves}) == len(moves)
    # The model is consistent: the next round starts from the damage this one predicted.
    again = run(applied(snap, result), slo, max_moves=4, max_gb=400.0).pod("default")
    assert again.damage_before == pytest.approx(report.damage_after)


def test_group_shares_halve_per_rank() -> None:
    _, slo = three_tiers()
    shares, ungrouped = group_shares(slo)
    assert shares == {"gold": 4000, "silver": 2000, "bronze": 1000}
    assert ungrouped == 500
    many = SloParams(groups=tuple(PriorityGroup(f"g{i}", float(i + 1)) for i in range(6)))
    assert list(group_shares(many)[0].values()) == [4000, 2000, 1000, 500, 250, 250]


def test_a_group_tag_of_another_category() -> None:
    snap, slo = three_tiers()
    custom = dataclasses.replace(slo.groups[2], vms=(), tag="tiers/cheap")
    params = dataclasses.replace(slo, groups=(*slo.groups[:2], custom))
    membership = assign_groups(params, snap, vm_tags={"bronze0": ["tiers/cheap"], "bronze1": ["tiers/other"]})
    assert membership["bronze0/d"] == "bronze"
    assert "bronze1/d" not in membership


# --- the apply-time check of a move ------------------------------------------------------------------


def test_damage_with_moves_agrees_with_the_round() -> None:
    snap, slo = three_tiers()
    result = run(snap, slo, max_moves=1)
    move = result.plan.moves[0]
    effect = result.effects[move.number]
    check = damage_with_moves(
        snap,
        BalancerParams(),
        slo,
        membership=assign_groups(slo, snap),
        pod="default",
        moves=[(move.disks, move.target)],
    )
    assert check.before == pytest.approx(effect.damage_before)
    assert check.after == pytest.approx(effect.damage_after)
    assert check.after < check.before
    assert set(check.calibration.values()) == {1.0}


def test_a_move_of_an_idle_disk_does_not_lower_the_damage() -> None:
    # The recommended gold disk went idle since: moving it changes nothing the model predicts.
    snap, slo = three_tiers()
    move = run(snap, slo, max_moves=1).plan.moves[0]
    idle = dataclasses.replace(
        snap,
        disks=tuple(dataclasses.replace(d, iops=0.0) if d.id in move.disks else d for d in snap.disks),
    )
    check = damage_with_moves(
        idle,
        BalancerParams(),
        slo,
        membership=assign_groups(slo, idle),
        pod="default",
        moves=[(move.disks, move.target)],
    )
    assert check.before > 0
    assert check.after == pytest.approx(check.before)


def test_damage_with_moves_uses_the_given_calibration() -> None:
    snap, slo = three_tiers()
    membership = assign_groups(slo, snap)
    plain = damage_with_moves(snap, BalancerParams(), slo, membership=membership, pod="default", moves=[])
    slower = damage_with_moves(
        snap,
        BalancerParams(),
        slo,
        membership=membership,
        pod="default",
        moves=[],
        calibration={"sata": 2.0},
    )
    assert slower.calibration["sata"] == 2.0
    assert slower.calibration["ssd"] == 1.0
    assert slower.before > plain.before  # gold on SATA, twice as slow
    assert plain.after == pytest.approx(plain.before)

"""What the device model is given besides samples: µs latency per interval, moves, copy windows."""

from __future__ import annotations

from datetime import UTC, datetime

from basil.app.modelling import (
    DatastoreDisks,
    copy_windows,
    device_samples,
    disk_placement,
    known_moves,
)
from basil.store.fits import DatastoreModel
from basil.store.samples import DevicePoints
from basil.vcenter.relocations import Relocation
from basil.vcenter.types import Inventory, VirtualDisk, VirtualMachine

T0 = 1_800_000_000


def at(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def points(n: int, iops: float = 400.0) -> DevicePoints:
    ts = tuple(T0 + 20 * i for i in range(n))
    return DevicePoints(
        ts, (8.0,) * n, (1.0,) * n, (iops,) * n, (8.0,) * n, (1.0,) * n, (0.4,) * n, (50.0,) * n
    )


def test_an_interval_gets_the_disks_microseconds_only_when_they_account_for_its_iops() -> None:
    micro = {
        T0: (400.0, 612.0, 400.0),  # all the datastore's read IOPS, all in µs
        T0 + 20: (395.0, 612.0, 395.0),  # within 10 % + 2 IOPS
        T0 + 40: (250.0, 612.0, 250.0),  # a disk is missing (moved in or out, or unknown)
        T0 + 60: (400.0, 612.0, 300.0),  # one disk has no µs counter
    }
    reads = [s for s in device_samples(points(5), micro) if s.op == "read"]
    assert [s.latency_us for s in reads] == [612.0, 612.0, None, None, None]
    writes = [s for s in device_samples(points(5), micro) if s.op == "write"]
    assert [(s.iops, s.latency_ms) for s in writes] == [(50.0, 0.4)] * 5


def vm(moid: str, *disks: tuple[str, str]) -> VirtualMachine:
    return VirtualMachine(
        moid,
        moid,
        "dc",
        "host-1",
        "poweredOn",
        disks=tuple(
            VirtualDisk(2000 + i, inst, inst, 1 << 30, ds, f"[{ds}] {moid}.vmdk")
            for i, (inst, ds) in enumerate(disks)
        ),
    )


def model(datastore: str, **details: object) -> DatastoreModel:
    now = at(T0)
    return DatastoreModel("vc", datastore, now, now, now, 1.0, 1.0, 0.0, 0.9, 10, 0, "ok", dict(details))


def test_another_s_move_is_learned_from_where_the_last_fit_saw_the_disk() -> None:
    inv = Inventory("vc", at(T0), vms={"vm-1": vm("vm-1", ("scsi0:0", "ds-sys"), ("scsi0:1", "ds-ssd"))})
    where = {("vm-1", "scsi0:0"): "ds-sys", ("vm-1", "scsi0:1"): "ds-ssd"}
    done = Relocation("task-9", "vm-1", at(T0 + 100), at(T0 + 1100), "success")
    running = Relocation("task-10", "vm-2", at(T0 + 1000), None, "running")
    before = {
        ("vc", "ds-sata"): model("ds-sata", disks=["vm-1/scsi0:1", "vm-3/scsi0:1"]),
        ("vc", "ds-sys"): model("ds-sys", disks=["vm-1/scsi0:0"]),
    }
    moves = known_moves({}, before, [done, running], where)
    assert moves == {"task-9": ("scsi0:1", "ds-sata", "ds-ssd")}
    placement = disk_placement(inv, [done, running], moves)
    # The moved disk counts on the SSD after the move and on SATA until it; the other stays put.
    assert placement["ds-ssd"] == DatastoreDisks((), (("vm-1", "scsi0:1", T0 + 1120, 2**62),))
    assert placement["ds-sata"].timed == (("vm-1", "scsi0:1", 0, T0 + 1101),)
    assert placement["ds-sata"].moves_out == {"task-9": ("vm-1", "scsi0:1", "ds-ssd")}
    assert placement["ds-sys"] == DatastoreDisks((("vm-1", "scsi0:0"),))
    assert placement["ds-ssd"].current() == ["vm-1/scsi0:1"]
    # The next fit still knows the source from what this one learned (kept as moves_out).
    later = known_moves(
        {},
        {("vc", "ds-sata"): model("ds-sata", moves_out={"task-9": ["vm-1", "scsi0:1", "ds-ssd"]})},
        [done],
        where,
    )
    assert later == moves
    windows = copy_windows(
        [done, running], moves, {"vm-1": {"ds-sys", "ds-ssd"}, "vm-2": {"ds-fc"}}, T0 + 2000
    )
    assert [(sorted(w.datastores), w.start, w.end) for w in windows] == [
        (["ds-sata", "ds-ssd", "ds-sys"], T0 + 100, T0 + 1100),
        (["ds-fc"], T0 + 1000, T0 + 2000),  # still copying: up to now
    ]


def test_basil_s_own_move_names_its_disk_and_both_ends() -> None:
    inv = Inventory("vc", at(T0), vms={"vm-1": vm("vm-1", ("scsi0:0", "ds-sys"), ("scsi0:1", "ds-fc"))})
    where = {("vm-1", "scsi0:0"): "ds-sys", ("vm-1", "scsi0:1"): "ds-fc"}
    done = Relocation("task-1", "vm-1", at(T0), at(T0 + 400), "success")
    moves = known_moves(
        {"task-1": ("scsi0:1", "ds-sata", "ds-fc"), "task-0": ("scsi0:1", "x", "y")}, {}, [done], where
    )
    assert moves == {"task-1": ("scsi0:1", "ds-sata", "ds-fc")}  # task-0 is no longer in vCenter's list
    placement = disk_placement(inv, [done], moves)
    assert placement["ds-sys"].disks == (("vm-1", "scsi0:0"),)  # not moved: counts all along
    assert placement["ds-fc"].timed == (("vm-1", "scsi0:1", T0 + 420, 2**62),)


def test_an_unknown_move_treats_all_the_vm_s_disks_as_moved_in() -> None:
    inv = Inventory("vc", at(T0), vms={"vm-1": vm("vm-1", ("scsi0:0", "ds-sys"), ("scsi0:1", "ds-fc"))})
    done = Relocation("task-5", "vm-1", at(T0), at(T0 + 400), "success")
    placement = disk_placement(inv, [done], {})
    assert placement["ds-sys"].timed == (("vm-1", "scsi0:0", T0 + 420, 2**62),)
    assert placement["ds-fc"].timed == (("vm-1", "scsi0:1", T0 + 420, 2**62),)

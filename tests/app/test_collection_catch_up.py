"""The service catches a backlog up into the store chunk by chunk: after an outage of an hour, after a
store failure half-way, and after a restart, every 20 s sample is stored once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete, func, select

from basil.app import Service, collection, vcenters
from basil.store.models import (
    LEVEL_5MIN,
    Disk,
    DiskRollup,
    DiskSample,
    HostDatastore,
    HostDatastoreSample,
    RollupState,
)
from basil.vcenter.perf import CollectorParams, PerfCollector
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

HOUR = 180  # 20 s intervals
WINDOW = CollectorParams().window_samples  # the service's collector runs on the defaults


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.2.yaml", speed=0) as lab:
        yield lab


@pytest.fixture
def paused(lab: LabProcess) -> LabProcess:
    lab.control("POST", "reset")
    lab.set_speed(0)
    lab.step(2)
    return lab


def collect(svc: Service) -> dict[str, Any]:
    run = svc.run_job("collect")
    assert run["outcome"] == "succeeded", run
    (details,) = run["details"]["vcenters"]
    return dict(details)


def stored_series(svc: Service) -> dict[tuple[str, str], list[int]]:
    """Every stored raw sample time, per disk and per (host, datastore)."""
    out: dict[tuple[str, str], list[int]] = {}
    with svc.store.read_session() as session:
        rows = session.execute(
            select(Disk.vm, Disk.instance, DiskSample.ts).join(Disk, Disk.id == DiskSample.disk_id)
        ).all()
        rows += session.execute(
            select(HostDatastore.host, HostDatastore.datastore, HostDatastoreSample.ts).join(
                HostDatastore, HostDatastore.id == HostDatastoreSample.hd_id
            )
        ).all()
    for a, b, ts in rows:
        out.setdefault((a, b), []).append(int(ts))
    return {k: sorted(v) for k, v in out.items()}


def assert_contiguous(svc: Service, samples: int) -> None:
    """Every series has *samples* samples, 20 s apart, ending at the newest sample: no gap, no repeat."""
    series = stored_series(svc)
    assert series
    newest = max(t for times in series.values() for t in times)
    for key, times in series.items():
        assert times == list(range(newest - 20 * (samples - 1), newest + 1, 20)), (key, len(times))


def test_an_hour_of_outage_is_stored_chunk_by_chunk(paused: LabProcess, make_service: ServiceFactory) -> None:
    svc = make_service(paused)
    first = collect(svc)
    assert first["rounds"] == 1
    paused.step(HOUR)
    caught = collect(svc)
    assert caught["errors"] == []
    assert caught["behind"] == 0
    # An hour is a few windows (of 20 minutes by default), each round stored on its own.
    assert caught["rounds"] == HOUR // WINDOW
    assert caught["chunks"] == caught["rounds"]
    assert caught["duplicates"] == 0
    assert caught["incomplete"] == 0
    assert caught["disk_samples"] == HOUR * first["disk_samples"]
    assert caught["stored"] == caught["disk_samples"] + caught["host_samples"]
    assert_contiguous(svc, HOUR + 1)
    assert svc.links["lab"].last_collection is not None
    assert svc.links["lab"].last_collection.isoformat() == caught["latest"]


def test_a_catch_up_in_many_chunks_pauses_between_them_and_stores_every_sample(
    paused: LabProcess, make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks smaller than a round (as the default size makes them on a large vCenter): each stored in
    its own transaction, with a pause between two of one cycle, and every sample stored once."""
    monkeypatch.setattr(
        vcenters, "PerfCollector", lambda conn: PerfCollector(conn, CollectorParams(chunk_samples=100))
    )
    pauses: list[float] = []
    monkeypatch.setattr(collection, "pause_between_chunks", pauses.append)
    svc = make_service(paused)
    first = collect(svc)
    assert first["chunks"] == 1
    assert pauses == []  # a regular cycle is one chunk: no pause
    paused.step(HOUR)
    caught = collect(svc)
    assert caught["errors"] == []
    assert caught["rounds"] == HOUR // WINDOW
    assert caught["chunks"] > 2 * caught["rounds"]
    assert pauses == [collection.CHUNK_PAUSE_S] * (caught["chunks"] - 1)
    assert caught["duplicates"] == 0
    assert caught["disk_samples"] == HOUR * first["disk_samples"]
    assert caught["stored"] == caught["disk_samples"] + caught["host_samples"]
    assert_contiguous(svc, HOUR + 1)


def test_a_store_failure_half_way_loses_nothing(
    paused: LabProcess, make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = make_service(paused)
    collect(svc)
    paused.step(HOUR)
    calls = 0
    record = collection.record_disk_samples

    def fails_on_the_second_chunk(*args: Any, **kw: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("disk full")
        return record(*args, **kw)

    monkeypatch.setattr(collection, "record_disk_samples", fails_on_the_second_chunk)
    run = svc.run_job("collect")
    assert run["outcome"] == "failed"
    assert "disk full" in run["message"]
    # One chunk (the first round) made it to the store: the first window of the hour.
    assert {len(t) for t in stored_series(svc).values()} == {1 + WINDOW}
    monkeypatch.undo()
    again = collect(svc)
    assert again["errors"] == []
    assert again["duplicates"] == 0  # nothing already stored was fetched again
    assert again["rounds"] == HOUR // WINDOW - 1
    assert_contiguous(svc, HOUR + 1)


def test_a_restarted_service_goes_on_after_its_stored_samples(
    paused: LabProcess, make_service: ServiceFactory
) -> None:
    svc = make_service(paused)
    collect(svc)
    paused.step(5)
    collect(svc)
    svc.shutdown()
    down = WINDOW + 40
    paused.step(down)  # the service is down for a window and 40 intervals
    restarted = make_service(paused)  # same store
    caught = collect(restarted)
    assert caught["duplicates"] == 0
    assert caught["rounds"] == 2  # a closed window, then the last 40 intervals
    assert_contiguous(restarted, 1 + 5 + down)


def test_summaries_wait_for_a_backlog_being_caught_up(
    paused: LabProcess, make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A VM the store has no sample of is first seen at vCenter's newest interval while the others
    catch up an outage window by window, so a roll-up between two chunks passes samples still to
    come: the store merges them into their 5-minute buckets when they arrive, none is left out."""
    svc = make_service(paused)
    collect(svc)
    paused.step(5)
    collect(svc)
    svc.shutdown()
    with svc.store.session() as session:  # one VM's history is gone: it is new to the restarted service
        vm = session.execute(select(Disk.vm).order_by(Disk.vm)).scalars().first()
        ids = session.execute(select(Disk.id).where(Disk.vm == vm)).scalars().all()
        session.execute(delete(DiskSample).where(DiskSample.disk_id.in_(ids)))
    paused.step(HOUR - 20)
    restarted = make_service(paused)
    marks: list[int | None] = []
    stored = restarted._chunk_stored

    def roll_up_between_chunks(name: str, link: Any) -> Any:
        note = stored(name, link)

        def then_roll_up(chunk: Any) -> None:
            note(chunk)
            if not marks:  # after the first chunk: the new VM's newest sample and the first window
                run = restarted.run_job("maintenance")
                assert run["outcome"] == "succeeded", run
                marks.append(rollup_mark(restarted))

        return then_roll_up

    monkeypatch.setattr(restarted, "_chunk_stored", roll_up_between_chunks)
    caught = collect(restarted)
    monkeypatch.undo()
    assert caught["rounds"] > 1
    assert marks, "no roll-up ran between the chunks"
    assert restarted.run_job("maintenance")["outcome"] == "succeeded"
    mark = rollup_mark(restarted)
    assert mark is not None
    with restarted.store.read_session() as session:
        raw = dict(
            session.execute(
                select(DiskSample.disk_id, func.count())
                .where(DiskSample.ts < mark)
                .group_by(DiskSample.disk_id)
            ).all()
        )
        summarised = dict(
            session.execute(
                select(DiskRollup.disk_id, func.sum(DiskRollup.n))
                .where(DiskRollup.level == LEVEL_5MIN, DiskRollup.bucket < mark)
                .group_by(DiskRollup.disk_id)
            ).all()
        )
    assert raw, "nothing below the roll-up mark"
    assert {k: int(v) for k, v in summarised.items()} == raw


def rollup_mark(svc: Service) -> int | None:
    """The disk samples' 5-minute roll-up mark: buckets below it are summarised."""
    with svc.store.read_session() as session:
        return session.execute(
            select(RollupState.watermark).where(RollupState.kind == "disk", RollupState.level == LEVEL_5MIN)
        ).scalar()

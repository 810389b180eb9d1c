"""The store's write generations: a table's count moves after each committed transaction that wrote it
(through the unit of work or a bulk statement), and never for a rollback or a read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from basil.store import Store, fits
from basil.store.job_runs import finish_run, prune_runs, start_run
from basil.store.plans import MoveSpec, approve_plan, create_plan, list_plans
from basil.store.samples import DiskRef

NOW = datetime(2024, 6, 8, 2, 0, tzinfo=UTC)


def _spec() -> MoveSpec:
    return MoveSpec("vc", "vm-1", 2000, "ds-1", "ds-2", 2**30, vm_name="web", instance="scsi0:0")


def test_a_commit_moves_the_generation_of_the_tables_it_wrote_after_the_commit(store: Store) -> None:
    before = store.generation("plans", "plan_moves", "job_runs")
    with store.session() as session:
        plan = create_plan(session, "gold", "vc", [_spec()], created_by="alice", now=NOW)
        assert store.generation("plans", "plan_moves") == before[:2], "counted before the commit"
    assert store.generation("plans", "plan_moves", "job_runs") == (before[0] + 1, before[1] + 1, before[2])
    with store.session() as session:
        approve_plan(session, plan.id, "bob", now=NOW)
    assert store.generation("plans")[0] == before[0] + 2


def test_bulk_statements_count_when_they_change_rows(store: Store) -> None:
    with store.session() as session:
        run = start_run(session, "collect", now=NOW - timedelta(days=30))
    counted = store.generation("job_runs")[0]
    with store.session() as session:
        assert prune_runs(session, NOW) == 0  # the run is not finished: nothing to prune
    assert store.generation("job_runs")[0] == counted, "a statement that changed no row is not a change"
    with store.session() as session:
        finish_run(session, run, "succeeded", now=NOW - timedelta(days=30))
    with store.session() as session:
        assert prune_runs(session, NOW) == 1
    assert store.generation("job_runs")[0] == counted + 2


def test_rollbacks_and_reads_leave_generations_alone(store: Store) -> None:
    before = store.generation("plans", "plan_moves")

    def abandoned() -> None:
        with store.session() as session:
            create_plan(session, "gold", "vc", [_spec()], created_by="alice", now=NOW)
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError):
        abandoned()
    with store.read_session() as session:
        assert list_plans(session) == []
    with store.session() as session:
        list_plans(session)  # a write session that only reads
    assert store.generation("plans", "plan_moves") == before


def test_an_executemany_insert_counts(store: Store) -> None:
    disk = DiskRef("vc", "vm-1", "scsi0:0")
    model = fits.DiskModel(disk, NOW, NOW - timedelta(days=1), NOW, 2.0, 8.0, 70.0, 50.0, 12.0, 100, (), {})
    before = store.generation("disk_models", "datastore_models")
    with store.session() as session:
        fits.save_disk_models(session, [model, model])
    assert store.generation("disk_models", "datastore_models") == (before[0] + 1, before[1])

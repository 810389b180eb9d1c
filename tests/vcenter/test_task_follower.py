"""Following a vCenter task through faults: the task's own state decides, not the collector watching it.

The lab is paused, so a Storage vMotion stays mid-copy until the test steps time on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from basil.vcenter.actions import RelocateDisk, TaskNotFollowedError, TaskOutcome
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.tasks import task_summary
from tests.lab_vcenter import LabFactory

from .conftest import SCENARIO
from .labvc import LabVC

pytestmark = pytest.mark.lab

COPY_STEPS = 9  # 30 GB at the lab's 200 MB/s: 150 s of simulated time


@pytest.fixture(scope="module")
def paused_lab(lab_factory: LabFactory) -> Iterator[LabVC]:
    lab = LabVC(lab_factory(SCENARIO, speed=0, tls=True))
    yield lab
    lab.stop()


@pytest.fixture
def lab(paused_lab: LabVC) -> Iterator[LabVC]:
    paused_lab.clear_faults()
    paused_lab.reset()
    paused_lab.pause()
    yield paused_lab
    paused_lab.clear_faults()


def _start_move(
    conn: VCenterConnection, stop: threading.Event | None = None
) -> tuple[RelocateDisk, Future[TaskOutcome], list[str]]:
    """Relocate web-1's scsi0:1 to ds-nfs in a thread; returns once vCenter took the task."""
    inv = fetch_inventory(conn, with_tags=False)
    taken: list[str] = []
    got = threading.Event()

    def on_task(task: str) -> None:
        taken.append(task)
        got.set()

    action = RelocateDisk(
        inv.vm_by_name("web-1").moid,
        "scsi0:1",
        inv.datastore_by_name("ds-nfs").moid,
        on_task=on_task,
        stop=stop,
    )
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(action.execute, conn)
    pool.shutdown(wait=False)
    assert got.wait(30), "vCenter did not take the relocation"
    return action, future, taken


def test_a_followed_task_outlives_a_session_loss(lab: LabVC) -> None:
    with VCenterConnection(lab.connection_params()) as conn:
        action, future, taken = _start_move(conn)
        lab.session_loss()  # the follower's collector ends with the session
        lab.step(COPY_STEPS)
        outcome = future.result(timeout=60)
        assert outcome.state == "success"
        assert outcome.task == taken[0]
        assert action.postcheck(conn) == []


def test_stopping_while_vcenter_hangs_gives_up_the_follow_not_the_task(lab: LabVC) -> None:
    stop = threading.Event()
    with VCenterConnection(lab.connection_params(timeout_s=1.0, retries=0)) as conn:
        _action, future, taken = _start_move(conn, stop)
        lab.set_latency_ms(3000)  # every call now outlasts the 1 s call timeout
        stop.set()
        with pytest.raises(TaskNotFollowedError) as caught:
            future.result(timeout=60)
        assert caught.value.task == taken[0]
        lab.set_latency_ms(0)
        summary = task_summary(conn, taken[0])
        assert summary is not None
        assert summary.active, summary  # vCenter goes on copying
        lab.step(COPY_STEPS)
        summary = task_summary(conn, taken[0])
        assert summary is not None
        assert summary.state == "success"

"""The read-model cache: an entry serves only the basis it was built on (inventory objects by identity,
generations by value), concurrent askers build once, and a failed build leaves nothing behind."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from datetime import UTC, datetime
from typing import Any

import pytest

from basil.app.view_cache import CONFIG, ROUNDS, SAMPLES, Basis, Generations, ReadCache, Refresh
from basil.vcenter.types import Inventory


def inventory(version: int = 1) -> Inventory:
    return Inventory(server="vc", fetched_at=datetime(2024, 6, 1, tzinfo=UTC), version=version)


class Builds:
    """A build function that counts its calls and returns a fresh object each time."""

    def __init__(self, pause_s: float = 0.0) -> None:
        self.calls = 0
        self.pause_s = pause_s
        self.lock = threading.Lock()

    def __call__(self) -> dict[str, int]:
        with self.lock:
            self.calls += 1
            n = self.calls
        time.sleep(self.pause_s)
        return {"build": n}


def test_the_same_basis_is_served_from_the_cache() -> None:
    cache, build, inv = ReadCache(), Builds(), inventory()
    first = cache.get("pods", Basis((inv,), (1, 2)), build)
    assert cache.get("pods", Basis((inv,), (1, 2)), build) is first
    assert (build.calls, cache.hits, cache.misses) == (1, 1, 1)


@pytest.mark.parametrize(
    ("changed", "generations"),
    [
        pytest.param(False, (1, 3), id="a-generation-moved"),
        pytest.param(True, (1, 2), id="a-new-inventory-object"),
    ],
)
def test_a_moved_basis_rebuilds(changed: bool, generations: tuple[int, ...]) -> None:
    cache, build, inv = ReadCache(), Builds(), inventory()
    first = cache.get("pods", Basis((inv,), (1, 2)), build)
    # An equal but distinct inventory is a new one: the watcher only makes a new object for a change.
    now = inventory() if changed else inv
    second = cache.get("pods", Basis((now,), generations), build)
    assert second is not first
    assert second == {"build": 2}
    assert cache.get("pods", Basis((now,), generations), build) is second


def test_an_entry_does_not_keep_its_inventory_alive() -> None:
    cache, build = ReadCache(), Builds()
    inv: Inventory | None = inventory()
    cache.get("pods", Basis((inv,), ()), build)
    gone = weakref.ref(inv)
    inv = None
    gc.collect()
    assert gone() is None
    cache.get("pods", Basis((inventory(),), ()), build)  # whatever its address, a new inventory
    assert build.calls == 2


def test_keys_are_independent() -> None:
    cache, build, inv = ReadCache(), Builds(), inventory()
    a = cache.get(("pod", "a"), Basis((inv,), (1,)), build)
    b = cache.get(("pod", "b"), Basis((inv,), (1,)), build)
    assert a != b
    assert cache.get(("pod", "a"), Basis((inv,), (1,)), build) is a


def test_a_failed_build_stores_nothing() -> None:
    cache, inv = ReadCache(), inventory()

    def broken() -> dict[str, int]:
        raise RuntimeError("vCenter went away")

    with pytest.raises(RuntimeError):
        cache.get("pods", Basis((inv,), (1,)), broken)
    assert len(cache) == 0
    assert cache.get("pods", Basis((inv,), (1,)), Builds()) == {"build": 1}


def test_concurrent_askers_of_one_key_build_once() -> None:
    cache, build, inv = ReadCache(), Builds(pause_s=0.2), inventory()
    basis = Basis((inv,), (7,))
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("pods", basis, build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert build.calls == 1
    assert len(got) == 8
    assert all(g is got[0] for g in got)


def test_least_recently_used_entries_are_evicted() -> None:
    cache, build, inv = ReadCache(max_entries=2), Builds(), inventory()
    basis = Basis((inv,), ())
    a = cache.get("a", basis, build)
    cache.get("b", basis, build)
    assert cache.get("a", basis, build) is a  # a is now the most recently used
    cache.get("c", basis, build)  # evicts b
    assert len(cache) == 2
    assert cache.get("a", basis, build) is a
    assert cache.get("b", basis, build) == {"build": 4}


def test_generations_count_each_state_separately() -> None:
    gens = Generations()
    assert gens.get(SAMPLES, ROUNDS, CONFIG) == (0, 0, 0)
    gens.bump(ROUNDS)
    gens.bump(ROUNDS, CONFIG)
    assert gens.get(SAMPLES, ROUNDS, CONFIG) == (0, 2, 1)
    with pytest.raises(KeyError):
        gens.bump("typo")


def _refresh(basis: Basis, build: Any, max_lag_s: float = 30.0) -> Refresh:
    return Refresh(lambda: basis, build, max_lag_s)


def _refresh_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "basil-refresh"]


def _wait_idle(cache: ReadCache) -> None:
    for _ in range(600):
        if not cache.refreshing():
            return
        time.sleep(0.01)
    raise AssertionError("the refresher did not end")


def test_a_lagging_entry_is_served_at_once_and_swapped_when_built_again() -> None:
    cache, inv = ReadCache(clock=lambda: 0.0), inventory()
    first = cache.get("pods", Basis((inv,), (1,), (5,)), Builds())
    release, started = threading.Event(), threading.Event()

    def slow_build() -> dict[str, int]:
        started.set()
        assert release.wait(30)
        return {"build": 2}

    moved = Basis((inv,), (1,), (6,))  # only the lagging part moved (a collection chunk)
    assert cache.get("pods", moved, Builds(), _refresh(moved, slow_build)) is first
    assert started.wait(30)  # the rebuild runs in the background, and meanwhile...
    assert cache.get("pods", moved, Builds(), _refresh(moved, slow_build)) is first  # ...no one waits for it
    assert cache.refreshing()
    release.set()
    _wait_idle(cache)
    assert cache.get("pods", moved, Builds()) == {"build": 2}
    assert (cache.lagging_hits, cache.refreshes) == (2, 1)  # built once for both readers


def test_a_write_is_never_served_lagging() -> None:
    cache, inv = ReadCache(clock=lambda: 0.0), inventory()
    cache.get("pods", Basis((inv,), (1,), (5,)), Builds())
    written = Basis((inv,), (2,), (6,))  # the strict part moved too (a plan written)
    build = Builds()
    assert cache.get("pods", written, build, _refresh(written, Builds())) == {"build": 1}
    assert (build.calls, cache.lagging_hits) == (1, 0)
    assert not cache.refreshing()


def test_an_entry_lagging_longer_than_allowed_is_built_by_its_reader() -> None:
    now = [0.0]
    cache, inv = ReadCache(clock=lambda: now[0]), inventory()
    cache.get("pods", Basis((inv,), (1,), (5,)), Builds())
    now[0] = 30.5  # built 30.5 s ago: older than the 30 s it may lag
    moved, build = Basis((inv,), (1,), (6,)), Builds()
    assert cache.get("pods", moved, build, _refresh(moved, Builds(), max_lag_s=30.0)) == {"build": 1}
    assert (build.calls, cache.lagging_hits) == (1, 0)


def test_background_rebuilds_are_bounded_and_the_refresher_ends() -> None:
    cache, inv = ReadCache(clock=lambda: 0.0, max_pending=3), inventory()
    for n in range(10):
        cache.get(f"ds-{n}", Basis((inv,), (1,), (5,)), Builds())
    release = threading.Event()
    builds = Builds()

    def held_build() -> dict[str, int]:
        assert release.wait(30)
        return builds()

    moved = Basis((inv,), (1,), (6,))
    for _ in range(3):  # many readers of many keys while the first rebuild is held
        for n in range(10):
            cache.get(f"ds-{n}", moved, Builds(), _refresh(moved, held_build))
    assert len(_refresh_threads()) == 1
    release.set()
    _wait_idle(cache)
    # The first key taken plus at most max_pending waiting, each once; the other keys wait for a later reader.
    assert 3 <= builds.calls <= 4
    assert cache.refreshes == builds.calls
    for _ in range(100):  # the thread ends once there is no work
        if not _refresh_threads():
            break
        time.sleep(0.01)
    assert _refresh_threads() == []


def test_a_failed_rebuild_keeps_the_lagging_entry(caplog: pytest.LogCaptureFixture) -> None:
    cache, inv = ReadCache(clock=lambda: 0.0), inventory()
    first = cache.get("pods", Basis((inv,), (1,), (5,)), Builds())

    def broken() -> dict[str, int]:
        raise RuntimeError("store gone")

    moved = Basis((inv,), (1,), (6,))
    assert cache.get("pods", moved, Builds(), _refresh(moved, broken)) is first
    _wait_idle(cache)
    assert "refreshing the cached 'pods' failed" in caplog.text
    assert cache.get("pods", moved, Builds(), _refresh(moved, broken)) is first  # still within its lag
    _wait_idle(cache)
    assert cache.refreshes == 0

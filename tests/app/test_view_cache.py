"""The read-model cache: an entry serves only the basis it was built on (inventory objects by identity,
generations by value), concurrent askers build once, and a failed build leaves nothing behind."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from datetime import UTC, datetime

import pytest

from basil.app.view_cache import CONFIG, ROUNDS, SAMPLES, Basis, Generations, ReadCache
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

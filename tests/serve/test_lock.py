"""One ``basil serve`` per store: a second one is refused before it could start a scheduler."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from basil.errors import ConflictError
from basil.serve.lock import ServeLock
from basil.store import Store


def test_second_lock_on_a_sqlite_store_is_refused(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    with ServeLock(store):
        # Another process, as a second `basil serve` would be.
        code = (
            "import sys; from basil.store import Store; from basil.serve.lock import ServeLock\n"
            f"ServeLock(Store({str(store.url)!r})).acquire()\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode != 0
        assert "another basil serve" in result.stderr
        assert "only one scheduler" in result.stderr
    # Released: the next one gets it.
    with ServeLock(store):
        pass


def test_lock_names_the_holder(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    with ServeLock(store) as lock:
        assert lock.path is not None
        assert lock.path.read_text() == str(os.getpid())


def test_second_lock_is_refused_on_both_backends(empty_store_url: str) -> None:
    stores = [Store(empty_store_url) for _ in range(3)]
    try:
        first = ServeLock(stores[0])
        first.acquire()
        try:
            with pytest.raises(ConflictError, match="another basil serve"):
                ServeLock(stores[1]).acquire()
        finally:
            first.release()
        second = ServeLock(stores[2])
        second.acquire()
        second.release()
    finally:
        for store in stores:
            store.dispose()

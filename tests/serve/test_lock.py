"""One ``basil serve`` per store: a second one is refused before it could start a scheduler."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import make_url

from basil.errors import ConflictError
from basil.serve.lock import ServeLock, sqlite_file
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


def _spellings(tmp_path: Path) -> list[str]:
    """Every way a URL can name tmp_path/real/b.db: the path, a symlink to it, a symlinked directory,
    file: URIs (relative to the working directory, absolute, percent-escaped)."""
    real = tmp_path / "real" / "b.db"
    real.parent.mkdir()
    real.touch()
    (tmp_path / "alias.db").symlink_to(real)
    (tmp_path / "dir-link").symlink_to(real.parent, target_is_directory=True)
    return [
        f"sqlite:///{real}",
        f"sqlite:///{tmp_path / 'alias.db'}",
        f"sqlite:///{tmp_path / 'dir-link' / 'b.db'}",
        "sqlite:///file:real/b.db?uri=true",
        f"sqlite:///file:{real}?uri=true&mode=rwc",
        f"sqlite:///file://{real}?uri=true",
        f"sqlite:///file:{str(real).replace('/b.db', '/%62.db')}?uri=true",
    ]


def test_every_spelling_of_one_sqlite_file_takes_the_same_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    urls = _spellings(tmp_path)
    for holder_url in urls:
        holder = Store(holder_url)
        try:
            with ServeLock(holder) as held:
                assert held.path == (tmp_path / "real" / "b.db.serve.lock")
                for other_url in urls:
                    other = Store(other_url)
                    try:
                        with pytest.raises(ConflictError, match="another basil serve"):
                            ServeLock(other).acquire()
                    finally:
                        other.dispose()
        finally:
            holder.dispose()


def test_in_memory_databases_take_no_lock() -> None:
    for url in ("sqlite://", "sqlite:///:memory:", "sqlite:///file::memory:?uri=true",
                "sqlite:///file:mem1?mode=memory&uri=true"):  # fmt: skip
        assert sqlite_file(make_url(url)) is None
    assert sqlite_file(make_url("sqlite:///file:/srv/b.db?uri=true")) == Path("/srv/b.db")

"""The store implementations the store contract suite (`tests/contract/test_store_contract.py`) runs against.

A factory opens a handle on a backing store named by a location (for SQLite: a file). Opening the same location
twice gives two independent handles, as two processes would have; `tests.support.storage_worker` opens one in a
real second process. A new implementation (PostgreSQL) adds a factory here and must pass the suite unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bearagent.ports import RunStorage
from bearagent.store.sqlite import SqliteEventStore


@dataclass(frozen=True, slots=True)
class StorageFactory:
    name: str
    open: Callable[[str], RunStorage]
    close: Callable[[RunStorage], None]
    location: Callable[[Path], str]
    """A fresh, empty backing store for one test, from the test's temporary directory."""


def _close_sqlite(storage: RunStorage) -> None:
    assert isinstance(storage, SqliteEventStore)
    storage.close()


FACTORIES: dict[str, StorageFactory] = {
    "sqlite": StorageFactory(
        name="sqlite",
        open=lambda location: SqliteEventStore(location, busy_timeout_ms=30_000),
        close=_close_sqlite,
        location=lambda tmp: str(tmp / ".bearagent" / "state.db"),
    ),
}

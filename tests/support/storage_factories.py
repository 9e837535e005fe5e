"""The store implementations the store contract suite (`tests/contract/test_store_contract.py`) runs against.

A factory opens a handle on a backing store named by a location (for SQLite: a file; for PostgreSQL: the DSN of a
database). Opening the same location twice gives two independent handles, as two processes would have;
`tests.support.storage_worker` opens one in a real second process. A new implementation adds a factory here and
must pass the suite unchanged.

`location` makes a fresh, empty backing store for one test. PostgreSQL's is a new database in the test session's
throwaway cluster (`tests/support/postgres_cluster.py`, started on first use); where the server binaries are
missing it skips the test with a reason naming the package to install (in CI it fails: there it must run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bearagent.ports import RunStorage
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.sqlite import SqliteEventStore
from tests.support import postgres_cluster


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


def _close_postgres(storage: RunStorage) -> None:
    assert isinstance(storage, PostgresRunStorage)
    storage.close()


def _postgres_database(_tmp: Path) -> str:
    postgres_cluster.require()
    return postgres_cluster.new_database()


FACTORIES: dict[str, StorageFactory] = {
    "sqlite": StorageFactory(
        name="sqlite",
        open=lambda location: SqliteEventStore(location, busy_timeout_ms=30_000),
        close=_close_sqlite,
        location=lambda tmp: str(tmp / ".bearagent" / "state.db"),
    ),
    "postgres": StorageFactory(
        name="postgres",
        open=lambda location: PostgresRunStorage(location),
        close=_close_postgres,
        location=_postgres_database,
    ),
}

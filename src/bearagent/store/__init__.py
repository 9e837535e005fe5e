"""EventStore adapters. `SqliteEventStore` is the default (one embedded SQLite file per workspace).

`SqliteEventStore` is imported on first access: the package is also the parent of light modules that loading a
workspace's config reads (`store.postgres.naming`, `store.errors`), and importing it must not import the SQLite
store, its reads and `asyncio` for commands that never open a store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bearagent.store.errors import StoreError

if TYPE_CHECKING:
    from bearagent.store.sqlite import SqliteEventStore

__all__ = ["SqliteEventStore", "StoreError"]


def __getattr__(name: str) -> object:
    if name == "SqliteEventStore":
        from bearagent.store.sqlite import SqliteEventStore

        return SqliteEventStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

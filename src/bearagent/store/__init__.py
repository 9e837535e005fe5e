"""EventStore adapters. `SqliteEventStore` is the default (one embedded SQLite file per workspace)."""

from bearagent.store.errors import StoreError
from bearagent.store.sqlite import SqliteEventStore

__all__ = ["SqliteEventStore", "StoreError"]

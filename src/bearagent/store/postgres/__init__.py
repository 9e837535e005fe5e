"""The PostgreSQL store (issue 20): the event log, projections, sessions, leases and session locks of BearAgent in
one schema of a PostgreSQL database, shared across processes and hosts. See docs/store.md, "PostgreSQL".

`PostgresRunStorage` is imported on first use: psycopg's import is not paid by a process that stores in SQLite."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bearagent.store.postgres.storage import PostgresRunStorage


def __getattr__(name: str) -> object:
    if name == "PostgresRunStorage":
        from bearagent.store.postgres.storage import PostgresRunStorage

        return PostgresRunStorage
    raise AttributeError(name)


__all__ = ["PostgresRunStorage"]

"""The PostgreSQL store (issue 20): the event log, projections, sessions, leases and session locks of BearAgent in
one schema of a PostgreSQL database, shared across processes and hosts. See docs/store.md, "PostgreSQL"."""

from bearagent.store.postgres.storage import PostgresRunStorage

__all__ = ["PostgresRunStorage"]

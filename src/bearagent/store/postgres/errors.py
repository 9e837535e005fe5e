"""What a psycopg error means for the store: a `StoreError` naming the store (host, database, schema; never the
password) and the fix. The codes are those of the SQLite store where the meaning is the same."""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from bearagent.store.errors import StoreError


def translate(where: str, exc: Exception, doing: str) -> StoreError:
    """A raw psycopg (or pool) error as a `StoreError` saying what was being done."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, PoolTimeout):
        return StoreError(
            where,
            "busy",
            f"no connection to the PostgreSQL store became free in time while {doing}",
            "Retry; if it persists, check the server's max_connections and the other processes using it",
            retryable=True,
        )
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return StoreError(
            where,
            "permission",
            f"the database user may not do this while {doing} ({first})",
            "Grant the user USAGE and CREATE on the schema (and CREATE on the database for a new schema), "
            "or let an administrator run the migrations (docs/store.md, PostgreSQL)",
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return StoreError(
            where,
            "read_only",
            f"the PostgreSQL server only reads (a standby?) while {doing}",
            "Point the DSN at the primary",
        )
    if isinstance(exc, (pg_errors.SerializationFailure, pg_errors.DeadlockDetected, pg_errors.LockNotAvailable)):
        return StoreError(
            where, "busy", f"another writer held the store while {doing} ({first})", "Retry", retryable=True
        )
    if isinstance(exc, (pg_errors.DuplicatePreparedStatement, pg_errors.InvalidSqlStatementName)):
        # a prepared statement met on another client's server connection, or missing from the one this transaction
        # runs on: a pooler hands transactions to any server connection
        return StoreError(
            where,
            "pooler",
            f"the PostgreSQL store's connections are shared by a transaction pooler while {doing} ({first})",
            "Set `pooler: transaction` in the store config (PgBouncer's pool_mode = transaction), or run the pooler "
            "in session mode (docs/store.md, Behind PgBouncer)",
        )
    if isinstance(exc, pg_errors.QueryCanceled):
        return StoreError(
            where,
            "busy",
            f"the server cancelled a statement while {doing} ({first})",
            "Retry; check statement_timeout and lock_timeout of the database user",
            retryable=True,
        )
    if isinstance(exc, (pg_errors.DiskFull, pg_errors.OutOfMemory)):
        return StoreError(
            where,
            "io",
            f"the PostgreSQL server is out of space while {doing}",
            "Free space, then retry",
            retryable=True,
        )
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(
            where,
            "unreachable",
            f"cannot reach the PostgreSQL store while {doing} ({first})",
            "Check that the server runs and the DSN (host, port, user, password) is right; then retry",
            retryable=True,
        )
    return StoreError(
        where, "failed", f"the PostgreSQL store failed while {doing} ({first})", "Retry; report a bug if it persists"
    )

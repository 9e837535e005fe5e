"""A workspace's store as an operator sees it: which backend, where (its display form: a file, or
`postgresql://user@host:port/db#schema`, never a password), the schema version in the database against the one this
BearAgent knows, and how many runs wait or execute. Read without creating or migrating anything (`bearagent db
status`, `doctor`, the server's `/health`); `migrate_store` is `bearagent db migrate`.

The reads use their own short connection, not the store's: opening a store applies its migrations, and a status
must show what is there before that. Migrating reuses each backend's own migration (SQLite: one `BEGIN IMMEDIATE`
transaction; PostgreSQL: one transaction under the schema's advisory lock), so several processes at once are safe.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bearagent.app.stores import STATE_DB, open_sqlite_store, postgres_schema, refuse_unusable, store_dsn
from bearagent.runtime.state_files import open_state_dir, prepare_sqlite_file, refuse_symlinks
from bearagent.store import schema as sqlite_schema
from bearagent.store.connection import create_store_file, refuse_empty_store
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.workspace import LoadedWorkspace

COUNTED: tuple[str, ...] = ("queued", "running", "waiting", "interrupted")
"""The run statuses a status counts: what is still to do (finished runs are history, not state)."""

SchemaState = Literal["missing", "current", "outdated", "newer"]
DEFAULT_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class StoreStatus:
    backend: str
    display: str
    """The file, or the PostgreSQL location without its password."""
    source: str | None
    """What chose the store: a config file, `environment (BEARAGENT_DATABASE_URL)`; None: the default."""
    version: int | None
    """The schema version in the database; None: no store there yet (the first run or `db migrate` creates it)."""
    supported: int
    """The schema version this BearAgent writes."""
    runs: Mapping[str, int]
    """Runs by status, for every status of `COUNTED`."""
    size_bytes: int = 0
    """What the store takes: the SQLite file with its WAL, or the PostgreSQL schema's tables and indexes."""

    @property
    def state(self) -> SchemaState:
        if self.version is None:
            return "missing"
        if self.version > self.supported:
            return "newer"
        return "current" if self.version == self.supported else "outdated"

    @property
    def needs_migration(self) -> bool:
        return self.state in ("missing", "outdated")

    def describe_schema(self) -> str:
        """One phrase: `schema 3 (current)`, `schema 2 of 3: migration needed`, ..."""
        if self.version is None:
            return f"no store yet (schema {self.supported} is created by the first run or `bearagent db migrate`)"
        if self.state == "newer":
            return f"schema {self.version}, newer than this BearAgent ({self.supported}): upgrade BearAgent"
        if self.state == "outdated":
            return f"schema {self.version} of {self.supported}: migration needed (`bearagent db migrate`)"
        return f"schema {self.version} (current)"

    def describe_runs(self, statuses: tuple[str, ...] = COUNTED) -> str:
        return ", ".join(f"{self.runs.get(s, 0)} {s}" for s in statuses)

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "store": self.display,
            "source": self.source,
            "schema_version": self.version,
            "supported_version": self.supported,
            "state": self.state,
            "needs_migration": self.needs_migration,
            "runs": {s: self.runs.get(s, 0) for s in COUNTED},
            "size_bytes": self.size_bytes,
        }


def newer_error(status: StoreStatus) -> StoreError:
    return StoreError(
        status.display,
        "newer_schema",
        f"the store has schema version {status.version}, newer than this BearAgent supports ({status.supported})",
        "Upgrade BearAgent (pip install -U bearagent) to use it; older versions never downgrade a store",
    )


@dataclass(frozen=True, slots=True)
class Migration:
    backend: str
    display: str
    before: int | None
    """The version found (None: there was no store: it was created)."""
    after: int


async def read_status(loaded: LoadedWorkspace, *, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> StoreStatus:
    """The workspace's store as it is now; raises `BearAgentError` when it cannot be read (a missing DSN variable,
    an unreachable server, a foreign file or schema)."""
    settings = loaded.config.store
    refuse_unusable(settings)
    if settings.backend == "postgres":
        return await _postgres_status(loaded, connect_timeout_s)
    path = loaded.state_dir / STATE_DB
    version, runs = await asyncio.to_thread(_sqlite_read, path)
    from bearagent.store.retention import size_on

    size = size_on(path) if version is not None else 0
    return StoreStatus("sqlite", str(path), settings.source, version, sqlite_schema.SCHEMA_VERSION, runs, size)


def read_status_sync(loaded: LoadedWorkspace, **kwargs: float) -> StoreStatus:
    """`read_status` from plain code (the CLI)."""
    return asyncio.run(read_status(loaded, **kwargs))


def migrate_store(loaded: LoadedWorkspace) -> Migration:
    """Bring the workspace's store to this BearAgent's schema, creating it if there is none; safe to run in several
    processes at once (each backend's migration runs under its lock) and again (nothing left to do). A store of a
    newer BearAgent is `storage.newer_schema`, and nothing is written."""
    settings = loaded.config.store
    refuse_unusable(settings)
    if settings.backend == "postgres":
        return asyncio.run(_postgres_migrate(loaded))
    path = loaded.state_dir / STATE_DB
    _sqlite_read(path)  # refuses a foreign file before anything is created
    os.close(open_state_dir(path.parent))  # a real directory, created 0700 if missing
    try:
        created = create_store_file(path)  # a new store is made whole beside it (0600) and linked into place
        prepare_sqlite_file(path)  # never through a symlink
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=10)
    except OSError as exc:
        raise StoreError(
            path, "read_only", f"cannot create the event store ({exc.strerror})", "Make the directory writable"
        ) from exc
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "migrating the event store") from exc
    try:
        found = sqlite_schema.migrate(conn, path)  # one BEGIN IMMEDIATE transaction: the version under that lock
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "migrating the event store") from exc
    finally:
        conn.close()
    with open_sqlite_store(loaded, create=True) as store:  # WAL and the rest of a store's set-up; nothing to migrate
        after = store.schema_version
    return Migration("sqlite", str(path), None if created or found == 0 else found, after)


# ---- SQLite -----------------------------------------------------------------------------------------------------


def _sqlite_read(path: Path) -> tuple[int | None, dict[str, int]]:
    """(schema version or None for no store, runs by status) of the file, read-only (never created)."""
    refuse_symlinks([path.parent, path])
    if not path.exists():
        return None, {}
    if path.is_dir():
        raise StoreError(path, "not_a_file", "the event store path is a directory", "Point it at a file instead")
    refuse_empty_store(path)  # a 0-byte store is none of BearAgent's making
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "reading the store status") from exc
    try:
        app_id, version, tables = sqlite_schema.identify(conn)
        if app_id != sqlite_schema.APPLICATION_ID or (version == 0 and tables == 0):
            sqlite_schema.check_identity(path, app_id, version, tables)  # storage.foreign_file or .empty_file
        placeholders = ", ".join("?" for _ in COUNTED)
        rows = conn.execute(
            f"SELECT status, count(*) FROM run_projections WHERE status IN ({placeholders}) GROUP BY status", COUNTED
        ).fetchall()
        return version, {str(status): int(count) for status, count in rows}
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "reading the store status") from exc
    finally:
        conn.close()


# ---- PostgreSQL -------------------------------------------------------------------------------------------------


async def _postgres_status(loaded: LoadedWorkspace, connect_timeout_s: float) -> StoreStatus:
    import psycopg

    from bearagent.store.postgres import schema as pg_schema
    from bearagent.store.postgres.errors import translate
    from bearagent.store.postgres.location import Location, Queries
    from bearagent.store.postgres.retention import size as store_size

    settings = loaded.config.store
    where = Location.of(store_dsn(loaded, settings), postgres_schema(loaded, settings))
    size = 0
    try:
        conn = await psycopg.AsyncConnection.connect(_with_timeout(where.dsn, connect_timeout_s), autocommit=True)
        async with conn:
            version = await pg_schema.applied_version(conn, where)
            runs: dict[str, int] = {}
            if version is None:
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
                    (where.schema,),
                )
                row = await cur.fetchone()
                if row is not None and int(row[0]) > 0:
                    raise StoreError(
                        where.display,
                        "foreign_schema",
                        f"schema {where.schema} holds {row[0]} tables but is not a BearAgent store",
                        "Name another schema in the store config (store.schema); BearAgent never writes into "
                        "foreign schemas",
                    )
            elif version > 0:
                cur = await conn.execute(
                    Queries(where.schema)(
                        "SELECT status, count(*) FROM {s}.run_projections WHERE status = ANY(%s) GROUP BY status"
                    ),
                    (list(COUNTED),),
                )
                runs = {str(status): int(count) for status, count in await cur.fetchall()}
                size = await store_size(conn, Queries(where.schema), where.display)
    except psycopg.Error as exc:
        raise translate(where.display, exc, "reading the store status") from exc
    return StoreStatus("postgres", where.display, settings.source, version, pg_schema.SCHEMA_VERSION, runs, size)


async def _postgres_migrate(loaded: LoadedWorkspace) -> Migration:
    import psycopg

    from bearagent.store.postgres import schema as pg_schema
    from bearagent.store.postgres.errors import translate
    from bearagent.store.postgres.location import Location

    settings = loaded.config.store
    where = Location.of(store_dsn(loaded, settings), postgres_schema(loaded, settings))
    try:
        conn = await psycopg.AsyncConnection.connect(
            _with_timeout(where.dsn, DEFAULT_CONNECT_TIMEOUT_S), autocommit=True
        )
        async with conn:
            found = await pg_schema.migrate(conn, where)  # one transaction under the schema's advisory lock
    except psycopg.Error as exc:
        raise translate(where.display, exc, "migrating the store") from exc
    # 0: the version table was created just now, under the lock (a store's migrations and that table come together)
    return Migration("postgres", where.display, None if found == 0 else found, pg_schema.SCHEMA_VERSION)


def _with_timeout(dsn: str, seconds: float) -> str:
    """The DSN with a connect timeout unless it sets its own (libpq waits forever by default)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if "connect_timeout" in conninfo_to_dict(dsn):
        return dsn
    return make_conninfo(dsn, connect_timeout=max(1, round(seconds)))

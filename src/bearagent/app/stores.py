"""The workspace's event store and run writer, opened for a command (a read, a recovery, a rewind) or for a whole
runtime (`resources.AppResources`): the backend the user's config chose, SQLite in the workspace or a schema of a
PostgreSQL database, and a writer whose subscribers include the plugins' event sinks. Kept apart from
`resources.py` so that a command that only reads the log does not import the agent loop and the tool gate."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from bearagent.config.store_settings import DATABASE_URL_ENV, StoreSettings
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.ports import RunStorage, WorkspaceStore
from bearagent.runtime.run_writer import Committed, Published, RunWriter, Subscriber
from bearagent.runtime.state_files import open_state_dir, refuse_symlinks
from bearagent.store.sqlite import SqliteEventStore
from bearagent.workspace import LoadedWorkspace

STATE_DB = "state.db"


def writer_over(loaded: LoadedWorkspace, storage: RunStorage) -> RunWriter:
    """A run writer over `storage` whose subscribers include the plugins' event sinks (they see every commit)."""
    writer = RunWriter(storage)
    for _plugin, sink in loaded.plugins.contributions().event_sinks:
        writer.subscribe(_event_sink(sink))
    return writer


def _event_sink(sink: Callable[[Event], None]) -> Subscriber:
    """A plugin's event sink as a run writer subscriber: committed events only (tokens are not log events)."""

    def subscriber(item: Published) -> None:
        if isinstance(item, Committed):
            sink(item.event)

    return subscriber


def open_store(loaded: LoadedWorkspace, *, create: bool = True) -> WorkspaceStore:
    """The workspace's event store, of the backend the user's config chose (`store:`; never a workspace file's):
    SQLite in the workspace by default, or a schema of a PostgreSQL database. With `create=False` a store nothing has
    been written to is a clear error (nothing has run)."""
    settings = loaded.config.store
    refuse_unusable(settings)
    if settings.backend == "postgres":
        return _open_postgres(loaded, settings, create=create)
    return open_sqlite_store(loaded, create=create)


def refuse_unusable(settings: StoreSettings) -> None:
    """Raise the error of a `store:` section that cannot be used as written (a literal `dsn:`), naming the file and
    the key (never the value)."""
    if settings.refusal is not None:
        code, what, fix = settings.refusal
        raise BearAgentError(ErrorInfo.of("configuration", code, f"{settings.source}: {what}"), hint=fix)


def store_dsn(loaded: LoadedWorkspace, settings: StoreSettings) -> str:
    """The DSN of a PostgreSQL store, from BearAgent's own environment (never a settings file's `env`). Only ever
    handed to libpq: messages name the store by its display form (`store/postgres/location.py`)."""
    dsn = loaded.env.get(settings.dsn_env)
    if not dsn:
        hint = f"export {settings.dsn_env}='postgresql://USER@HOST/DB' (see docs/store.md, PostgreSQL)"
        if loaded.env.get(DATABASE_URL_ENV) and settings.dsn_env != DATABASE_URL_ENV:
            hint = f"write `dsn: ${{{DATABASE_URL_ENV}}}` in the store section ({DATABASE_URL_ENV} is set), or {hint}"
        raise _missing_dsn(
            settings.dsn_env,
            f"the store is PostgreSQL ({settings.where}) but the environment variable {settings.dsn_env}, "
            "which holds its connection string, is not set",
            hint,
        )
    return dsn


def _missing_dsn(variable: str, message: str, hint: str) -> BearAgentError:
    """`configuration.missing_store_dsn`: a variable the store section names for a DSN is not set."""
    return BearAgentError(ErrorInfo.of("configuration", "missing_store_dsn", message, variable=variable), hint=hint)


def postgres_schema(loaded: LoadedWorkspace, settings: StoreSettings) -> str:
    """The configured schema, else one per workspace: `bearagent_` and the hash of the workspace's path (as separate
    as one state.db per workspace; hosts that share a store name its schema in their config)."""
    if settings.pg_schema is not None:
        return settings.pg_schema
    return "bearagent_" + hashlib.sha256(str(loaded.root.resolve()).encode()).hexdigest()[:16]


def _open_postgres(loaded: LoadedWorkspace, settings: StoreSettings, *, create: bool) -> WorkspaceStore:
    from bearagent.store.postgres import PostgresRunStorage

    return PostgresRunStorage(
        store_dsn(loaded, settings),
        schema=postgres_schema(loaded, settings),
        pool_size=settings.pool_size,
        create=create,
        transaction_pooler=settings.pooler == "transaction",
        listen_dsn=listen_dsn(loaded, settings),
    )


def listen_dsn(loaded: LoadedWorkspace, settings: StoreSettings) -> str | None:
    """The direct DSN `store.listen_dsn_env` names, from BearAgent's own environment; None when no variable is
    named (the store's own DSN is listened on, or nothing behind a transaction pooler)."""
    if settings.listen_dsn_env is None:
        return None
    dsn = loaded.env.get(settings.listen_dsn_env)
    if not dsn:
        raise _missing_dsn(
            settings.listen_dsn_env,
            f"store.listen_dsn_env ({settings.source}) names the environment variable {settings.listen_dsn_env}, "
            "which is not set",
            f"export {settings.listen_dsn_env}='postgresql://USER@HOST/DB' (a direct connection, not through the "
            "pooler), or remove store.listen_dsn_env",
        )
    return dsn


def open_sqlite_store(loaded: LoadedWorkspace, *, create: bool = True) -> SqliteEventStore:
    """The workspace's SQLite store. The data dir (`.bearagent`) and the database are never reached through a
    symlink (`runtime/state_files.py`)."""
    data_dir = loaded.state_dir
    path = data_dir / STATE_DB
    refuse_symlinks([data_dir, path])
    if not create and not path.exists():
        raise BearAgentError(
            ErrorInfo.of("not_found", "no_state", f"no runs have been stored in {loaded.root} yet ({path} is missing)"),
            hint='start a run with `bearagent run "..."` in this workspace first',
        )
    os.close(open_state_dir(data_dir))  # a real directory, created 0700 if missing
    return SqliteEventStore(path)

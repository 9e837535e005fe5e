"""SQLite connections of the event store: opening the file safely, and the worker threads that own one each.

`open_primary` checks the path (no symlinks, not a directory, created 0600), switches the file to WAL and brings its
schema up to date (`store/schema.py`); `connect_more` opens further connections to the file it checked. A `Worker`
is one thread with its own connection, so async callers await blocking SQLite work without stalling the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar, cast

from bearagent.runtime.state_files import SQLITE_SIDE_FILES, prepare_sqlite_file, refuse_symlinks
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.schema import SCHEMA_VERSION, check_identity, identify, migrate

Durability = Literal["normal", "full"]
_T = TypeVar("_T")


def _synchronous_pragma(durability: Durability) -> str:
    return "PRAGMA synchronous = " + ("FULL" if durability == "full" else "NORMAL")


def open_primary(path: Path, durability: Durability, busy_timeout_ms: int) -> sqlite3.Connection:
    """The first connection to the store file: checked, created if new, in WAL mode and migrated."""
    try:
        # SQLite opens the database and its side files by name, following symlinks: refuse them first
        refuse_symlinks([path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)])
        is_dir = path.is_dir()
    except OSError as exc:
        raise StoreError(
            path,
            "read_only",
            f"cannot reach the event store ({exc.strerror})",
            "Make its directory accessible to this user, or use a writable workspace",
        ) from exc
    if is_dir:
        raise StoreError(path, "not_a_file", "the event store path is a directory", "Point it at a file instead")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            path,
            "read_only",
            f"cannot create the directory of the event store ({exc.strerror})",
            "Create it yourself or make its parent writable, or use a writable workspace",
        ) from exc
    try:
        prepare_sqlite_file(path)  # a new store is created 0600, never through a symlink
    except OSError as exc:
        raise StoreError(
            path,
            "read_only",
            f"cannot create the event store ({exc.strerror})",
            "Make the directory and the file writable (the store also creates -wal and -shm files next to it), "
            "or use a writable workspace",
        ) from exc
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "opening the event store") from exc
    try:
        _prepare(conn, path, durability, busy_timeout_ms)
    except BaseException:
        conn.close()
        raise
    return conn


def connect_more(path: Path, durability: Durability, busy_timeout_ms: int) -> sqlite3.Connection:
    """Another connection to the file `open_primary` checked, set up and migrated. It must not open and close the
    file itself as `open_primary` does: closing any descriptor of the file drops the POSIX locks this process's other
    connections hold on it (SQLite's locks), which can corrupt the database mid-transaction."""
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "opening the event store") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        conn.execute(_synchronous_pragma(durability))
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise translate_sqlite_error(path, exc, "opening the event store") from exc
    return conn


def _prepare(conn: sqlite3.Connection, path: Path, durability: Durability, busy_timeout_ms: int) -> None:
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        app_id, version, tables = identify(conn)
        check_identity(path, app_id, version, tables)
        mode = _enable_wal(conn, busy_timeout_ms)
        if mode != "wal":
            raise StoreError(
                path,
                "no_wal",
                f"the event store could not switch to WAL mode (journal_mode is {mode})",
                "Keep the store on a local filesystem that supports shared memory (not a network share)",
            )
        conn.execute(_synchronous_pragma(durability))
        conn.execute("PRAGMA foreign_keys = ON")
        if version < SCHEMA_VERSION:
            migrate(conn, path)
        conn.execute("SELECT count(*) FROM run_projections WHERE rowid = 1").fetchone()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "opening the event store") from exc


def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> str:
    """Switch a new file to WAL (persistent: later opens find it set). Switching needs the file to itself and
    SQLite does not wait for that, so retry while other openers hold it, up to the busy timeout."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        mode = cast(tuple[str], conn.execute("PRAGMA journal_mode").fetchone())[0].lower()
        if mode == "wal":
            return mode
        try:
            return cast(tuple[str], conn.execute("PRAGMA journal_mode = WAL").fetchone())[0].lower()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class Worker:
    """One thread with its own connection, opened there on first use; async callers await its results."""

    def __init__(self, name: str, connect: Callable[[], sqlite3.Connection]) -> None:
        self._name = name
        self._connect = connect
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._guard = threading.Lock()

    def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._conn is None:
            self._conn = self._connect()
        return work(self._conn)

    async def call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            executor = self._executor
        return await asyncio.get_running_loop().run_in_executor(executor, self._run, work)

    def close(self) -> None:
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)  # a commit under way finishes first
        if self._conn is not None:
            self._conn.close()
            self._conn = None

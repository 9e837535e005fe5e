"""SQLite connections of the event store: opening the file safely, and the worker threads that own one each.

`open_primary` checks the path (no symlinks, not a directory, not an empty file it did not make; a new store is
made whole beside it, 0600, and linked into place), switches the file to WAL and brings its
schema up to date (`store/schema.py`); `connect_more` opens further connections to the file it checked. A `Worker`
is one thread with its own connection, so async callers await blocking SQLite work without stalling the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from bearagent.runtime.state_files import SQLITE_SIDE_FILES, prepare_sqlite_file, refuse_symlinks
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.schema import EMPTY_FIX, SCHEMA_VERSION, check_identity, identify, migrate

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
    for side in (path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES):
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.lstat(side).st_mode):  # a directory, a FIFO, a device where SQLite writes
                raise StoreError(
                    side,
                    "not_a_file",
                    "a side file of the event store (SQLite's write-ahead log, shared memory or journal) is not a "
                    "regular file",
                    "Move it aside (SQLite makes a new one; if it is a write-ahead log of yours, the writes in it are "
                    "lost); `bearagent db check` then checks the store",
                )
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
        create_store_file(path)  # a new store is made whole beside it (0600) and then linked into place
        prepare_sqlite_file(path)  # never through a symlink
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


def refuse_empty_store(path: Path) -> None:
    """Refuse an existing event store file of 0 bytes. BearAgent never leaves one (`create_store_file` links a new
    store into place only once it holds its schema), so one was put there by someone else: a repository that ships
    `.bearagent/state.db` (tracked by git, readable by others) would otherwise have the user's prompts, tool output and
    answers written into its file as if the user had made it."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        raise StoreError(
            path,
            "empty_file",
            "the event store file is empty (0 bytes), and BearAgent never leaves an empty store: it came from "
            "elsewhere (a repository that ships it, a copy), so BearAgent will not make it the store of your runs",
            EMPTY_FIX,
        )


def create_store_file(path: Path) -> bool:
    """When there is no store at `path`, make one: a new 0600 file beside it (a random name, never through a
    symlink) that gets the whole schema, then linked to `path` (which fails harmlessly when another process made
    the store meanwhile). So a store file is never seen empty; an empty one at `path` is refused
    (`refuse_empty_store`). True when this call made the store. Raises `OSError` when the directory is not
    writable."""
    refuse_empty_store(path)
    if os.path.lexists(path):
        return False
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(6)}")
    os.close(os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    try:
        try:
            conn = sqlite3.connect(str(temp), isolation_level=None, timeout=10)
            try:
                migrate(conn, temp, new=True)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate_sqlite_error(path, exc, "creating the event store") from exc
        try:
            os.link(temp, path)
        except FileExistsError:
            return False  # another process made it meanwhile
        return True
    finally:
        for leftover in (temp, *(temp.with_name(temp.name + suffix) for suffix in SQLITE_SIDE_FILES)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)


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
    """One thread with its own connection, opened there on first use; async callers await its results.

    With `inline=True` a call is run at once on the caller's thread (the event loop) when the thread has nothing
    queued and SQLite can answer without waiting: the connection's busy timeout is 0 for that call, and a work that
    meets a lock (`SQLITE_BUSY`/`SQLITE_LOCKED`) is handed to the thread, where it waits up to the busy timeout as
    before. That spares the two thread wake-ups of a call (~0.1 ms each on a small VM, more than a commit in WAL
    with synchronous=NORMAL takes), while a commit waiting for another process's lock still never blocks the loop.
    Only for works that are safe to run again after such a failure: one transaction opened with `BEGIN
    IMMEDIATE`, or one statement (a lock refused before anything was written). WAL checkpoints stay off the loop:
    automatic checkpoints are off on an inline connection, and a passive one runs on the thread every
    `checkpoint_every` works (about SQLite's own 1,000 pages at a step's few pages a commit).
    """

    def __init__(
        self,
        name: str,
        connect: Callable[[], sqlite3.Connection],
        *,
        inline: bool = False,
        checkpoint_every: int = 200,
    ) -> None:
        self._name = name
        self._connect = connect
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._guard = threading.Lock()
        self._inline = inline
        self._checkpoint_every = checkpoint_every
        self._works = 0  # works since the last checkpoint (inline connections)
        self._queued = 0  # works handed to the thread and not finished
        self._conn_lock = threading.Lock()  # one user of the connection at a time: the thread or an inline call
        self._busy_timeout_ms = 0

    def _open(self) -> sqlite3.Connection:
        conn = self._connect()
        if self._inline:  # the connection rests with busy timeout 0: the inline calls' setting
            self._busy_timeout_ms = cast(tuple[int], conn.execute("PRAGMA busy_timeout").fetchone())[0]
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
        return conn

    def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `work` on this thread, waiting for locks up to the busy timeout."""
        with self._conn_lock:
            if self._conn is None:
                self._conn = self._open()
            conn = self._conn
            if not self._inline:
                return work(conn)
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            try:
                return work(conn)
            finally:
                conn.execute("PRAGMA busy_timeout = 0")

    def _run_queued(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        result = self._run(work)
        if self._inline and self._checkpoint_due():
            self._run(_checkpoint)
        return result

    def _dequeued(self, _future: Future[Any]) -> None:
        with self._guard:
            self._queued -= 1

    def try_now(self, work: Callable[[sqlite3.Connection], _T]) -> tuple[bool, _T | None]:
        """Run `work` at once on the calling thread if it needs no wait: (True, result), or (False, None) when it
        must go to the thread (`call`): an inline worker whose thread is busy or idle-unopened, a lock met, or a
        worker that is not inline. Raises what `work` raises otherwise."""
        if not self._inline:
            return False, None
        conn = self._conn
        if conn is None or self._queued or not self._conn_lock.acquire(blocking=False):
            return False, None
        try:
            try:
                result = work(conn)  # busy timeout 0: the connection's resting setting
            except BaseException as exc:
                if _met_a_lock(exc):
                    return False, None
                raise
        finally:
            self._conn_lock.release()
        if self._checkpoint_due():
            self._submit(_checkpoint)  # on the thread; calls queue behind it until it is done
        return True, result

    def _checkpoint_due(self) -> bool:
        with self._guard:
            self._works += 1
            if self._works < self._checkpoint_every:
                return False
            self._works = 0
            return True

    def _submit(self, work: Callable[[sqlite3.Connection], _T]) -> Future[_T]:
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            self._queued += 1
            try:
                future = self._executor.submit(self._run_queued, work)
            except BaseException:
                self._queued -= 1
                raise
        # before the caller's own callback, so `_queued` is down when the caller resumes; also when cancelled
        future.add_done_callback(self._dequeued)
        return future

    async def call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        done, result = self.try_now(work)
        if done:
            return cast(_T, result)
        return await asyncio.wrap_future(self._submit(work))

    def close(self) -> None:
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)  # a commit under way finishes first
        if self._conn is not None:
            if self._inline:
                with contextlib.suppress(sqlite3.Error):
                    _checkpoint(self._conn)  # automatic checkpoints were off: leave a short WAL behind
            self._conn.close()
            self._conn = None


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()


def _met_a_lock(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is SQLite refusing to wait for a lock. Python gives the extended
    result code (`SQLITE_BUSY_RECOVERY`, `SQLITE_BUSY_SNAPSHOT`, ...: another connection recovering the WAL index,
    say); its low byte is the primary code."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        code = getattr(seen, "sqlite_errorcode", None)
        if (
            isinstance(seen, sqlite3.OperationalError)
            and isinstance(code, int)
            and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False

"""`Worker(inline=True)`: a call runs at once on the event loop's thread when it can, and goes to the worker thread
(where it may wait for a lock) when SQLite would make it wait, when work is queued there, or before the
connection is open. Real SQLite files; another process holds the write lock."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.events import EventFactory

from bearagent.ports import commit_now_of
from bearagent.runtime.run_writer import RunWriter, prepare_commit
from bearagent.store import connection
from bearagent.store.connection import Worker, connect_more, open_primary
from bearagent.store.sqlite import SqliteEventStore

HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def _hold_the_write_lock(path: Path) -> subprocess.Popen[str]:
    """Another process that takes the write lock, says "locked", and lets go at a line on its stdin."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    open_primary(path, "normal", 5_000).close()
    return path


def _worker(path: Path, *, inline: bool, checkpoint_every: int = 200) -> Worker:
    return Worker(
        "test-writer", lambda: connect_more(path, "normal", 5_000), inline=inline, checkpoint_every=checkpoint_every
    )


def _write(conn: sqlite3.Connection) -> int:
    """A commit as the store makes one: BEGIN IMMEDIATE first, then the writes, then COMMIT; the thread it ran on."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO sessions (session_id, created_at, updated_at) VALUES (hex(randomblob(16)), 'x', 'x')")
    conn.execute("COMMIT")
    return threading.get_ident()


def _count(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    finally:
        conn.close()


def test_calls_run_inline_once_the_connection_is_open(tmp_path: Path) -> None:
    worker = _worker(_store(tmp_path), inline=True)

    async def go() -> list[int]:
        return [await worker.call(_write) for _ in range(3)]

    try:
        threads = asyncio.run(go())
    finally:
        worker.close()
    me = threading.get_ident()
    assert threads[0] != me  # the first call opens the connection on the worker thread
    assert threads[1:] == [me, me]


def test_without_inline_every_call_goes_to_the_thread(tmp_path: Path) -> None:
    worker = _worker(_store(tmp_path), inline=False)

    async def go() -> list[int]:
        return [await worker.call(_write) for _ in range(3)]

    try:
        threads = asyncio.run(go())
    finally:
        worker.close()
    assert threading.get_ident() not in threads


def test_a_locked_store_sends_the_commit_to_the_thread_and_the_loop_keeps_running(tmp_path: Path) -> None:
    path = _store(tmp_path)
    worker = _worker(path, inline=True)
    holders: list[subprocess.Popen[str]] = []

    async def go() -> tuple[int, int, float]:
        await worker.call(_write)  # opens the connection
        holder = _hold_the_write_lock(path)  # only now: a lock taken earlier would hold up the write above
        holders.append(holder)
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(ticker())
        started = time.monotonic()
        commit = asyncio.create_task(worker.call(_write))
        await asyncio.sleep(0.3)
        assert not commit.done()  # it waits for the lock, on the worker thread
        holder.stdin.write("\n")
        holder.stdin.flush()
        thread = await commit
        stop.set()
        await ticking
        return thread, ticks, time.monotonic() - started

    try:
        thread, ticks, waited = asyncio.run(go())
    finally:
        worker.close()
        for holder in holders:
            holder.kill()  # a no-op once it let go; it must not outlive a failed test
            holder.wait(timeout=10)
    assert thread != threading.get_ident()
    assert waited >= 0.3
    assert ticks >= 10  # the loop was not blocked while the commit waited (~30 ticks possible; a loaded CI is slow)
    assert _count(path) == 2  # the refused inline attempt wrote nothing; the retry wrote once


def test_calls_behind_queued_work_keep_their_order(tmp_path: Path) -> None:
    path = _store(tmp_path)
    worker = _worker(path, inline=True)
    order: list[str] = []
    holders: list[subprocess.Popen[str]] = []

    def commit(conn: sqlite3.Connection) -> int:
        thread = _write(conn)
        order.append("commit")
        return thread

    def read(conn: sqlite3.Connection) -> int:
        conn.execute("SELECT count(*) FROM sessions").fetchone()
        order.append("read")
        return threading.get_ident()

    async def go() -> int:
        await worker.call(_write)  # opens the connection
        holder = _hold_the_write_lock(path)  # only now: a lock taken earlier would hold up the write above
        holders.append(holder)
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        first = asyncio.ensure_future(worker.call(commit))
        await asyncio.sleep(0.05)  # refused inline, `commit` now waits for the lock on the thread
        second = asyncio.ensure_future(worker.call(read))  # could run inline (a read needs no lock), must not
        await asyncio.sleep(0.05)
        holder.stdin.write("\n")
        holder.stdin.flush()
        await first
        return await second

    try:
        thread = asyncio.run(go())
    finally:
        worker.close()
        for holder in holders:
            holder.kill()  # a no-op once it let go; it must not outlive a failed test
            holder.wait(timeout=10)
    assert order == ["commit", "read"]
    assert thread != threading.get_ident()  # it queued behind the waiting commit instead of overtaking it


def test_checkpoints_run_on_the_thread_and_keep_the_wal_short(tmp_path: Path) -> None:
    path = _store(tmp_path)
    worker = _worker(path, inline=True, checkpoint_every=20)

    async def go() -> None:
        for _ in range(400):
            await worker.call(_write)

    try:
        asyncio.run(go())
        wal = path.with_name(path.name + "-wal")
        # without checkpoints 400 commits leave ~400 pages of 4 KiB; passive checkpoints every 20 let it be reused
        assert wal.stat().st_size < 200 * 4096
    finally:
        worker.close()
    assert _count(path) == 400


def test_the_store_commits_at_once_when_free_and_hands_a_locked_commit_to_its_thread(tmp_path: Path) -> None:
    """`SqliteEventStore.commit_now` (`ports.commit_now_of`): the run writer's commits need no task while SQLite
    answers at once; under another process's lock `commit_now` writes nothing and says so, and the writer's awaited
    commit waits for the lock on the thread, then lands."""
    path = tmp_path / "state.db"
    store = SqliteEventStore(path)
    factory = EventFactory()
    writer = RunWriter(store)
    commit_now = commit_now_of(store)
    assert commit_now is not None
    holders: list[subprocess.Popen[str]] = []

    async def go() -> tuple[bool, bool, int]:
        await writer.append(factory.run_created())  # opens the writer's connection (on its thread)
        await writer.append(factory.run_started())
        holder = _hold_the_write_lock(path)  # only now: a lock taken earlier would hold up the appends above
        holders.append(holder)
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        requested = factory.model_requested()
        refused = commit_now(prepare_commit(await store.load_run(factory.run_id), [requested]))
        landed = asyncio.ensure_future(writer.append(requested))  # the same event: nothing was written
        await asyncio.sleep(0.2)
        waiting = not landed.done()
        holder.stdin.write("\n")
        holder.stdin.flush()
        projection = await landed
        free = commit_now(prepare_commit(await store.load_run(factory.run_id), [factory.model_started()]))
        return refused, waiting and free, projection.last_sequence

    try:
        refused, waited_then_free, last = asyncio.run(go())
    finally:
        store.close()
        for holder in holders:
            holder.kill()  # a no-op once it let go; it must not outlive a failed test
            holder.wait(timeout=10)
    assert refused is False
    assert waited_then_free
    assert last == 3
    reopened = SqliteEventStore(path)
    try:
        assert [e.sequence for e in reopened.read_events(factory.run_id)] == [1, 2, 3, 4]
    finally:
        reopened.close()


def test_every_kind_of_busy_or_locked_goes_to_the_thread() -> None:
    """SQLite reports a lock with extended codes too (recovery of the WAL index by another connection, a stale
    snapshot, a shared-cache lock): each sends an inline work to the thread, where it waits; other errors do not."""
    met_a_lock = connection._met_a_lock  # pyright: ignore[reportPrivateUsage]
    for code in (
        5,
        261,
        517,
        773,
        6,
        262,
        518,
    ):  # BUSY, BUSY_RECOVERY/SNAPSHOT/TIMEOUT, LOCKED, LOCKED_SHAREDCACHE/VTAB
        exc = sqlite3.OperationalError("database is locked")
        exc.sqlite_errorcode = code  # pyright: ignore[reportAttributeAccessIssue]
        wrapped = RuntimeError("while committing")
        wrapped.__cause__ = exc
        assert met_a_lock(exc) and met_a_lock(wrapped), code
    for code in (1, 8, 11, 13):  # ERROR, READONLY, CORRUPT, FULL
        exc = sqlite3.OperationalError("other")
        exc.sqlite_errorcode = code  # pyright: ignore[reportAttributeAccessIssue]
        assert not met_a_lock(exc), code

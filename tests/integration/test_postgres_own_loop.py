"""A PostgreSQL store on the process's own loop (`store/postgres/io_loop.use_this_loop`, what `bearagent worker`
does, issue 37): its calls from that loop need no thread of the store's own, and everything else still works from
there: commits and reads through the async port, commit notices, session locks across handles, the synchronous face
called on the loop's own thread (a connection of its own for that call) and from other threads, an async call from
another thread's loop, and closing from the loop (`aclose`) or with the synchronous `close`, after which the
store's connections are gone and the loop goes on. A real throwaway cluster."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId, SessionId, Uuid4IdGenerator
from bearagent.domain.run_events import RunCreatedV2, RunSucceededV2
from bearagent.ports import CommitNotice
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.postgres import PostgresRunStorage, io_loop

CREATED = {"goal": "g", "agent_name": "build", "prompt_hash": "0" * 64}


@pytest.fixture(autouse=True)
def _no_home_loop_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`use_this_loop` is process-wide: each test names its own loop and leaves none named behind."""
    monkeypatch.setattr(io_loop, "_HOME", [])
    yield


def _store_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("bearagent-pg-")]


def _connections(dsn: str) -> int:
    """Client connections to this test's database, besides the one asking."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
        assert row is not None
        return int(row[0])


async def _connections_drop_to(dsn: str, count: int) -> int:
    deadline = time.monotonic() + 20  # the server drops a closed client's backend a moment later
    seen = await asyncio.to_thread(_connections, dsn)
    while seen > count and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        seen = await asyncio.to_thread(_connections, dsn)
    return seen


async def _run_of_three_events(store: PostgresRunStorage) -> RunId:
    f = EventFactory(ids=Uuid4IdGenerator())
    writer = RunWriter(store)
    await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
    await writer.append(f.run_started())
    await writer.append(f.event(RunSucceededV2()))
    return f.run_id


def test_the_store_lives_on_the_loop_that_named_itself_and_every_face_works_from_it(postgres_dsn: str) -> None:
    async def go() -> None:
        io_loop.use_this_loop()
        threads_before = _store_threads()
        store = PostgresRunStorage(postgres_dsn, schema="own_loop_a")
        other = PostgresRunStorage(postgres_dsn, schema="own_loop_a")  # as another process would have it
        try:
            seen: list[CommitNotice] = []
            ended = asyncio.Event()

            def listener(notice: CommitNotice) -> None:
                seen.append(notice)
                if notice.status == "succeeded":
                    ended.set()

            stop = store.commits.subscribe(listener)
            await store.commits.wait_listening()
            run_id = await _run_of_three_events(other)
            await asyncio.wait_for(ended.wait(), 20)
            stop()
            assert [n.status for n in seen if n.run_id == str(run_id)][-1] == "succeeded"

            fetched = await store.fetch_run(run_id)
            assert fetched is not None and fetched.status == "succeeded"
            assert _store_threads() == threads_before, "a store started a loop thread of its own"

            # the synchronous face on the loop's own thread: a connection of its own for the call, same answer
            assert [e.event_type for e in store.read_events(run_id)] == ["RunCreated", "RunStarted", "RunSucceeded"]
            # ... and from another thread, and the async port from another thread's loop
            events = await asyncio.to_thread(store.read_events, run_id)
            assert len(events) == 3
            elsewhere = await asyncio.to_thread(asyncio.run, store.fetch_run(run_id))  # pyright: ignore[reportArgumentType]
            assert elsewhere is not None and elsewhere.last_sequence == 3

            # session locks: one holder across handles
            session = SessionId("3f2b8c1e-6d4a-4e7b-9c0d-1a2b3c4d5e6f")
            async with store.session_lock(session):
                with pytest.raises(BearAgentError) as busy:
                    async with other.session_lock(session, wait=False):
                        pass
                assert busy.value.info.code.endswith("session_busy")
            async with other.session_lock(session, wait=False):
                pass
        finally:
            await store.aclose()
            other.close()  # the synchronous close, on the loop's thread: it closes there without waiting
        assert await _connections_drop_to(postgres_dsn, 0) == 0, "a store's connections outlived its closing"
        await asyncio.sleep(0)  # the loop goes on after its stores closed
        with pytest.raises(RuntimeError, match="closed"):
            await store.fetch_run(run_id)

    asyncio.run(go())


def test_a_store_first_used_by_a_synchronous_call_on_the_loops_thread_is_created_by_it(postgres_dsn: str) -> None:
    async def go() -> None:
        io_loop.use_this_loop()
        store = PostgresRunStorage(postgres_dsn, schema="own_loop_b")
        try:
            assert store.schema_version > 0  # the one-shot call created the schema, as opening the store does
            assert store.read_events(RunId("0b7a4f6e-2d1c-4b8a-9e3f-5a6b7c8d9e0f")) == []
            run_id = await _run_of_three_events(store)
            assert len(store.read_events(run_id)) == 3
            # the synchronous appends too, each on a one-shot loop of its own, through the one writer they share
            f = EventFactory(ids=Uuid4IdGenerator())
            store.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
            store.append_many([f.run_started(), f.event(RunSucceededV2())])
            projection = await store.fetch_run(f.run_id)
            assert projection is not None and (projection.status, projection.last_sequence) == ("succeeded", 3)
        finally:
            await store.aclose()

    asyncio.run(go())


def test_a_store_that_may_not_create_its_schema_says_so_from_the_loops_thread(postgres_dsn: str) -> None:
    async def go() -> None:
        io_loop.use_this_loop()
        store = PostgresRunStorage(postgres_dsn, schema="own_loop_never", create=False)
        try:
            with pytest.raises(BearAgentError) as refused:
                store.read_events(RunId("0b7a4f6e-2d1c-4b8a-9e3f-5a6b7c8d9e0f"))
            assert refused.value.info.code.endswith("no_state")
        finally:
            await store.aclose()

    asyncio.run(go())


def test_without_a_named_loop_the_store_keeps_its_own_thread(postgres_dsn: str) -> None:
    store = PostgresRunStorage(postgres_dsn, schema="own_loop_c")
    try:
        run_id = asyncio.run(_run_of_three_events(store))
        assert any(name == "bearagent-pg-own_loop_c" for name in _store_threads())
        assert len(store.read_events(run_id)) == 3
    finally:
        store.close()
    assert not any(name == "bearagent-pg-own_loop_c" for name in _store_threads())

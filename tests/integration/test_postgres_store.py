"""The PostgreSQL store beyond the contract suite: migrations (from empty and from every earlier version, several
processes at once, refusals), schemas as independent stores, the DSN never shown, an unreachable server, the loop
never blocked by a waiting commit, the synchronous face, and session locks that are cancelled or closed. Free text
that `jsonb` and `text` would refuse or change is checked on every store of the contract suite.

Runs against the test session's throwaway cluster (`tests/support/postgres_cluster.py`); skipped where PostgreSQL
is not installed, never in CI."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.support import postgres_cluster
from tests.support.events import EventFactory
from tests.support.storage_factories import FACTORIES

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId, SessionId, Uuid4IdGenerator
from bearagent.domain.run_events import HookExecutedV1, RunCreatedV2, RunSucceededV2
from bearagent.domain.state import SessionRecord
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.errors import StoreError
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.postgres.location import Location
from bearagent.store.postgres.schema import SCHEMA_VERSION, migrate
from bearagent.store.postgres.storage import DEFAULT_POOL_SIZE
from bearagent.store.session_lock import SessionBusy

REPO = Path(__file__).resolve().parents[2]
SESSION = SessionId("22222222-2222-4222-8222-000000000001")
CREATED = {"goal": "g", "agent_name": "build", "prompt_hash": "0" * 64}


@pytest.fixture
def stores(postgres_dsn: str) -> Iterator[list[PostgresRunStorage]]:
    opened: list[PostgresRunStorage] = []
    yield opened
    for store in opened:
        store.close()


def open_store(opened: list[PostgresRunStorage], dsn: str, schema: str = "bearagent") -> PostgresRunStorage:
    store = PostgresRunStorage(dsn, schema=schema)
    opened.append(store)
    return store


def versions(dsn: str, schema: str = "bearagent") -> list[int]:
    with psycopg.connect(dsn) as conn:
        query = sql.SQL("SELECT version FROM {}.bearagent_schema ORDER BY version").format(sql.Identifier(schema))
        rows = conn.execute(query).fetchall()
    return [int(row[0]) for row in rows]


async def created_run(writer: RunWriter, **fields: object) -> EventFactory:
    f = EventFactory(ids=Uuid4IdGenerator())
    await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED, **fields})))
    await writer.append(f.run_started())
    return f


# ---- migrations -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("start", range(SCHEMA_VERSION))
def test_migrations_bring_any_earlier_version_up_to_date(
    postgres_dsn: str, stores: list[PostgresRunStorage], start: int
) -> None:
    async def prepare() -> None:
        conn = await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True)
        async with conn:
            await migrate(conn, Location.of(postgres_dsn), upto=start)

    if start:
        asyncio.run(prepare())
    store = open_store(stores, postgres_dsn)
    assert store.schema_version == SCHEMA_VERSION
    assert versions(postgres_dsn) == list(range(1, SCHEMA_VERSION + 1))

    async def works() -> None:
        f = await created_run(RunWriter(store))
        assert [e.sequence for e in await store.fetch_events(f.run_id)] == [1, 2]

    asyncio.run(works())


@pytest.mark.slow  # several fresh processes race to migrate: ~18 s measured under load
def test_processes_opening_a_new_store_at_once_migrate_it_once(postgres_dsn: str) -> None:
    script = (
        "import sys\nfrom bearagent.store.postgres import PostgresRunStorage\n"
        "s = PostgresRunStorage(sys.argv[1])\nprint(s.schema_version)\ns.close()\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, postgres_dsn],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == str(SCHEMA_VERSION)
    assert versions(postgres_dsn) == list(range(1, SCHEMA_VERSION + 1))


def test_a_newer_or_a_foreign_schema_is_refused(postgres_dsn: str, stores: list[PostgresRunStorage]) -> None:
    assert open_store(stores, postgres_dsn).schema_version == SCHEMA_VERSION
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO bearagent.bearagent_schema (version) VALUES (999)")
        conn.execute("CREATE SCHEMA theirs")
        conn.execute("CREATE TABLE theirs.events (id int)")
    with pytest.raises(StoreError) as newer:
        asyncio.run(open_store(stores, postgres_dsn).fetch_run(RunId.new()))
    assert newer.value.info.code == "storage.newer_schema"
    with pytest.raises(StoreError) as foreign:
        asyncio.run(open_store(stores, postgres_dsn, schema="theirs").fetch_run(RunId.new()))
    assert foreign.value.info.code == "storage.foreign_schema"
    with psycopg.connect(postgres_dsn) as conn:  # nothing was written into it
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'theirs'").fetchone() == (1,)


def test_two_schemas_of_one_database_are_two_stores(postgres_dsn: str, stores: list[PostgresRunStorage]) -> None:
    one, two = open_store(stores, postgres_dsn, schema="team_a"), open_store(stores, postgres_dsn, schema="team_b")

    async def go() -> None:
        f = await created_run(RunWriter(one))
        assert await two.fetch_run(f.run_id) is None and await two.find_runs("") == []
        async with one.session_lock(SESSION, wait=False), two.session_lock(SESSION, wait=False):
            pass  # the same session id in another store is another lock

    asyncio.run(go())
    assert "team_a" in one.path and "team_b" in two.path


# ---- where the store is, and when it cannot be reached ------------------------------------------------------------


def test_the_dsn_password_never_shows(stores: list[PostgresRunStorage]) -> None:
    secret = "s3cr3t-pw"
    dsn = f"postgresql://agent:{secret}@127.0.0.1:1/runs?connect_timeout=2&sslmode=disable"
    store = open_store(stores, dsn)
    assert store.path == "postgresql://agent@127.0.0.1:1/runs#bearagent"
    assert secret not in repr(store.location)
    with pytest.raises(StoreError) as caught:
        asyncio.run(store.fetch_run(RunId.new()))
    assert caught.value.info.code == "storage.unreachable" and caught.value.info.retryable
    assert secret not in str(caught.value) and secret not in repr(caught.value.info)
    with pytest.raises(BearAgentError) as bad:
        PostgresRunStorage(f"host=x password={secret} 'unterminated")
    assert bad.value.info.code == "configuration.invalid_store_dsn" and secret not in str(bad.value)
    with pytest.raises(BearAgentError) as schema:
        PostgresRunStorage("host=x", schema='x"; DROP TABLE y')
    assert schema.value.info.code == "configuration.invalid_store_schema"


# ---- the event loop and the synchronous face ---------------------------------------------------------------------


def test_a_commit_waiting_for_a_row_lock_leaves_the_loop_free(
    postgres_dsn: str, stores: list[PostgresRunStorage]
) -> None:
    store = open_store(stores, postgres_dsn)

    async def go() -> None:
        writer = RunWriter(store)
        f = await created_run(writer)
        blocker = await psycopg.AsyncConnection.connect(postgres_dsn)
        async with blocker:
            await blocker.execute(
                "SELECT 1 FROM bearagent.run_projections WHERE run_id = %s FOR UPDATE", (str(f.run_id),)
            )
            ticks = 0
            append = asyncio.create_task(
                writer.append(
                    f.event(HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=1))
                )
            )
            for _ in range(20):
                await asyncio.sleep(0.01)
                ticks += 1
            assert not append.done() and ticks == 20  # the commit waits on the server; this loop went on
            await blocker.rollback()
            assert (await asyncio.wait_for(append, 10)).last_sequence == 3

    asyncio.run(go())


def test_the_synchronous_face_works_inside_and_outside_loops(
    postgres_dsn: str, stores: list[PostgresRunStorage]
) -> None:
    store = open_store(stores, postgres_dsn)
    f = EventFactory(ids=Uuid4IdGenerator())
    store.append_many(
        [f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})), f.run_started()]
    )
    session = SessionRecord.model_validate(
        {
            "session_id": SESSION,
            "created_at": f.clock.now(),
            "updated_at": f.clock.now(),
            "agent_name": "build",
            "active_agent_name": "build",
            "title": None,
            "caller": "local",
        }
    )
    store.create_session(session)

    async def inside() -> None:  # as SessionService does, from inside the runtime's loop
        assert store.get_session(SESSION) == session
        assert store.resolve_run_ref("last") == f.run_id
        assert [e.sequence for e in store.read_events(f.run_id, 2)] == [2]

    asyncio.run(inside())
    asyncio.run(inside())  # and again from another loop
    run = store.get_run(f.run_id)
    assert run is not None and run.status == "running" and store.list_runs() == [run]
    assert store.latest_session(caller="local") == session and store.list_activities(f.run_id) == []


# ---- session locks -----------------------------------------------------------------------------------------------


def test_a_cancelled_waiter_and_a_closed_store_hold_no_lock(
    postgres_dsn: str, stores: list[PostgresRunStorage]
) -> None:
    first, second, third = (open_store(stores, postgres_dsn) for _ in range(3))

    async def go() -> None:
        async with first.session_lock(SESSION):

            async def wait_for_it() -> None:
                async with second.session_lock(SESSION):
                    raise AssertionError("never got it")

            waiter = asyncio.create_task(wait_for_it())
            await asyncio.sleep(0.2)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        async with second.session_lock(SESSION, wait=False):  # the cancelled attempt left nothing behind
            pass
        await third.session_lock(SESSION, wait=False).__aenter__()  # taken and never released...

    asyncio.run(go())
    third.close()  # ...until its store closes

    async def free() -> None:  # the server drops a closed connection's advisory locks as it notices the close
        async with first.session_lock(SESSION, timeout_s=10):
            pass

    asyncio.run(free())


def test_many_held_session_locks_share_one_connection(postgres_dsn: str, stores: list[PostgresRunStorage]) -> None:
    """Issue 37: the connections a process opens do not grow with its sessions (a thousand sessions of one server
    on a default `max_connections`); one handle's locks still exclude each other and other handles'."""
    one, other = open_store(stores, postgres_dsn), open_store(stores, postgres_dsn)
    sessions = [SessionId(f"22222222-2222-4222-8222-{n:012d}") for n in range(60)]

    async def go() -> None:
        async with contextlib.AsyncExitStack() as stack:
            for session in sessions:
                await stack.enter_async_context(one.session_lock(session, wait=False))
            held = postgres_cluster.other_connections(postgres_dsn)
            assert held <= 2, f"{held} connections for 60 held locks: one lock connection (and the pool's first)"
            with pytest.raises(SessionBusy):  # the same session on the same handle: refused before the server
                async with one.session_lock(sessions[7], wait=False):
                    pass
            with pytest.raises(SessionBusy):  # and on another handle: the server's advisory lock
                async with other.session_lock(sessions[7], wait=False):
                    pass
            await created_run(RunWriter(one))  # the pool too: still bounded
            assert postgres_cluster.other_connections(postgres_dsn) <= 2 * (DEFAULT_POOL_SIZE + 2), (
                "both handles, each pool + LISTEN + locks"
            )
        async with other.session_lock(sessions[7], wait=False):  # released with the stack
            pass
        async with one.session_lock(sessions[7], wait=False):
            pass

    asyncio.run(go())


# ---- free text the log must keep exactly (every store) -------------------------------------------------------------


@pytest.mark.parametrize("factory_name", sorted(FACTORIES))
def test_nul_characters_and_key_order_survive_every_store(factory_name: str, tmp_path: Path) -> None:
    factory = FACTORIES[factory_name]
    store = factory.open(factory.location(tmp_path))
    text = "a\u0000b \u2028 \U0001f43b"

    async def go() -> None:
        writer = RunWriter(store)
        f = await created_run(writer, goal=f"goal {text}", session_id=SESSION)
        hook = f.event(HookExecutedV1(hook_event="Stop", handler=text, handler_type="command", duration_ms=0))
        done = f.event(RunSucceededV2(final_text=text))
        await writer.append_many([hook, done])
        events = await store.fetch_events(f.run_id)
        assert [e.model_dump_json() for e in events[2:]] == [hook.model_dump_json(), done.model_dump_json()]
        run = await store.fetch_run(f.run_id)
        assert run is not None and run.goal == f"goal {text}" and run.final_text == text
        record = SessionRecord.model_validate(
            {
                "session_id": SESSION,
                "created_at": f.clock.now(),
                "updated_at": f.clock.now(),
                "agent_name": "build",
                "active_agent_name": "build",
                "title": text,
                "caller": "local",
            }
        )
        await store.insert_session(record)
        await store.allow_in_session(SESSION, f"Bash(echo {text})")
        await store.queue_session_facts(SESSION, [{"z": 1, "a": text}])
        stored = await store.fetch_session(SESSION)
        assert stored is not None and stored.title == text and stored.allowed_rules == (f"Bash(echo {text})",)
        facts = await store.take_session_facts(SESSION)
        assert facts == [{"z": 1, "a": text}] and list(facts[0]) == ["z", "a"]  # pyright: ignore[reportArgumentType]

    try:
        asyncio.run(go())
    finally:
        factory.close(store)

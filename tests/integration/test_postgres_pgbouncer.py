"""The PostgreSQL store behind a real PgBouncer in transaction mode (`store.pooler: transaction`, issue 37): each
transaction may run on any of the pooler's server connections, so nothing may stay on one. Without the setting the
store fails with the error that names it (psycopg's prepared statements meet each other on a shared server
connection); with it, session locks are leases that hold across processes, are renewed while held and free
themselves once a killed holder's lease runs out; commit notices reach a listener only on a direct connection.
The fleet of four workers and 200 sessions through the same pooler is in tests/scale/test_workers.py."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from tests.support import pgbouncer, postgres_cluster

from bearagent.domain.ids import SessionId
from bearagent.domain.state import SessionRecord
from bearagent.ports import CommitNotice
from bearagent.store.errors import StoreError
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.session_lock import SessionBusy

LEASE_S = 3.0
"""The holder's lease in these tests (production: 30 s). It renews every third of it, so a holder process starved
of the CPU for up to two seconds (a loaded machine) still keeps its lock."""

HOLDER = """
import asyncio, sys
from bearagent.domain.ids import SessionId
from bearagent.store.postgres import PostgresRunStorage

async def main() -> None:
    store = PostgresRunStorage(sys.argv[1], schema="pooled", transaction_pooler=True, lock_lease_s=float(sys.argv[3]))
    async with store.session_lock(SessionId(sys.argv[2]), wait=False):
        print("held", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[postgres_cluster.Cluster]:
    """A cluster of this module, with its database `pooled`."""
    if (why := pgbouncer.unavailable()) is not None:
        pytest.skip(why)
    with postgres_cluster.own_cluster(max_connections=20) as running:
        postgres_cluster.database_in(running, "pooled")
        yield running


@pytest.fixture
def pooled(cluster: postgres_cluster.Cluster) -> Iterator[tuple[postgres_cluster.Cluster, str]]:
    """The cluster, and the DSN of its database `pooled` through a PgBouncer of this test alone, in transaction mode
    with ONE server connection: every transaction of every client runs on it, so what a client leaves on a server
    connection meets the others at once."""
    with pgbouncer.transaction_pooler(cluster, "pooled", pool_size=1) as pooler:
        yield cluster, pooler.dsn


def test_without_the_pooler_setting_the_store_fails_naming_it(pooled: tuple[postgres_cluster.Cluster, str]) -> None:
    _cluster, dsn = pooled
    # two stores opened one after the other, each migrating its schema: psycopg prepares the migrations' repeated
    # INSERT on its 6th execution, and the second store's meets the first's on the pooler's one server connection
    first, second = PostgresRunStorage(dsn, schema="unaware_a"), PostgresRunStorage(dsn, schema="unaware_b")
    try:
        assert first.schema_version >= 7
        with pytest.raises(StoreError) as caught:
            asyncio.run(second.fetch_sessions(limit=5))
    finally:
        first.close()
        second.close()
    assert caught.value.info.code == "storage.pooler", caught.value.info.message
    assert caught.value.hint is not None and "pooler: transaction" in caught.value.hint


def test_with_the_pooler_setting_the_same_reads_and_writes_pass(pooled: tuple[postgres_cluster.Cluster, str]) -> None:
    _cluster, dsn = pooled
    stores = [PostgresRunStorage(dsn, schema=f"aware_{n}", transaction_pooler=True) for n in range(2)]
    stores.append(PostgresRunStorage(dsn, schema="aware_0", transaction_pooler=True))  # a second handle of one

    async def work() -> None:
        for _ in range(20):
            await asyncio.gather(*(s.fetch_sessions(limit=5) for s in stores), *(s.fetch_runs(limit=5) for s in stores))
        at = datetime.now(UTC)
        session = SessionRecord(
            session_id=SessionId(str(uuid.uuid4())),
            created_at=at,
            updated_at=at,
            agent_name="build",
            active_agent_name="build",
            title=None,
            caller="local",
        )
        assert await stores[0].insert_session(session) == session
        for n, s in enumerate((stores[0], stores[2])):  # writes through either handle, read back through the other
            await s.queue_session_facts(session.session_id, [f"fact {n}"])
        assert sorted(str(f) for f in await stores[2].take_session_facts(session.session_id)) == ["fact 0", "fact 1"]
        assert await stores[2].fetch_session(session.session_id) == session

    try:
        asyncio.run(work())
        assert stores[0].schema_version == stores[1].schema_version >= 7  # both schemas migrated through the pooler
    finally:
        for s in stores:
            s.close()


@pytest.mark.slow  # ~8 s: two leases held through renewals, then one left to run out
def test_a_session_lock_holds_across_processes_and_frees_itself_when_its_holder_is_killed(
    pooled: tuple[postgres_cluster.Cluster, str],
) -> None:
    cluster, dsn = pooled
    session = SessionId(str(uuid.uuid4()))
    holder = subprocess.Popen(  # this environment's: its bytecode goes where the suite's goes (tests/conftest.py)
        [sys.executable, "-c", HOLDER, dsn, str(session), str(LEASE_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    store = PostgresRunStorage(dsn, schema="pooled", transaction_pooler=True, lock_lease_s=LEASE_S)

    async def refused() -> bool:
        try:
            async with store.session_lock(session, wait=False):
                return False
        except SessionBusy:
            return True

    async def scenario() -> float:
        assert await refused(), "another process took the lock it holds"
        await asyncio.sleep(2 * LEASE_S)  # past the first lease: only the holder's renewals keep it
        assert holder.poll() is None and await refused(), "the holder's lease ran out while it lived"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        killed = time.monotonic()
        async with store.session_lock(session, wait=True, timeout_s=30):
            freed = time.monotonic() - killed
            assert await refused(), "a second local run of the session got in beside the first"
        return freed

    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        assert line == "held\n", line + (holder.stderr.read() if holder.stderr and holder.poll() is not None else "")
        freed = asyncio.run(scenario())
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        store.close()
    assert freed < 10 * LEASE_S, f"the dead holder's lock was freed only after {freed:.1f} s"
    with psycopg.connect(cluster.dsn("pooled"), autocommit=True) as conn:  # the last holder released its row
        row = conn.execute("SELECT count(*) FROM pooled.session_locks").fetchone()
    assert row == (0,)


def test_notices_come_over_a_direct_connection_and_are_not_listened_for_through_the_pooler(
    pooled: tuple[postgres_cluster.Cluster, str],
) -> None:
    cluster, dsn = pooled
    direct = PostgresRunStorage(dsn, schema="pooled", transaction_pooler=True, listen_dsn=cluster.dsn("pooled"))
    pooled_only = PostgresRunStorage(dsn, schema="pooled", transaction_pooler=True)
    heard: list[CommitNotice] = []
    unheard: list[CommitNotice] = []

    async def scenario() -> None:
        stop_direct = direct.commits.subscribe(heard.append)
        stop_pooled = pooled_only.commits.subscribe(unheard.append)
        await direct.commits.wait_listening()
        with psycopg.connect(dsn, autocommit=True) as conn:  # a commit's notice, sent through the pooler
            conn.execute("SELECT pg_notify('bearagent_runs', 'pooled r-1 3 succeeded')")
        deadline = time.monotonic() + 10
        while not heard and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        stop_direct()
        stop_pooled()

    try:
        asyncio.run(scenario())
        assert pooled_only.commits.listening == frozenset()
    finally:
        direct.close()
        pooled_only.close()
    assert heard == [CommitNotice("r-1", 3, "succeeded")]
    assert unheard == []

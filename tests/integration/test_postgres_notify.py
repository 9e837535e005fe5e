"""Commit notices over LISTEN/NOTIFY (`store/postgres/notify.py`): a commit through one store handle (as another
process would make it) wakes the listeners of another handle at once, with the run, its sequence and state; other
schemas' commits are not theirs; and `follow_run` over the listening handle delivers a run another handle writes
without waiting for its poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.domain.run_events import RunCreatedV2, RunSucceededV2
from bearagent.ports import CommitNotice, commit_feed
from bearagent.runtime import streaming
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.postgres import PostgresRunStorage

CREATED = {"goal": "g", "agent_name": "build", "prompt_hash": "0" * 64}


@pytest.fixture
def stores(postgres_dsn: str) -> Iterator[list[PostgresRunStorage]]:
    opened: list[PostgresRunStorage] = []
    yield opened
    for store in opened:
        store.close()


def test_a_commit_elsewhere_is_noticed_at_once(postgres_dsn: str, stores: list[PostgresRunStorage]) -> None:
    listening = PostgresRunStorage(postgres_dsn, schema="notify_a")
    writing = PostgresRunStorage(postgres_dsn, schema="notify_a")
    other_schema = PostgresRunStorage(postgres_dsn, schema="notify_b")
    stores.extend([listening, writing, other_schema])

    async def go() -> list[CommitNotice]:
        feed = commit_feed(listening)
        assert feed is not None
        seen: list[CommitNotice] = []
        got = asyncio.Event()

        def listener(notice: CommitNotice) -> None:
            seen.append(notice)
            if notice.status == "succeeded":
                got.set()

        stop = feed.subscribe(listener)
        await listening.commits.wait_listening()
        f = EventFactory(ids=Uuid4IdGenerator())
        await RunWriter(other_schema).append(  # another schema's commit is not this store's
            EventFactory(ids=Uuid4IdGenerator()).event(
                RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})
            )
        )
        writer = RunWriter(writing)
        await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
        await writer.append(f.run_started())
        await writer.append(f.event(RunSucceededV2(final_text="done")))
        await asyncio.wait_for(got.wait(), 5)
        stop()
        return seen

    seen = asyncio.run(go())
    assert [(n.last_sequence, n.status) for n in seen] == [(1, "queued"), (2, "running"), (3, "succeeded")]
    assert len({n.run_id for n in seen}) == 1


def test_follow_run_wakes_on_a_notice_not_its_poll(
    postgres_dsn: str, stores: list[PostgresRunStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "POLL_INTERVAL_S", 30.0)  # only a notice can wake the reader in time
    reading = PostgresRunStorage(postgres_dsn, schema="notify_c")
    writing = PostgresRunStorage(postgres_dsn, schema="notify_c")
    stores.extend([reading, writing])

    async def go() -> tuple[list[str], float]:
        f = EventFactory(ids=Uuid4IdGenerator())
        writer = RunWriter(writing)
        await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
        await writer.append(f.run_started())
        types: list[str] = []

        async def read() -> None:
            async for event in streaming.follow_run(reading, None, f.run_id):
                types.append(str(getattr(event, "type", "")))

        reader = asyncio.create_task(read())
        await reading.commits.wait_listening()
        await asyncio.sleep(0.2)  # the reader caught up and waits
        started = time.monotonic()
        await writer.append(f.event(RunSucceededV2(final_text="done")))
        await asyncio.wait_for(reader, 10)
        return types, time.monotonic() - started

    types, waited = asyncio.run(go())
    assert types[-1] == "run.succeeded"
    assert waited < 5.0  # woken by the notice (the poll would take 30 s)

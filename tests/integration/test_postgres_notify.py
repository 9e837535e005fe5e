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
from bearagent.store.postgres import PostgresRunStorage, notify

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
        await reading.commits.wait_listening(run_id=str(f.run_id))  # the follower listens on the run's channel
        await asyncio.sleep(0.2)  # the reader caught up and waits
        started = time.monotonic()
        await writer.append(f.event(RunSucceededV2(final_text="done")))
        await asyncio.wait_for(reader, 10)
        return types, time.monotonic() - started

    types, waited = asyncio.run(go())
    assert types[-1] == "run.succeeded"
    assert waited < 5.0  # woken by the notice (the poll would take 30 s)


def test_step_commits_go_to_the_runs_own_channel_not_the_lifecycle_channel(
    postgres_dsn: str, stores: list[PostgresRunStorage]
) -> None:
    """Issue 37: a worker (lifecycle listener) hears a run created, started and ended, not its every step; a follower
    of the run hears every commit; a follower of another run hears none of it; and a channel nobody needs any more is
    left (UNLISTEN)."""
    listening = PostgresRunStorage(postgres_dsn, schema="notify_d")
    writing = PostgresRunStorage(postgres_dsn, schema="notify_d")
    stores.extend([listening, writing])

    async def go() -> tuple[list[CommitNotice], list[CommitNotice], list[CommitNotice], frozenset[str]]:
        f = EventFactory(ids=Uuid4IdGenerator())
        lifecycle: list[CommitNotice] = []
        own: list[CommitNotice] = []
        other: list[CommitNotice] = []
        ended = asyncio.Event()

        def on_own(notice: CommitNotice) -> None:
            own.append(notice)
            if notice.status == "succeeded":
                ended.set()

        stops = [
            listening.commits.subscribe(lifecycle.append),
            listening.commits.subscribe(on_own, str(f.run_id)),
            listening.commits.subscribe(other.append, "not-this-run"),
        ]
        await listening.commits.wait_listening()
        await listening.commits.wait_listening(run_id=str(f.run_id))
        await listening.commits.wait_listening(run_id="not-this-run")
        writer = RunWriter(writing)
        await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
        await writer.append(f.run_started())
        for _ in range(3):
            await writer.append_many(f.model_call())
        await writer.append(f.event(RunSucceededV2(final_text="done")))
        await asyncio.wait_for(ended.wait(), 5)
        await asyncio.sleep(0.2)  # any stray notice would have come by now
        stops[1]()
        stops[2]()

        async def left() -> frozenset[str]:
            for _ in range(200):
                if len(listening.commits.listening) == 1:
                    break
                await asyncio.sleep(0.01)
            return listening.commits.listening

        still = await left()
        stops[0]()
        return lifecycle, own, other, still

    lifecycle, own, other, still = asyncio.run(go())
    assert [(n.last_sequence, n.status) for n in lifecycle] == [(1, "queued"), (2, "running"), (12, "succeeded")]
    assert [n.last_sequence for n in own] == [1, 2, 5, 8, 11, 12]
    assert other == []
    assert still == frozenset({notify.LIFECYCLE_CHANNEL})


def test_run_channels_are_plain_identifiers_per_schema_and_run() -> None:
    one = notify.run_channel("team_a", "01J0000000000000000000000")
    assert one.startswith("bearagent_run_") and len(one) < 64 and one.replace("_", "").isalnum() and one.islower()
    assert one != notify.run_channel("team_b", "01J0000000000000000000000")
    assert one != notify.run_channel("team_a", "01J0000000000000000000001")
    assert notify.is_lifecycle("running", ["RunStarted"]) and notify.is_lifecycle("waiting", ["ApprovalRequested"])
    assert not notify.is_lifecycle("running", ["ModelCallRequested", "ModelCallCompleted"])

"""The store contract: what every implementation of the async storage port (`ports.RunStorage`) must do.

Parametrised over `tests.support.storage_factories.FACTORIES`; a new store adds its factory there and passes this
suite unchanged. The run writer (`runtime/run_writer.py`) drives most tests, as in the runtime; the conflict tests
commit directly, to pin what the port itself promises. "Another writer" is a second handle on the same backing
store and, where processes matter (lock, racing appends), a real second process (`tests.support.storage_worker`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar, cast

import pytest
from tests.support.events import (
    SEED_LIMITS,
    SEED_RUN_ID,
    SEED_SESSION_ID,
    EventFactory,
    seed_001_steps,
)
from tests.support.storage_factories import FACTORIES, StorageFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import DeterministicIdGenerator, RunId, SessionId, Uuid4IdGenerator
from bearagent.domain.run_events import (
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    HookExecutedV1,
    RunCancelledV1,
    RunCreatedV2,
)
from bearagent.domain.state import SessionRecord
from bearagent.ports import ActivityIdTaken, EventIdTaken, RunStorage, VersionConflict, WorkspaceStore
from bearagent.runtime.reducer import BudgetExceeded, InvalidTransition, SequenceConflict
from bearagent.runtime.run_refs import resolve_run_ref
from bearagent.runtime.run_writer import Committed, Published, RunWriter, prepare_commit
from bearagent.service.queue import pending_runs

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Harness:
    factory: StorageFactory
    location: str
    handles: list[RunStorage]
    tmp: Path

    def fresh(self) -> RunStorage:
        """A handle on another, empty backing store."""
        handle = self.factory.open(self.factory.location(self.tmp / "fresh"))
        self.handles.append(handle)
        return handle

    def open(self) -> RunStorage:
        """Another handle on the same backing store (another connection, as another process would have)."""
        handle = self.factory.open(self.location)
        self.handles.append(handle)
        return handle

    def worker(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.storage_worker", self.factory.name, self.location, *args],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture(params=sorted(FACTORIES))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    factory = FACTORIES[request.param]
    h = Harness(factory, factory.location(tmp_path), [], tmp_path)
    yield h
    for handle in h.handles:
        factory.close(handle)


T = TypeVar("T")


def run(make: Callable[[], Awaitable[T]]) -> T:
    async def go() -> T:
        return await make()

    return asyncio.run(go())


async def started(
    writer: RunWriter, limits: BudgetLimits | None = None, created: Mapping[str, object] | None = None
) -> EventFactory:
    f = EventFactory(ids=DeterministicIdGenerator()) if not created else EventFactory(ids=Uuid4IdGenerator())
    if created:
        await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **created})))
    else:
        await writer.append(f.run_created(limits))
    await writer.append(f.run_started())
    return f


def hook(f: EventFactory, n: int = 0) -> HookExecutedV1:
    return HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=n)


CREATED = {"goal": "g", "agent_name": "build", "prompt_hash": "0" * 64}

# ---- commits through the writer ---------------------------------------------------------------------------------


def test_seed_001_event_by_event_matches_the_reducer(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        for index, step in enumerate(seed_001_steps(), start=1):
            returned = await writer.append(step.event)
            stored = await storage.fetch_run(SEED_RUN_ID)
            assert stored is not None and stored == returned
            assert stored.last_sequence == index and stored.status == step.run_status
            assert stored.usage.total_tokens == step.total_tokens
            assert stored.session_id == SEED_SESSION_ID and stored.budget_limits == SEED_LIMITS
            loaded = await storage.load_run(SEED_RUN_ID)
            assert loaded is not None and loaded.version == index
            assert loaded.state.to_projection() == stored
            activities = {a.activity_id: a for a in await storage.fetch_activities(SEED_RUN_ID)}
            if step.activity is not None:
                assert activities[step.activity].status == step.activity_status
            active = [a.activity_id for a in activities.values() if a.status in ("pending", "running")]
            assert active == ([stored.active_activity_id] if stored.active_activity_id else [])
            assert (loaded.active is None) == (stored.active_activity_id is None)
        assert [a.requested_sequence for a in await storage.fetch_activities(SEED_RUN_ID)] == [3, 6, 9, 12, 15]

    run(go)
    # a new handle (a restart) reads the same facts
    again = harness.open()
    final = run(lambda: again.fetch_run(SEED_RUN_ID))
    assert final is not None and final.status == "succeeded" and final.usage.total_tokens == 1300


def test_events_come_back_exactly_as_committed(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        f = await started(writer)
        payload = HookExecutedV1(hook_event="Stop", handler='ünïcødé \u2028 "q"', handler_type="command", duration_ms=7)
        batch = [f.event(payload), *f.model_call(3, 4)]
        await writer.append_many(batch)
        got = await storage.fetch_events(f.run_id)
        assert [e.sequence for e in got] == list(range(1, 7))
        assert got[2:] == batch and [e.model_dump_json() for e in got[2:]] == [e.model_dump_json() for e in batch]
        assert [e.sequence for e in await storage.fetch_events(f.run_id, after_sequence=3)] == [4, 5, 6]
        assert [e.sequence for e in await storage.fetch_events(f.run_id, after_sequence=1, limit=2)] == [2, 3]
        assert await storage.fetch_events(f.run_id, after_sequence=6) == []
        assert await storage.fetch_events(RunId.new()) == []
        assert await storage.fetch_run(RunId.new()) is None and await storage.load_run(RunId.new()) is None

    run(go)


def test_a_refused_batch_writes_nothing(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        f = await started(writer, BudgetLimits(max_tool_calls=1))
        before = await storage.fetch_run(f.run_id)
        batch = [*f.tool_call("Read"), f.event(hook(f))]
        with pytest.raises(InvalidTransition):  # a second Started of the same activity: the whole batch goes
            await writer.append_many([*batch, f.tool_started()])
        assert await storage.fetch_run(f.run_id) == before
        assert await storage.fetch_events(f.run_id, after_sequence=2) == []
        f.sequence = 2
        await writer.append_many(f.tool_call("Read"))
        f.sequence = 5
        with pytest.raises(BudgetExceeded):
            await writer.append(f.tool_requested("Read"))
        assert (await storage.fetch_run(f.run_id)) == (await storage.load_run(f.run_id)).state.to_projection()  # pyright: ignore[reportOptionalMemberAccess]
        assert len(await storage.fetch_events(f.run_id)) == 5

    run(go)


# ---- versions and conflicts -------------------------------------------------------------------------------------


def test_a_commit_at_a_stale_version_is_refused_and_writes_nothing(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        f = await started(RunWriter(storage))
        stored = await storage.load_run(f.run_id)
        assert stored is not None and stored.version == 2
        stale = prepare_commit(stored, [f.event(hook(f))])
        await storage.commit(stale)
        with pytest.raises(VersionConflict) as caught:
            await storage.commit(replace(stale, events=[f.event(hook(f, 1), sequence=3)]))
        assert caught.value.stored_version == 3
        with pytest.raises(VersionConflict) as again:  # a "new" run whose id is taken
            await storage.commit(replace(stale, expected_version=0))
        assert again.value.stored_version == 3
        assert [e.sequence for e in await storage.fetch_events(f.run_id)] == [1, 2, 3]
        assert (await storage.fetch_events(f.run_id))[2] == stale.events[0]

    run(go)


def test_two_handles_racing_for_a_sequence_one_wins(harness: Harness) -> None:
    first, second = harness.open(), harness.open()

    async def go() -> None:
        a, b = RunWriter(first), RunWriter(second)
        f = await started(a)
        await b.append(f.event(hook(f)))  # b learns the run at version 3
        f.sequence = 2  # a believes it is at 2 (its cache), b moved it on
        with pytest.raises(SequenceConflict):
            await a.append(f.event(hook(f, 1)))
        f.sequence = 3
        await a.append(f.event(hook(f, 2)))  # a reloads and continues
        f.sequence = 3
        with pytest.raises(SequenceConflict):  # b's cache is stale now
            await b.append(f.event(hook(f, 3)))
        assert [e.payload["duration_ms"] for e in (await second.fetch_events(f.run_id))[2:]] == [0, 2]

    run(go)


def test_duplicate_event_and_activity_ids_are_refused(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        f = await started(writer)
        taken = (await storage.fetch_events(f.run_id))[0].event_id
        dup = f.event(hook(f), event_id=taken)
        with pytest.raises(EventIdTaken):
            await storage.commit(prepare_commit(await storage.load_run(f.run_id), [dup]))
        with pytest.raises(InvalidTransition, match="already holds this event id"):
            await writer.append(dup)
        f.rejected()
        await writer.append_many(f.model_call(1, 1))
        again = f.model_requested(activity_id=f.activity_id)
        with pytest.raises(ActivityIdTaken):
            await storage.commit(prepare_commit(await storage.load_run(f.run_id), [again]))
        with pytest.raises(InvalidTransition, match="already has this activity"):
            await writer.append(again)
        assert len(await storage.fetch_events(f.run_id)) == 5

    run(go)


@pytest.mark.slow
def test_processes_appending_to_one_run_never_share_a_sequence(harness: Harness) -> None:
    storage = harness.open()
    f = run(lambda: started(RunWriter(storage)))
    workers = [harness.worker("append", str(f.run_id), "25") for _ in range(2)]

    async def alongside() -> int:  # this process appends too, on its own handle, while they run
        writer, ok = RunWriter(storage), 0
        while ok < 25:
            current = await storage.fetch_run(f.run_id)
            assert current is not None
            f.sequence = current.last_sequence
            try:
                await writer.append(f.event(hook(f, ok)))
                ok += 1
            except SequenceConflict:
                pass
        return ok

    assert run(alongside) == 25
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
        assert out.startswith("ok 25 conflicts ")
    events = run(lambda: storage.fetch_events(f.run_id))
    assert [e.sequence for e in events] == list(range(1, 78))
    assert len({e.event_id for e in events}) == 77


# ---- reads ------------------------------------------------------------------------------------------------------


def test_runs_filter_and_order_newest_first(harness: Harness) -> None:
    storage = harness.open()
    session = SessionId("22222222-2222-4222-8222-222222222222")

    async def go() -> None:
        writer = RunWriter(storage)
        parent = await started(writer, created={**CREATED, "session_id": session})
        child = await started(writer, created={**CREATED, "session_id": session, "parent_run_id": parent.run_id})
        other = await started(writer, created=CREATED)
        await writer.append(other.run_succeeded())
        newest_first = [r.run_id for r in await storage.fetch_runs()]
        assert newest_first == [other.run_id, child.run_id, parent.run_id]
        assert [r.run_id for r in await storage.fetch_runs(session_id=session)] == [child.run_id, parent.run_id]
        assert [r.run_id for r in await storage.fetch_runs(parent_run_id=parent.run_id)] == [child.run_id]
        assert [r.run_id for r in await storage.fetch_runs(status="succeeded")] == [other.run_id]
        assert [r.run_id for r in await storage.fetch_runs(limit=1)] == [other.run_id]
        oldest = [r.run_id for r in await storage.fetch_runs(oldest_first=True)]
        assert oldest == list(reversed(newest_first))  # a queue's head first
        assert [r.run_id for r in await storage.fetch_runs(limit=1, oldest_first=True)] == [newest_first[-1]]
        assert await storage.fetch_runs(status="cancelled") == []

    run(go)


def test_run_statuses_are_read_in_one_call_and_unknown_ids_left_out(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        running = await started(writer, created=CREATED)
        done = await started(writer, created=CREATED)
        await writer.append(done.run_succeeded())
        # more ids than one statement's parameter list holds (the SQLite store reads 500 at a time)
        unknown = [RunId(f"33333333-3333-4333-8333-{n:012d}") for n in range(700)]
        asked = [*unknown[:350], done.run_id, *unknown[350:], running.run_id]
        assert await storage.fetch_run_statuses(asked) == {running.run_id: "running", done.run_id: "succeeded"}
        assert await storage.fetch_run_statuses([]) == {}

    run(go)


def test_the_queue_heads_are_each_lanes_oldest_queued_run_of_lanes_not_busy(harness: Harness) -> None:
    # a worker reads only the heads it could take (`service/queue.py`), so the store must pick them: one per session
    # (its oldest queued top-level run), none of a session whose run is running, every run without a session
    storage = harness.open()
    free, busy, other = (SessionId(f"44444444-4444-4444-8444-00000000000{n}") for n in (1, 2, 3))

    async def queued(writer: RunWriter, **fields: object) -> RunId:
        return (await queued_factory(writer, **fields)).run_id

    async def queued_factory(writer: RunWriter, **fields: object) -> EventFactory:
        f = EventFactory(ids=Uuid4IdGenerator())
        await writer.append(
            f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED, **fields}))
        )
        return f

    async def go() -> None:
        writer = RunWriter(storage)
        assert await storage.fetch_queue_heads(10) == []
        alone = await queued(writer)
        free_first = await queued(writer, session_id=free)
        running = await started(writer, created={**CREATED, "session_id": busy})
        await queued(writer, session_id=busy)  # behind its session's running run
        await queued(writer, session_id=free)  # behind `free_first`
        await queued(writer, session_id=other, parent_run_id=running.run_id)  # a subagent's run is no lane's head
        other_first = await queued(writer, session_id=other)
        alone_too = await queued(writer)
        ended = await queued_factory(writer, session_id=SessionId("44444444-4444-4444-8444-000000000009"))
        await writer.append(ended.event(RunCancelledV1(reason="cancelled before it started")))  # not queued now
        heads = [r.run_id for r in await storage.fetch_queue_heads(10)]
        assert heads == [alone, free_first, other_first, alone_too]
        assert [r.run_id for r in await storage.fetch_queue_heads(2)] == [alone, free_first]
        # the running run ends: its session's queued run is the lane's head now, in its place by age
        await writer.append(running.run_succeeded())
        assert len(await storage.fetch_queue_heads(10)) == 5

    run(go)


def test_answered_waiting_runs_are_listed_apart_from_the_unanswered(harness: Harness) -> None:
    # a worker's scan asks for waiting runs whose approval has its answer: unanswered ones (nobody may ever answer)
    # never take the limit's places (`service/queue.py`)
    storage = harness.open()

    async def waiting(writer: RunWriter, *, answer: bool) -> RunId:
        f = await started(writer, created=CREATED)
        await writer.append(f.tool_requested("Bash"))
        await writer.append(f.tool_started())
        assert f.activity_id is not None and f.tool_call_id is not None
        asked = ApprovalRequestedV1(
            approval_id="ap1",
            activity_id=f.activity_id,
            tool_call_id=f.tool_call_id,
            tool_name="Bash",
            arguments={"command": "make"},
            reason="Bash asks in default mode",
        )
        await writer.append(f.event(asked))
        if answer:
            decided = {"approval_id": "ap1", "decision": "allow_once", "answered_by": "cli:test"}
            await writer.append(f.event(ApprovalResolvedV1.model_validate(decided)))
        return f.run_id

    async def go() -> None:
        writer = RunWriter(storage)
        oldest = await waiting(writer, answer=True)
        unanswered = [await waiting(writer, answer=False) for _ in range(3)]
        newest = await waiting(writer, answer=True)
        everyone = [r.run_id for r in await storage.fetch_runs(status="waiting")]
        assert everyone == [newest, *reversed(unanswered), oldest]
        answered = await storage.fetch_runs(status="waiting", answered=True, limit=2)
        assert [r.run_id for r in answered] == [newest, oldest]
        assert all(r.pending_approval is not None and r.pending_approval.decision for r in answered)
        oldest_first = await storage.fetch_runs(status="waiting", answered=True, limit=1, oldest_first=True)
        assert [r.run_id for r in oldest_first] == [oldest]
        assert [r.run_id for r in await storage.fetch_runs(answered=True)] == [newest, oldest]
        # a worker's scan with room for two runs of each state still finds both answered runs behind the three
        # unanswered (it looked only at the newest waiting ones and left `oldest` waiting for good)
        found = await pending_runs(cast(WorkspaceStore, storage), limit=2)
        assert {(p.run.run_id, p.action) for p in found} == {(newest, "resume"), (oldest, "resume")}

    run(go)


def test_runs_are_found_by_prefix_and_references_resolve(harness: Harness) -> None:
    storage = harness.open()
    ids = [RunId("aaaa0000-0000-4000-8000-000000000001"), RunId("aaaa0000-0000-4000-8000-000000000002")]
    child = RunId("bbbb0000-0000-4000-8000-000000000003")

    async def go() -> None:
        writer = RunWriter(storage)
        for run_id in ids:
            f = EventFactory(run_id, ids=Uuid4IdGenerator())
            await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
        f = EventFactory(child, ids=Uuid4IdGenerator())
        await writer.append(
            f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED, "parent_run_id": ids[0]}))
        )
        assert await storage.find_runs("aaaa") == [ids[1], ids[0]]
        assert await storage.find_runs("aaaa", limit=1) == [ids[1]]
        assert await storage.find_runs(str(ids[0])) == [ids[0]]
        assert await storage.find_runs("") == [child, ids[1], ids[0]]
        assert await storage.find_runs("", top_level=True, limit=1) == [ids[1]]
        assert await storage.find_runs("c") == [] and await storage.find_runs("a*") == []
        assert await resolve_run_ref(storage, "last") == ids[1]
        assert await resolve_run_ref(storage, "BBBB") == child
        assert await resolve_run_ref(storage, f" {str(ids[0]).upper()} ") == ids[0]
        for ref, code in (("aaaa", "ambiguous_run_ref"), ("cc", "run"), ("x?", "bad_run_ref"), ("", "bad_run_ref")):
            with pytest.raises(BearAgentError) as caught:
                await resolve_run_ref(storage, ref)
            assert caught.value.info.code.endswith(code), ref

    run(go)
    empty = harness.fresh()
    with pytest.raises(BearAgentError) as caught:
        run(lambda: resolve_run_ref(empty, "last"))
    assert caught.value.info.code.endswith("no_runs")


# ---- sessions ---------------------------------------------------------------------------------------------------


def _session(n: int, *, caller: str = "local", minutes: int = 0) -> SessionRecord:
    at = datetime(2026, 8, 18, 2, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return SessionRecord(
        session_id=SessionId(f"22222222-2222-4222-8222-00000000000{n}"),
        created_at=at,
        updated_at=at,
        agent_name="build",
        active_agent_name="build",
        title=None,
        caller=caller,
    )


def test_sessions_insert_save_and_list(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        one, two, three = _session(1), _session(2, minutes=1), _session(3, caller="api", minutes=2)
        for s in (one, two, three):
            assert await storage.insert_session(s) == s
        with pytest.raises(BearAgentError) as exists:
            await storage.insert_session(one)
        assert exists.value.info.code == "conflict.session_exists"
        assert [s.session_id for s in await storage.fetch_sessions()] == [
            three.session_id,
            two.session_id,
            one.session_id,
        ]
        assert [s.session_id for s in await storage.fetch_sessions(caller="local", limit=1)] == [two.session_id]
        moved = one.model_copy(
            update={"updated_at": one.updated_at + timedelta(hours=1), "title": "t", "active_agent_name": "plan"}
        )
        await storage.save_session(moved)
        assert await storage.fetch_session(one.session_id) == moved
        assert (await storage.fetch_sessions(caller="local"))[0] == moved
        with pytest.raises(BearAgentError) as missing:
            await storage.save_session(_session(9))
        assert missing.value.info.code == "not_found.session"
        assert await storage.fetch_session(_session(9).session_id) is None

    run(go)


def test_allow_always_answers_add_up_and_survive_a_stale_save(harness: Harness) -> None:
    first, second = harness.open(), harness.open()

    async def go() -> None:
        session = _session(1)
        await first.insert_session(session)
        await first.allow_in_session(session.session_id, "Bash(git status)")
        await second.allow_in_session(session.session_id, "Write")
        await second.allow_in_session(session.session_id, "Write")  # once
        await first.save_session(session.model_copy(update={"title": "stale copy"}))  # loaded before the answers
        stored = await second.fetch_session(session.session_id)
        assert stored is not None and stored.title == "stale copy"
        assert stored.allowed_rules == ("Bash(git status)", "Write")
        with pytest.raises(BearAgentError) as missing:
            await first.allow_in_session(_session(9).session_id, "Read")
        assert missing.value.info.code == "not_found.session"

    run(go)


def test_session_facts_are_kept_in_order_and_taken_once(harness: Harness) -> None:
    first, second = harness.open(), harness.open()

    async def go() -> None:
        session = _session(1)
        await first.insert_session(session)
        await first.queue_session_facts(session.session_id, [{"n": 1}])
        await second.queue_session_facts(session.session_id, [{"n": 2}, {"n": 3}])
        assert await second.take_session_facts(session.session_id) == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert await first.take_session_facts(session.session_id) == []
        await first.queue_session_facts(_session(9).session_id, [{"n": 4}])  # no such session: nothing kept
        assert await first.take_session_facts(_session(9).session_id) == []

    run(go)


def test_leases_keep_the_latest_heartbeat_per_run(harness: Harness) -> None:
    storage = harness.open()
    one, two = RunId("11111111-1111-4111-8111-000000000001"), RunId("11111111-1111-4111-8111-000000000002")
    at = datetime(2026, 8, 18, 2, 0, tzinfo=UTC)

    async def go() -> None:
        assert await storage.fetch_heartbeats([one]) == {}
        await storage.renew_leases([one, two], at)
        await storage.renew_leases([two], at + timedelta(seconds=20))
        assert await storage.fetch_heartbeats([one, two]) == {one: at, two: at + timedelta(seconds=20)}
        assert await storage.fetch_heartbeats([]) == {}

    run(go)


def test_a_cancel_request_is_kept_for_the_process_that_executes_the_run(harness: Harness) -> None:
    storage = harness.open()
    one, two = RunId("11111111-1111-4111-8111-000000000001"), RunId("11111111-1111-4111-8111-000000000002")
    at = datetime(2026, 8, 18, 2, 0, tzinfo=UTC)

    async def go() -> None:
        assert await storage.fetch_cancel_requests([one, two]) == {}
        await storage.request_cancel(one, "cancelled over the HTTP API by ada", at)
        await storage.request_cancel(one, "a second request", at + timedelta(seconds=1))  # the first one stays
        assert await storage.fetch_cancel_requests([one, two]) == {one: "cancelled over the HTTP API by ada"}
        assert await storage.fetch_cancel_requests([]) == {}

    run(go)


# ---- the session lock -------------------------------------------------------------------------------------------


def test_the_session_lock_admits_one_holder_across_handles(harness: Harness) -> None:
    first, second = harness.open(), harness.open()
    session = SessionId("22222222-2222-4222-8222-000000000001")
    other = SessionId("22222222-2222-4222-8222-000000000002")

    async def go() -> None:
        waited: list[str] = []
        async with first.session_lock(session):
            with pytest.raises(BearAgentError) as busy:
                async with second.session_lock(session, wait=False):
                    pass
            assert busy.value.info.code == "conflict.session_busy"
            with pytest.raises(BearAgentError):
                async with second.session_lock(session, timeout_s=0.2, on_wait=lambda: waited.append("w")):
                    pass
            assert waited == ["w"]
            async with second.session_lock(other, wait=False):  # another session is not held
                pass

            async def later() -> str:
                async with second.session_lock(session):
                    return "got it"

            waiter = asyncio.create_task(later())
            await asyncio.sleep(0.2)
            assert not waiter.done()
        assert await asyncio.wait_for(waiter, 10) == "got it"

    run(go)


def test_the_session_lock_holds_against_another_process_and_dies_with_it(harness: Harness) -> None:
    storage = harness.open()
    session = SessionId("22222222-2222-4222-8222-000000000001")
    holder = harness.worker("lock", str(session))
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "locked", holder.stderr.read() if holder.stderr else ""

    async def busy() -> str:
        try:
            async with storage.session_lock(session, wait=False):
                return "free"
        except BearAgentError as exc:
            return exc.info.code

    assert run(busy) == "conflict.session_busy"
    holder.kill()  # no clean release: the lock must still go with the process
    holder.wait(timeout=30)
    # SQLite's lock goes with the process at once (the kernel drops its file lock). PostgreSQL drops a dead client's
    # session locks when the server process serving it reads the closed connection, which on a loaded machine is a
    # moment later: the lock must be free within 30 s (one try after the other; never free fails the test).
    deadline = time.monotonic() + 30
    while (state := run(busy)) != "free" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state == "free"


# ---- live view --------------------------------------------------------------------------------------------------


def broken(_item: Published) -> None:
    raise RuntimeError("a broken subscriber")


def test_subscribers_see_every_commit_in_order(harness: Harness) -> None:
    storage = harness.open()

    async def go() -> None:
        writer = RunWriter(storage)
        seen: list[Committed] = []
        stop = writer.subscribe(lambda item: seen.append(item) if isinstance(item, Committed) else None)
        writer.subscribe(broken)
        f = await started(writer)
        await writer.append_many(f.model_call(1, 1))
        with pytest.raises(InvalidTransition):
            await writer.append(f.model_started())
        stop()
        f.rejected()
        await writer.append(f.run_succeeded())
        assert [(c.run_id, c.sequence) for c in seen] == [(f.run_id, n) for n in range(1, 6)]
        assert [c.event for c in seen] == list(await storage.fetch_events(f.run_id, limit=5))

    run(go)

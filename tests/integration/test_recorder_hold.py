"""`RunRecorder.hold`: a completion is committed with the next fact the loop appends, in one transaction, stamped
with the time it happened; a refusal of the next fact still leaves it a fact; a whole run commits twice a step.
Real SQLite files; the store's commits are counted by a subclass that lets them through."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.events import ManualClock
from tests.support.runtime import scripted_plan

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ActivityId, DeterministicIdGenerator, ModelCallId, RunId, Uuid4IdGenerator
from bearagent.domain.models import ModelRequest
from bearagent.domain.run_events import (
    ModelCallCompletedV2,
    ModelCallRequestedV2,
    ModelCallStartedV1,
    RunCreatedV1,
    RunStartedV1,
)
from bearagent.ports import RunCommit, SystemClock
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import BatchedCall, ModelRequestDecision, PromptDecision, RunSpec, StopDecision
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.sqlite import SqliteEventStore


class CountingStore(SqliteEventStore):
    """The SQLite store, with the event types of each commit it made."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.commits: list[list[str]] = []

    def commit_now(self, commit: RunCommit) -> bool:
        done = super().commit_now(commit)
        if done:
            self.commits.append([e.event_type for e in commit.events])
        return done

    async def commit(self, commit: RunCommit) -> None:
        await super().commit(commit)
        self.commits.append([e.event_type for e in commit.events])


def _model_call(ids: DeterministicIdGenerator) -> tuple[ModelCallRequestedV2, ModelCallStartedV1, ModelCallCompletedV2]:
    activity, call = ids.new(ActivityId), ids.new(ModelCallId)
    return (
        ModelCallRequestedV2(activity_id=activity, model_call_id=call, model_ref="m"),
        ModelCallStartedV1(activity_id=activity, model_call_id=call),
        ModelCallCompletedV2(activity_id=activity, model_call_id=call, usage=TokenUsage(input_tokens=3)),
    )


def test_a_held_fact_goes_with_the_next_append_stamped_when_it_was_held(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "state.db")
    ids = DeterministicIdGenerator()
    clock = ManualClock()
    recorder = RunRecorder(writer=RunWriter(store), clock=clock, ids=ids, run_id=ids.new(RunId))
    first, second = _model_call(ids), _model_call(ids)

    async def go() -> None:
        await recorder.append_many((RunCreatedV1(budget_limits=BudgetLimits()), RunStartedV1()))
        await recorder.append_many(first[:2])
        held_at = clock.now()
        recorder.hold(first[2])
        assert recorder.holding
        assert recorder.projection is not None and recorder.projection.active_activity_id is not None
        clock.advance(timedelta(seconds=5))
        await recorder.append_many(second[:2])
        assert not recorder.holding
        events = store.read_events(recorder.run_id)
        assert [e.event_type for e in events][-3:] == ["ModelCallCompleted", "ModelCallRequested", "ModelCallStarted"]
        assert events[-3].occurred_at == held_at
        assert events[-2].occurred_at == held_at + timedelta(seconds=5)
        recorder.hold(second[2])
        flushed = await recorder.flush()
        assert flushed is not None and flushed.active_activity_id is None
        assert await recorder.flush() is None  # nothing held: nothing to do

    try:
        asyncio.run(go())
        assert store.commits[-2:] == [
            ["ModelCallCompleted", "ModelCallRequested", "ModelCallStarted"],
            ["ModelCallCompleted"],
        ]
        assert [e.sequence for e in store.read_events(recorder.run_id)] == list(range(1, 9))
    finally:
        store.close()


def test_a_refused_append_still_commits_what_was_held(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "state.db")
    ids = DeterministicIdGenerator()
    recorder = RunRecorder(writer=RunWriter(store), clock=ManualClock(), ids=ids, run_id=ids.new(RunId))
    first, second = _model_call(ids), _model_call(ids)

    async def go() -> None:
        await recorder.append_many((RunCreatedV1(budget_limits=BudgetLimits(max_model_iterations=1)), RunStartedV1()))
        await recorder.append_many(first[:2])
        recorder.hold(first[2])
        with pytest.raises(BearAgentError) as refused:
            await recorder.append_many(second[:2])  # a second model call is over the budget
        assert refused.value.info.category == "budget"
        assert not recorder.holding

    try:
        asyncio.run(go())
        types = [e.event_type for e in store.read_events(recorder.run_id)]
        assert types == ["RunCreated", "RunStarted", "ModelCallRequested", "ModelCallStarted", "ModelCallCompleted"]
        run = store.get_run(recorder.run_id)
        assert run is not None and run.usage.input_tokens == 3 and run.active_activity_id is None
    finally:
        store.close()


def test_a_run_commits_twice_per_tool_step(tmp_path: Path) -> None:
    """Each step: the model call's Requested + Started, then its Completed with the tool's Requested + Started;
    the tool's result goes with the next model call's request, the final answer with RunSucceeded."""
    (tmp_path / "notes.md").write_text("hello\n", encoding="utf-8")
    turns = "".join("  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]\n" for _ in range(3))
    plan = scripted_plan(tmp_path, "turns:\n" + turns + "  - text: done\n")
    store = CountingStore(tmp_path / "state.db")
    loop = AgentLoop(store=store, clock=SystemClock(), ids=Uuid4IdGenerator())
    try:
        outcome = asyncio.run(loop.run(RunSpec(goal="go", workspace_root=tmp_path, budgets=BudgetLimits()), plan))
        assert outcome.status == "succeeded"
        tool_step = [
            ["ToolCallCompleted", "ModelCallRequested", "ModelCallStarted"],
            ["ModelCallCompleted", "ToolCallRequested", "ToolCallStarted"],
        ]
        assert store.commits == [
            ["RunCreated"],
            ["RunStarted"],
            ["ModelCallRequested", "ModelCallStarted"],
            ["ModelCallCompleted", "ToolCallRequested", "ToolCallStarted"],
            *(tool_step * 2),
            ["ToolCallCompleted", "ModelCallRequested", "ModelCallStarted"],
            ["ModelCallCompleted", "RunSucceeded"],  # no Stop hook runs between them
        ]
        events = store.read_events(outcome.run_id)
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    finally:
        store.close()


class LogReadingHooks:
    """Loop hooks that read the run's committed log when they run: what a hook process would find in the store."""

    def __init__(self, store: SqliteEventStore) -> None:
        self.store = store
        self.seen: list[tuple[str, list[str]]] = []

    def _log(self, point: str, run_id: RunId) -> None:
        reader = SqliteEventStore(self.store.path)  # another connection: only what is committed
        try:
            self.seen.append((point, [e.event_type for e in reader.read_events(run_id)]))
        finally:
            reader.close()

    async def user_prompt_submit(self, run_id: RunId, agent: str, prompt: str) -> PromptDecision:
        return PromptDecision()

    async def pre_model_request(self, run_id: RunId, agent: str, request: ModelRequest) -> ModelRequestDecision:
        self._log("pre_model_request", run_id)
        return ModelRequestDecision(request=request)

    async def stop(self, run_id: RunId, agent: str, final_text: str, stop_hook_active: bool) -> StopDecision:
        self._log("stop", run_id)
        return StopDecision()

    async def post_tool_batch(self, run_id: RunId, agent: str, calls: Sequence[BatchedCall]) -> StopDecision:
        return StopDecision()

    async def pre_compact(self, run_id: RunId, agent: str, trigger: str, custom_instructions: str) -> StopDecision:
        return StopDecision()

    async def post_compact(self, run_id: RunId, agent: str, trigger: str, summary: str) -> None:
        return None

    async def stop_failure(self, run_id: RunId, agent: str, error: ErrorInfo, partial_text: str) -> None:
        return None

    async def notification(self, run_id: RunId, agent: str, message: str, notification_type: str) -> None:
        return None


def test_hooks_find_every_earlier_fact_committed(tmp_path: Path) -> None:
    """A PreModelRequest hook runs after a tool's result and a Stop hook after the final answer: nothing is held
    while they run."""
    (tmp_path / "notes.md").write_text("hello\n", encoding="utf-8")
    plan = scripted_plan(
        tmp_path, "turns:\n  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]\n  - text: done\n"
    )
    store = CountingStore(tmp_path / "state.db")
    hooks = LogReadingHooks(store)
    loop = AgentLoop(store=store, clock=SystemClock(), ids=Uuid4IdGenerator(), hooks=hooks)
    try:
        outcome = asyncio.run(loop.run(RunSpec(goal="go", workspace_root=tmp_path, budgets=BudgetLimits()), plan))
        assert outcome.status == "succeeded"
        assert [(point, log[-1]) for point, log in hooks.seen] == [
            ("pre_model_request", "RunStarted"),
            ("pre_model_request", "ToolCallCompleted"),
            ("stop", "ModelCallCompleted"),
        ]
    finally:
        store.close()

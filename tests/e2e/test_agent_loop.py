"""The agent loop end to end with real parts: scripted provider, native tools through the gate, SQLite log."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest
from tests.support.runtime import scripted_plan

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import DeterministicIdGenerator, RunId, SessionId
from bearagent.domain.models import ModelRequest
from bearagent.domain.run_events import (
    ModelCallCompletedV2,
    ModelCallFailedV2,
    RunCreatedV2,
    RunSucceededV2,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    parse_run_event_payload,
)
from bearagent.domain.specs import ModelPrice
from bearagent.ports import SystemClock
from bearagent.runtime.history import history_from_events
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.plan import BatchedCall, ModelRequestDecision, PromptDecision, RunSpec, StopDecision
from bearagent.runtime.retry import RetryPolicy
from bearagent.store.sqlite import SqliteEventStore

SEED_SCRIPT = """
turns:
  - text: "Reading the file."
    tool_calls:
      - {name: Read, arguments: {file_path: docs/project.md}}
    usage: {input_tokens: 420, output_tokens: 28}
  - tool_calls:
      - {name: Write, arguments: {file_path: outputs/intro.md, content: "BearAgent summary\\n"}}
    usage: {input_tokens: 620, output_tokens: 40}
  - text: "Wrote outputs/intro.md."
    usage: {input_tokens: 180, output_tokens: 12}
"""

SEED_BUDGETS = BudgetLimits(
    max_model_iterations=3, max_tokens=5000, max_cost_microusd=1000, max_wall_time_ms=60000, max_tool_calls=2
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "project.md").write_text(
        "# Project\nBearAgent is local-first.\nEvents record facts.\n", encoding="utf-8"
    )
    return tmp_path


def _loop(store: SqliteEventStore, **kwargs: object) -> AgentLoop:
    retry = kwargs.pop("retry", None)
    assert retry is None or isinstance(retry, RetryPolicy)
    return AgentLoop(store=store, clock=SystemClock(), ids=DeterministicIdGenerator(), retry=retry)


def test_seed_001_example_runs_end_to_end(workspace: Path) -> None:
    store = SqliteEventStore(workspace / ".bearagent" / "state.db")
    plan = scripted_plan(workspace, SEED_SCRIPT)
    spec = RunSpec(
        goal="Read docs/project.md and write a summary to outputs/intro.md",
        workspace_root=workspace,
        budgets=SEED_BUDGETS,
        session_id=SessionId("22222222-2222-4222-8222-222222222222"),
    )
    outcome = asyncio.run(_loop(store).run(spec, plan))

    assert outcome.status == "succeeded", outcome.error
    assert outcome.final_text == "Wrote outputs/intro.md."
    written = (workspace / "outputs" / "intro.md").read_bytes()
    assert written == b"BearAgent summary\n"

    events = store.read_events(outcome.run_id)
    assert [e.event_type for e in events] == [
        "RunCreated",
        "RunStarted",
        "ModelCallRequested",
        "ModelCallStarted",
        "ModelCallCompleted",
        "ToolCallRequested",
        "ToolCallStarted",
        "ToolCallCompleted",
        "ModelCallRequested",
        "ModelCallStarted",
        "ModelCallCompleted",
        "ToolCallRequested",
        "ToolCallStarted",
        "FilesChanged",  # the Write's change, with what it replaced (docs/rewind.md)
        "ToolCallCompleted",
        "ModelCallRequested",
        "ModelCallStarted",
        "ModelCallCompleted",
        "RunSucceeded",
    ]
    assert [e.sequence for e in events] == list(range(1, 20))
    created = parse_run_event_payload("RunCreated", events[0].schema_version, events[0].payload)
    assert isinstance(created, RunCreatedV2)
    assert created.goal.startswith("Read docs/project.md")
    assert created.agent_name == "build"
    assert created.prompt_hash == hashlib.sha256(plan.system_prompt.encode()).hexdigest()
    assert set(created.tool_spec_versions) >= {"Read", "Write"}

    first_model = parse_run_event_payload("ModelCallCompleted", 2, events[4].payload)
    assert isinstance(first_model, ModelCallCompletedV2)
    assert first_model.text == "Reading the file."
    assert first_model.tool_calls[0].name == "Read"
    assert first_model.stop_reason == "tool_use"

    read_result = parse_run_event_payload("ToolCallCompleted", 2, events[7].payload)
    assert isinstance(read_result, ToolCallCompletedV2)
    assert "BearAgent is local-first." in read_result.result.content

    write_result = parse_run_event_payload("ToolCallCompleted", 2, events[14].payload)
    assert isinstance(write_result, ToolCallCompletedV2)
    artifact = write_result.result.artifacts[0]
    assert artifact.path == "outputs/intro.md"
    assert artifact.sha256 == "ea27e78a25443e983ec458621fa8017963c69e5d598c368a16c9d5cd65b5ccb6"
    assert artifact.size_bytes == 18

    done = parse_run_event_payload("RunSucceeded", 2, events[-1].payload)
    assert isinstance(done, RunSucceededV2)
    assert done.final_text == "Wrote outputs/intro.md."

    run = store.get_run(outcome.run_id)
    assert run is not None
    assert run.status == "succeeded"
    assert run.last_sequence == 19
    assert run.usage.model_iterations == 3
    assert run.usage.tool_calls == 2
    assert run.usage.total_tokens == 1300
    assert outcome.usage.total_tokens == 1300
    assert [a.status for a in store.list_activities(outcome.run_id)] == ["succeeded"] * 5


def test_budget_stop_when_the_model_wants_a_third_tool_call(workspace: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: docs/project.md}}]
  - tool_calls: [{name: Read, arguments: {file_path: docs/project.md}}]
  - tool_calls: [{name: Read, arguments: {file_path: docs/project.md}}]
  - text: never reached
"""
    store = SqliteEventStore(workspace / "state.db")
    budgets = SEED_BUDGETS.model_copy(update={"max_model_iterations": 10, "max_tokens": 1_000_000})
    spec = RunSpec(goal="loop", workspace_root=workspace, budgets=budgets)
    outcome = asyncio.run(_loop(store).run(spec, scripted_plan(workspace, script)))
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.category == "budget"
    assert outcome.error.code == "budget.max_tool_calls"
    run = store.get_run(outcome.run_id)
    assert run is not None and run.status == "failed"
    assert run.usage.tool_calls == 2
    assert run.active_activity_id is None
    types = [e.event_type for e in store.read_events(outcome.run_id)]
    assert types.count("ToolCallRequested") == 2
    assert types[-1] == "RunFailed"


def test_unknown_tool_and_invalid_arguments_are_failed_calls_the_model_reads(workspace: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Teleport, arguments: {to: mars}}]
  - tool_calls: [{name: Read, arguments: {file_path: 42}}]
  - text: done
"""
    store = SqliteEventStore(workspace / "state.db")
    spec = RunSpec(goal="try", workspace_root=workspace, budgets=BudgetLimits())
    outcome = asyncio.run(_loop(store).run(spec, scripted_plan(workspace, script)))
    assert outcome.status == "succeeded"
    failed = [
        parse_run_event_payload(e.event_type, e.schema_version, e.payload)
        for e in store.read_events(outcome.run_id)
        if e.event_type == "ToolCallFailed"
    ]
    assert len(failed) == 2
    messages = [p.result.content for p in failed if isinstance(p, ToolCallFailedV2)]
    assert "no tool named 'Teleport'" in messages[0]
    assert "available tools" in messages[0]
    assert "file_path" in messages[1]


def test_retryable_model_error_is_retried_and_each_attempt_logged(workspace: Path) -> None:
    script = """
turns:
  - error: {category: overloaded, message: "the model is overloaded", retryable: true}
  - text: "fine now"
"""
    store = SqliteEventStore(workspace / "state.db")
    loop = _loop(store, retry=RetryPolicy(max_attempts=3, base_delay_s=0.01))
    spec = RunSpec(goal="hi", workspace_root=workspace, budgets=BudgetLimits())
    outcome = asyncio.run(loop.run(spec, scripted_plan(workspace, script)))
    assert outcome.status == "succeeded"
    assert outcome.final_text == "fine now"
    events = store.read_events(outcome.run_id)
    types = [e.event_type for e in events]
    assert types.count("ModelCallRequested") == 2
    assert types.count("ModelCallFailed") == 1
    attempts = [e.payload["attempt"] for e in events if e.event_type == "ModelCallRequested"]
    assert attempts == [1, 2]
    failed = next(e for e in events if e.event_type == "ModelCallFailed")
    assert failed.payload["will_retry"] is True


class Notices(NullObserver):
    def __init__(self) -> None:
        self.notices: list[str] = []
        self.tokens: list[str] = []

    def token(self, run_id: RunId, text: str) -> None:
        self.tokens.append(text)

    def notice(self, run_id: RunId, text: str) -> None:
        self.notices.append(text)


def test_a_retry_after_streamed_text_says_the_answer_restarts_and_counts_the_failed_attempt(workspace: Path) -> None:
    """The user saw `Half an ans` stream, then the call failed: the notice says that text is thrown away and the
    answer starts over, and the tokens the provider reported for the failed attempt are recorded and charged."""
    script = """
turns:
  - text: "Half an ans"
    error: {category: timeout, message: "the stream went silent", retryable: true}
    usage: {input_tokens: 300, output_tokens: 4}
  - error: {category: overloaded, message: "busy", retryable: true}
    usage: {input_tokens: 0, output_tokens: 0}
  - text: "A whole answer."
    usage: {input_tokens: 300, output_tokens: 5}
"""
    store = SqliteEventStore(workspace / "state.db")
    observer = Notices()
    loop = AgentLoop(
        store=store,
        clock=SystemClock(),
        ids=DeterministicIdGenerator(),
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01),
        observer=observer,
    )
    spec = RunSpec(goal="hi", workspace_root=workspace, budgets=BudgetLimits())
    outcome = asyncio.run(loop.run(spec, scripted_plan(workspace, script)))
    assert outcome.status == "succeeded" and outcome.final_text == "A whole answer."
    restart, retry = observer.notices
    assert restart.startswith("model call failed (timeout.scripted); the answer so far (11 chars) is discarded; ")
    assert "restarting in" in restart and restart.endswith("(attempt 2)")
    assert retry.startswith("model call failed (overloaded.scripted); retrying in ") and "discarded" not in retry
    events = store.read_events(outcome.run_id)
    failed = [
        parse_run_event_payload(e.event_type, e.schema_version, e.payload)
        for e in events
        if e.event_type == "ModelCallFailed"
    ]
    assert isinstance(failed[0], ModelCallFailedV2)
    assert failed[0].partial_text == "Half an ans" and failed[0].will_retry
    assert (failed[0].usage.input_tokens, failed[0].usage.output_tokens) == (300, 4)
    # the failed attempt's tokens count toward the run's usage (and its token budget)
    run = store.get_run(outcome.run_id)
    assert run is not None and (run.usage.input_tokens, run.usage.output_tokens) == (600, 9)
    assert outcome.usage.total_tokens == 609


def test_non_retryable_model_error_fails_the_run_with_its_error(workspace: Path) -> None:
    script = """
turns:
  - error: {category: authentication, message: "invalid API key"}
"""
    store = SqliteEventStore(workspace / "state.db")
    spec = RunSpec(goal="hi", workspace_root=workspace, budgets=BudgetLimits())
    outcome = asyncio.run(_loop(store).run(spec, scripted_plan(workspace, script)))
    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.category == "authentication"
    assert [e.event_type for e in store.read_events(outcome.run_id)][-2:] == ["ModelCallFailed", "RunFailed"]


def test_cancel_mid_tool_call_kills_the_command_and_records_a_clean_cancel(workspace: Path) -> None:
    marker = workspace / "started"
    script = f"""
turns:
  - tool_calls: [{{name: Bash, arguments: {{command: "touch {marker} && sleep 30"}}}}]
  - text: never
"""
    store = SqliteEventStore(workspace / "state.db")
    spec = RunSpec(goal="slow", workspace_root=workspace, budgets=BudgetLimits(), run_id=RunId.new())

    async def scenario() -> None:
        task = asyncio.create_task(
            _loop(store).run(spec, scripted_plan(workspace, script, allow=["Bash(touch *)", "Bash(sleep *)"]))
        )
        for _ in range(200):
            if marker.exists():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert spec.run_id is not None
    run = store.get_run(spec.run_id)
    assert run is not None
    assert run.status == "cancelled"
    assert run.active_activity_id is None
    types = [e.event_type for e in store.read_events(spec.run_id)]
    assert types[-2:] == ["ToolCallFailed", "RunCancelled"]


def test_wall_time_budget_stops_a_slow_tool_promptly(workspace: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "sleep 30"}}]
  - text: never
"""
    store = SqliteEventStore(workspace / "state.db")
    spec = RunSpec(goal="slow", workspace_root=workspace, budgets=BudgetLimits(max_wall_time_ms=700))
    outcome = asyncio.run(_loop(store).run(spec, scripted_plan(workspace, script, allow=["Bash(sleep *)"])))
    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.code == "budget.max_wall_time_ms"
    assert outcome.usage.wall_time_ms < 10_000


def test_cost_budget_counts_priced_usage(workspace: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: docs/project.md}}]
    usage: {input_tokens: 1000, output_tokens: 1000}
  - text: done
"""
    store = SqliteEventStore(workspace / "state.db")
    plan = scripted_plan(workspace, script, price=ModelPrice(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0))
    spec = RunSpec(goal="x", workspace_root=workspace, budgets=BudgetLimits(max_cost_microusd=2500))
    outcome = asyncio.run(_loop(store).run(spec, plan))
    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.code == "budget.max_cost_microusd"
    assert outcome.usage.cost_microusd == 3000


def test_history_rebuilt_from_the_log_continues_the_conversation(workspace: Path) -> None:
    store = SqliteEventStore(workspace / "state.db")
    spec = RunSpec(goal="Read docs/project.md and summarise", workspace_root=workspace, budgets=BudgetLimits())
    first = asyncio.run(_loop(store).run(spec, scripted_plan(workspace, SEED_SCRIPT)))
    history = history_from_events([store.read_events(first.run_id)])
    roles = [m.role for m in history]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert history[0].text.startswith("Read docs/project.md")
    assert history[-1].text == "Wrote outputs/intro.md."


class _BrokenHooks:
    async def user_prompt_submit(self, run_id: RunId, agent: str, prompt: str) -> PromptDecision:
        return PromptDecision()

    async def pre_model_request(self, run_id: RunId, agent: str, request: ModelRequest) -> ModelRequestDecision:
        return ModelRequestDecision(request=request)

    async def stop(self, run_id: RunId, agent: str, final_text: str, stop_hook_active: bool) -> StopDecision:
        raise RuntimeError("a bug in a hook adapter")

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


def test_an_unexpected_error_ends_the_run_as_failed_instead_of_leaving_it_running(workspace: Path) -> None:
    store = SqliteEventStore(workspace / "state.db")
    loop = AgentLoop(store=store, clock=SystemClock(), ids=DeterministicIdGenerator(), hooks=_BrokenHooks())
    spec = RunSpec(goal="hi", workspace_root=workspace, budgets=BudgetLimits())
    outcome = asyncio.run(loop.run(spec, scripted_plan(workspace, "turns:\n  - text: hello\n")))
    assert outcome.status == "failed"
    assert outcome.error is not None and outcome.error.code == "internal.unexpected"
    assert "RuntimeError" in outcome.error.message
    run = store.get_run(outcome.run_id)
    assert run is not None and run.status == "failed"
    assert [e.event_type for e in store.read_events(outcome.run_id)][-1] == "RunFailed"

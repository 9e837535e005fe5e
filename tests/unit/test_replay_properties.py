"""Property: for any sequence of attempted events (valid or not) over several interleaved runs,

- the SQLite store and the pure reducer accept and refuse exactly the same events (same error code),
- the stored projections equal the pure reducer's, and
- rebuilding the projections from the events alone gives exactly the stored projections.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, SessionId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    ChildRunFinishedV1,
    ChildRunStartedV1,
    HookExecutedV1,
    ModelCallCompletedV2,
    ModelCallRequestedV2,
    ModelCallStartedV1,
    RunCreatedV2,
    RunFailedV1,
    RunSucceededV2,
    TodosUpdatedV1,
    ToolCallCompletedV2,
    ToolCallRequestedV2,
)
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.domain.tools import ToolResult
from bearagent.runtime.reducer import reduce
from bearagent.store.sqlite import SqliteEventStore

SESSION = SessionId("20000000-0000-4000-8000-000000000001")


class PureRun:
    """A run folded by the pure reducer, next to the same run in the store."""

    def __init__(self, number: int) -> None:
        self.f = EventFactory(RunId(f"{number:08x}-0000-4000-8000-000000000000"), ids=Uuid4IdGenerator())
        self.run: RunProjection | None = None
        self.activities: dict[ActivityId, ActivityProjection] = {}
        self.agents = ["build", "plan"]

    def active(self) -> ActivityProjection | None:
        if self.run is None or self.run.active_activity_id is None:
            return None
        return self.activities[self.run.active_activity_id]

    def candidates(self, move: int) -> list[Event]:
        """Events worth trying now (some of them invalid on purpose); built lazily by index."""
        f, run, active = self.f, self.run, self.active()
        if run is None:
            limits = BudgetLimits(max_model_iterations=1 + move % 5, max_tool_calls=move % 4, max_tokens=80 + move)
            if move % 2:
                return [f.run_created(limits, session_id=SESSION)]
            payload = RunCreatedV2(budget_limits=limits, goal="g", agent_name="build", prompt_hash="0" * 64)
            return [f.event(payload)]
        if active is not None:
            f.activity_id = active.activity_id
            f.model_call_id = active.model_call_id
            f.tool_call_id = active.tool_call_id
        makers = {
            "queued": [
                f.run_started,
                f.run_started,
                f.run_started,
                f.run_cancelled,
                self.switch,
                self.hook,
                f.model_requested,
            ],
            "terminal": [f.run_started, f.model_requested, self.hook, f.run_succeeded],
        }
        if run.status == "running" and active is None:
            choices = [
                f.model_requested,
                self.model_requested_v2,
                f.tool_requested,
                self.tool_requested_v2,
                f.model_requested,
                self.model_requested_v2,
                f.tool_requested,
                self.tool_requested_v2,
                lambda: f.event(RunSucceededV2(final_text="done")),
                f.run_succeeded,
                f.run_failed,
                lambda: f.event(RunFailedV1()),
                f.run_cancelled,
                self.hook,
                lambda: f.event(TodosUpdatedV1(todos=({"content": "x", "status": "pending"},))),
                self.child,
                self.switch,
                lambda: f.event(ModelCallStartedV1(activity_id=ActivityId.new(), model_call_id=ModelCallId.new())),
            ]
        elif active is not None and active.status == "pending":
            start = f.model_started if active.kind == "model_call" else f.tool_started
            finish = f.model_completed if active.kind == "model_call" else f.tool_completed
            choices = [
                start,
                start,
                start,
                start,
                f.run_cancelled,
                self.hook,
                finish,
                f.tool_requested,
                f.run_succeeded,
            ]
        elif active is not None:
            if active.kind == "model_call":
                choices = [
                    lambda: f.model_completed(move % 40, move % 7, move % 3),
                    lambda: self.model_completed_v2(move),
                    lambda: f.model_completed(move % 40, move % 7, move % 3),
                    lambda: self.model_completed_v2(move),
                    lambda: f.model_failed(move % 5, 1, 1),
                    f.run_cancelled,
                    f.run_failed,
                    f.model_started,
                ]
            else:
                choices = [
                    f.tool_completed,
                    self.tool_completed_v2,
                    f.tool_completed,
                    self.tool_completed_v2,
                    f.tool_failed,
                    f.run_cancelled,
                    f.tool_started,
                ]
        else:
            choices = makers["queued" if run.status == "queued" else "terminal"]
        return [choices[move % len(choices)]()]

    # v2 and record-only facts -------------------------------------------------------------------------------

    def model_requested_v2(self) -> Event:
        self.f.activity_id, self.f.model_call_id = ActivityId.new(), ModelCallId.new()
        return self.f.event(
            ModelCallRequestedV2(activity_id=self.f.activity_id, model_call_id=self.f.model_call_id, model_ref="m/x")
        )

    def model_completed_v2(self, move: int) -> Event:
        assert self.f.activity_id is not None and self.f.model_call_id is not None
        return self.f.event(
            ModelCallCompletedV2(
                activity_id=self.f.activity_id,
                model_call_id=self.f.model_call_id,
                usage=TokenUsage(input_tokens=move % 30, output_tokens=2),
                text="t",
                stop_reason="end_turn",
            )
        )

    def tool_requested_v2(self) -> Event:
        self.f.activity_id, self.f.tool_call_id = ActivityId.new(), ToolCallId.new()
        return self.f.event(
            ToolCallRequestedV2(
                activity_id=self.f.activity_id, tool_call_id=self.f.tool_call_id, tool_name="Read", arguments={"p": 1}
            )
        )

    def tool_completed_v2(self) -> Event:
        assert self.f.activity_id is not None and self.f.tool_call_id is not None
        result = ToolResult(tool_call_id=self.f.tool_call_id, tool_name="Read", status="succeeded", content="ok")
        return self.f.event(
            ToolCallCompletedV2(activity_id=self.f.activity_id, tool_call_id=self.f.tool_call_id, result=result)
        )

    def hook(self) -> Event:
        return self.f.event(HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=1))

    def child(self) -> Event:
        child = RunId.new()
        self.f.event(ChildRunStartedV1(child_run_id=child, agent_name="explore"))
        self.f.rejected()  # only the finished record is tried: both are record-only facts
        return self.f.event(ChildRunFinishedV1(child_run_id=child, status="failed"))

    def switch(self) -> Event:
        count = 0 if self.run is None else self.run.switch_count
        self.agents.reverse()
        return self.f.event(AgentSwitchedV1(from_agent=self.agents[1], to_agent=self.agents[0], switch_count=count + 1))

    # folding -------------------------------------------------------------------------------------------------

    def reduce(self, event: Event) -> None:
        result = reduce(self.run, self.active(), event)
        self.run = result.run
        if result.activity is not None:
            self.activities[result.activity.activity_id] = result.activity


def outcome(action: object) -> str:
    try:
        action() if callable(action) else None
    except BearAgentError as exc:
        return f"{type(exc).__name__}:{exc.info.code}"
    return "ok"


moves = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1_000)), min_size=1, max_size=80)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moves)
def test_store_pure_reducer_and_replay_agree(plan: list[tuple[int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "state.db")
        slots = [PureRun(n + 1) for n in range(4)]
        runs = list(slots)
        try:
            for which, move in plan:
                pure = slots[which]
                if pure.run is not None and pure.run.status in ("succeeded", "failed", "cancelled") and move % 4:
                    pure = slots[which] = PureRun(len(runs) + 1)  # a finished run makes room for a new one
                    runs.append(pure)
                [event] = pure.candidates(move)
                stored = outcome(lambda event=event: store.append(event))
                expected = outcome(lambda event=event, pure=pure: pure.reduce(event))
                assert stored == expected, (event.event_type, stored, expected)
                if stored != "ok":
                    pure.f.rejected()
            for pure in runs:
                if pure.run is None:
                    assert store.get_run(pure.f.run_id) is None
                    continue
                assert store.get_run(pure.f.run_id) == pure.run
                ordered = sorted(pure.activities.values(), key=lambda a: a.requested_sequence)
                assert list(store.list_activities(pure.f.run_id)) == ordered
                assert store.replay_run(pure.f.run_id) == (pure.run, ordered)
            before = {r.run_id: (r, list(store.list_activities(r.run_id))) for r in store.list_runs()}
            store.rebuild_projections(validate=True)
            after = {r.run_id: (r, list(store.list_activities(r.run_id))) for r in store.list_runs()}
            assert after == before
        finally:
            store.close()

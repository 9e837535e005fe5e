"""The pure reducer: seed 001's worked example step by step, every payload type, the state machines and budgets."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.support.events import (
    M1,
    SEED_LIMITS,
    SEED_RUN_ID,
    SEED_SESSION_ID,
    EventFactory,
    seed_001_steps,
)

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ArtifactId, ModelCallId, RunId, SessionId, ToolCallId
from bearagent.domain.run_events import (
    RUN_EVENT_PAYLOADS,
    AgentSwitchedV1,
    ChildRunFinishedV1,
    ChildRunFinishedV2,
    ChildRunStartedV1,
    ChildUsage,
    ContextCompactedV1,
    ConversationRewoundV1,
    ElicitationRequestedV1,
    ElicitationResolvedV1,
    FileChange,
    FilesChangedV1,
    FilesRewoundV1,
    FileState,
    HookExecutedV1,
    MessageInjectedV1,
    MessageInjectedV2,
    ModelCallCompletedV2,
    ModelCallFailedV1,
    ModelCallFailedV2,
    ModelCallRequestedV2,
    ModelCallRequestedV3,
    ModelCallRequestedV4,
    ModelCallStartedV1,
    RecordedToolCall,
    RunCreatedV2,
    RunCreatedV3,
    RunCreatedV4,
    RunFailedV1,
    RunFailedV2,
    RunInterruptedV1,
    RunPlanFacts,
    RunRequest,
    RunResumedV1,
    RunStartedV3,
    RunSucceededV2,
    TodosUpdatedV1,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.domain.tools import Artifact, ToolResult
from bearagent.runtime.reducer import (
    BudgetExceeded,
    InvalidTransition,
    Reduction,
    SequenceConflict,
    check_budget,
    reduce,
)
from bearagent.runtime.replay import replay_events

PROMPT_HASH = "ab" * 32


class Folder:
    """Feeds events through `reduce`, keeping the run and every activity, as a caller of the pure API would."""

    def __init__(self) -> None:
        self.run: RunProjection | None = None
        self.activities: dict[ActivityId, ActivityProjection] = {}
        self.seen: set[tuple[str, int]] = set()

    def active(self) -> ActivityProjection | None:
        if self.run is None or self.run.active_activity_id is None:
            return None
        return self.activities[self.run.active_activity_id]

    def feed(self, event: Event) -> Reduction:
        result = reduce(self.run, self.active(), event)
        self.run = result.run
        if result.activity is not None:
            self.activities[result.activity.activity_id] = result.activity
        self.seen.add((event.event_type, event.schema_version))
        return result

    def feed_all(self, events: list[Event]) -> None:
        for event in events:
            self.feed(event)

    @property
    def state(self) -> RunProjection:
        assert self.run is not None
        return self.run


def running(limits: BudgetLimits | None = None) -> tuple[EventFactory, Folder]:
    f = EventFactory()
    folder = Folder()
    folder.feed_all([f.run_created(limits), f.run_started()])
    return f, folder


# ---- seed 001 ------------------------------------------------------------------------------------------------


def test_seed_001_worked_example_event_by_event() -> None:
    steps = seed_001_steps()
    first = steps[0].event
    assert str(first.event_id) == "90000000-0000-4000-8000-000000000001"
    assert str(first.causation_id) == "a0000000-0000-4000-8000-000000000001"
    assert str(first.correlation_id) == "b0000000-0000-4000-8000-000000000001"
    assert first.occurred_at.isoformat() == "2026-08-18T02:00:00+00:00"
    folder = Folder()
    for index, step in enumerate(steps, start=1):
        before = folder.run
        result = folder.feed(step.event)
        run = result.run
        assert run.run_id == SEED_RUN_ID
        assert run.session_id == SEED_SESSION_ID
        assert run.budget_limits == SEED_LIMITS
        assert run.last_sequence == index
        assert run.status == step.run_status, index
        assert run.usage.model_iterations == step.model_iterations, index
        assert run.usage.tool_calls == step.tool_calls, index
        assert run.usage.total_tokens == step.total_tokens, index
        assert run.usage.cost_microusd == 0
        # wall time: events are one second apart and the run started at sequence 2
        assert run.usage.wall_time_ms == max(0, (index - 2) * 1000)
        if step.activity is None:
            assert result.activity is None
            assert run.active_activity_id is None
        else:
            assert result.activity is not None
            assert result.activity.activity_id == step.activity
            assert result.activity.status == step.activity_status
            assert result.activity.last_sequence == index
            active = step.activity_status in ("pending", "running")
            assert run.active_activity_id == (step.activity if active else None)
        if before is not None:  # every counter only ever moves forward
            assert run.usage.model_iterations >= before.usage.model_iterations
    final = folder.state
    assert final.status == "succeeded"
    assert final.last_sequence == 18
    assert final.usage.input_tokens == 420 + 620 + 180
    assert final.usage.output_tokens == 28 + 40 + 12
    assert final.ended_at is not None and final.started_at is not None
    assert [a.kind for a in folder.activities.values()] == [
        "model_call",
        "tool_call",
        "model_call",
        "tool_call",
        "model_call",
    ]
    assert [a.name for a in folder.activities.values() if a.kind == "tool_call"] == [
        "workspace.read",
        "workspace.write",
    ]
    assert all(a.status == "succeeded" for a in folder.activities.values())
    assert folder.activities[M1].requested_sequence == 3
    assert folder.activities[M1].started_at is not None
    # replay of the same log gives the same projections
    run, activities = replay_events([s.event for s in steps])
    assert run == final
    assert activities == list(folder.activities.values())


def test_seed_001_a_fourth_model_call_is_over_budget() -> None:
    steps = seed_001_steps()
    folder = Folder()
    folder.feed_all([s.event for s in steps[:17]])
    f = EventFactory(SEED_RUN_ID)
    f.sequence = 17
    f.clock.advance(timedelta(seconds=17))
    with pytest.raises(BudgetExceeded) as caught:
        folder.feed(f.model_requested())
    assert caught.value.info.code == "budget.max_model_iterations"
    assert caught.value.info.details["limit"] == 3
    assert caught.value.info.details["used"] == 3


def test_third_tool_call_is_rejected_with_max_tool_calls_2() -> None:
    f, folder = running(BudgetLimits(max_tool_calls=2))
    folder.feed_all(f.tool_call())
    folder.feed_all(f.tool_call())
    before = folder.state
    with pytest.raises(BudgetExceeded) as caught:
        folder.feed(f.tool_requested())
    f.rejected()
    error = caught.value
    assert error.info.category == "budget"
    assert error.info.code == "budget.max_tool_calls"
    assert error.info.details["limit"] == 2 and error.info.details["used"] == 2
    assert "max_tool_calls" in str(error) and "--max-tool-calls" in str(error)
    assert "ToolCallRequested was not recorded" in str(error)
    assert folder.state == before  # no activity, usage unchanged
    assert len(folder.activities) == 2
    # the caller turns it into a budget stop: the run fails with the budget error
    result = folder.feed(f.event(RunFailedV2(error=error.info)))
    assert result.run.status == "failed"
    assert result.run.error is not None and result.run.error.code == "budget.max_tool_calls"


# ---- every payload type --------------------------------------------------------------------------------------


def _result(call: ToolCallId, status: str) -> ToolResult:
    if status == "succeeded":
        artifact = Artifact(
            artifact_id=ArtifactId("70000000-0000-4000-8000-000000000001"), path="o.md", size_bytes=1, sha256="0" * 64
        )
        return ToolResult(tool_call_id=call, tool_name="Write", status="succeeded", content="ok", artifacts=(artifact,))
    return ToolResult(
        tool_call_id=call, tool_name="Write", status="failed", error=ErrorInfo.of("tool", "denied", "outside workspace")
    )


def test_every_payload_type_v1_and_v2_is_handled() -> None:
    seen: set[tuple[str, int]] = set()
    # a v2 run using every non-terminal v2 fact and the record-only facts
    f = EventFactory()
    folder = Folder()
    parent = RunId("10000000-0000-4000-8000-0000000000ff")
    folder.feed(
        f.event(
            RunCreatedV2(
                session_id=SessionId("20000000-0000-4000-8000-000000000001"),
                budget_limits=BudgetLimits(),
                goal="summarise docs/project.md",
                agent_name="build",
                prompt_hash=PROMPT_HASH,
                tool_spec_versions={"Read": "1"},
                parent_run_id=parent,
                trigger_type="subagent",
            )
        )
    )
    assert folder.state.goal == "summarise docs/project.md"
    assert folder.state.agent_name == folder.state.effective_agent_name == "build"
    assert folder.state.parent_run_id == parent and folder.state.trigger_type == "subagent"
    folder.feed(f.run_started())
    a1, mc1 = ActivityId("30000000-0000-4000-8000-0000000000a1"), ModelCallId("40000000-0000-4000-8000-0000000000a1")
    folder.feed(f.event(ModelCallRequestedV2(activity_id=a1, model_call_id=mc1, model_ref="workspace/gpt")))
    assert folder.activities[a1].name == "workspace/gpt"
    folder.feed(f.event(ModelCallStartedV1(activity_id=a1, model_call_id=mc1)))
    call = ToolCallId("50000000-0000-4000-8000-0000000000a1")
    folder.feed(
        f.event(
            ModelCallCompletedV2(
                activity_id=a1,
                model_call_id=mc1,
                usage=TokenUsage(input_tokens=10, output_tokens=5),
                cost_microusd=7,
                text="Writing.",
                tool_calls=(RecordedToolCall(tool_call_id=call, name="Write", arguments={"file_path": "o.md"}),),
                provider_request_id="req_1",
                model="gpt-5-mini",
                stop_reason="tool_use",
            )
        )
    )
    assert folder.state.usage.total_tokens == 15 and folder.state.usage.cost_microusd == 7
    for status, payload_type in (("succeeded", ToolCallCompletedV2), ("failed", ToolCallFailedV2)):
        act = f.ids.new(ActivityId)
        tc = f.ids.new(ToolCallId)
        folder.feed(
            f.event(ToolCallRequestedV2(activity_id=act, tool_call_id=tc, tool_name="Write", arguments={"a": 1}))
        )
        folder.feed(f.event(ToolCallStartedV1(activity_id=act, tool_call_id=tc)))
        folder.feed(f.event(payload_type(activity_id=act, tool_call_id=tc, result=_result(tc, status))))
        assert folder.activities[act].status == status
    failed_tool = list(folder.activities.values())[-1]
    assert failed_tool.error is not None and failed_tool.error.code == "tool.denied"
    a2, mc2 = f.ids.new(ActivityId), f.ids.new(ModelCallId)
    folder.feed(f.event(ModelCallRequestedV2(activity_id=a2, model_call_id=mc2, model_ref="workspace/gpt", attempt=1)))
    folder.feed(f.event(ModelCallStartedV1(activity_id=a2, model_call_id=mc2)))
    folder.feed(
        f.event(
            ModelCallFailedV2(
                activity_id=a2,
                model_call_id=mc2,
                usage=TokenUsage(input_tokens=3),
                error=ErrorInfo.of("rate_limit", "exceeded", "slow down", retryable=True),
                will_retry=True,
            )
        )
    )
    assert folder.activities[a2].error is not None
    assert folder.state.usage.input_tokens == 13  # failed calls count their actual usage
    before = folder.state
    folder.feed(f.event(AgentSwitchedV1(from_agent="build", to_agent="plan", switch_count=1)))
    assert folder.state.effective_agent_name == "plan" and folder.state.switch_count == 1
    assert folder.state.agent_name == "build"
    child = RunId("10000000-0000-4000-8000-0000000000c1")
    for payload in (
        HookExecutedV1(hook_event="PreToolUse", handler="guard.sh", handler_type="command", duration_ms=3),
        TodosUpdatedV1(todos=({"content": "write intro", "status": "pending"},)),
        ChildRunStartedV1(child_run_id=child, agent_name="explore"),
        ChildRunFinishedV1(child_run_id=child, status="succeeded"),
        MessageInjectedV1(kind="stop_feedback", text="Stop hook feedback: again"),
        FilesChangedV1(tool_name="Bash", changes=(FileChange(path="a.txt", after=FileState(kind="file", mode=0o644)),)),
        ElicitationRequestedV1(elicitation_id="el_1", server="asker", message="Really deploy?"),
        ElicitationResolvedV1(elicitation_id="el_1", action="decline", answered_by="alice"),  # waited 0 ms
    ):
        previous = folder.state
        folder.feed(f.event(payload))
        assert folder.state == previous.model_copy(update={"last_sequence": previous.last_sequence + 1})
    assert folder.state.usage == before.usage
    # v2: the child's usage is charged to the parent (wall time is not: it overlaps the parent's)
    spent = ChildUsage(model_iterations=2, tool_calls=1, input_tokens=30, output_tokens=5, cost_microusd=7)
    folder.feed(f.event(ChildRunFinishedV2(child_run_id=child, status="succeeded", usage=spent)))
    u, b = folder.state.usage, before.usage
    assert (u.model_iterations, u.tool_calls) == (b.model_iterations + 2, b.tool_calls + 1)
    assert (u.input_tokens, u.output_tokens, u.cost_microusd) == (
        b.input_tokens + 30,
        b.output_tokens + 5,
        b.cost_microusd + 7,
    )
    folder.feed(f.event(RunSucceededV2(final_text="Done.", stop_reason="end_turn")))
    assert folder.state.final_text == "Done." and folder.state.stop_reason == "end_turn"
    # a finished run still takes its rewind (docs/rewind.md) and a dead call's late changes, and nothing else
    finished = folder.state
    folder.feed(f.event(FilesRewoundV1(changes=(FileChange(path="a.txt"),))))
    assert folder.state == finished.model_copy(update={"last_sequence": finished.last_sequence + 1})
    # ... and the file changes of a call whose process died, recorded late by the next process
    folder.feed(f.event(FilesChangedV1(tool_name="Bash", note="recorded late", changes=(FileChange(path="b"),))))
    assert folder.state == finished.model_copy(update={"last_sequence": finished.last_sequence + 2})
    # and its session's conversation rewind (`runtime/session_history.py`)
    folder.feed(f.event(ConversationRewoundV1(to_run_id=parent)))
    assert folder.state == finished.model_copy(update={"last_sequence": finished.last_sequence + 3})
    seen |= folder.seen

    # v1 endings and v1 failures
    f2, folder2 = running()
    folder2.feed_all([*f2.model_call(), *f2.tool_call()])
    folder2.feed(f2.model_requested())
    folder2.feed(f2.model_started())
    assert f2.activity_id is not None and f2.model_call_id is not None
    folder2.feed(
        f2.event(ModelCallFailedV1(activity_id=f2.activity_id, model_call_id=f2.model_call_id, cost_microusd=4))
    )
    folder2.feed_all([f2.tool_requested(), f2.tool_started(), f2.tool_failed()])
    folder2.feed(f2.run_succeeded())
    seen |= folder2.seen
    assert folder2.state.usage.cost_microusd == 4

    f3, folder3 = running()
    folder3.feed(f3.event(RunFailedV1()))
    assert folder3.state.status == "failed" and folder3.state.error is None
    seen |= folder3.seen

    f4, folder4 = running()
    folder4.feed(f4.run_failed("boom", "exploded"))
    assert folder4.state.error is not None and folder4.state.error.code == "internal.boom"
    seen |= folder4.seen

    f5, folder5 = running()
    folder5.feed(f5.run_cancelled())
    seen |= folder5.seen

    # a compaction's summary call: Requested v3 (purpose compaction) closed by ContextCompacted, its usage counted
    f8, folder8 = running()
    a8, mc8 = f8.ids.new(ActivityId), f8.ids.new(ModelCallId)
    folder8.feed(
        f8.event(
            ModelCallRequestedV3(
                activity_id=a8, model_call_id=mc8, model_ref="workspace/gpt", purpose="compaction", context_window=8192
            )
        )
    )
    folder8.feed(f8.event(ModelCallStartedV1(activity_id=a8, model_call_id=mc8)))
    folder8.feed(
        f8.event(
            ContextCompactedV1(
                activity_id=a8,
                model_call_id=mc8,
                usage=TokenUsage(input_tokens=700, output_tokens=50),
                cost_microusd=3,
                summary="the user wants the release date",
                replaced_messages=4,
                kept_messages=2,
                tokens_before=7000,
                tokens_after=900,
                trigger="threshold",
                model_ref="workspace/gpt",
            )
        )
    )
    assert folder8.activities[a8].status == "succeeded" and folder8.state.active_activity_id is None
    assert folder8.state.usage.model_iterations == 1 and folder8.state.usage.total_tokens == 750
    assert folder8.state.usage.cost_microusd == 3
    seen |= folder8.seen

    # v4: a model call that names its provider, counted as any other
    f9, folder9 = running()
    a9, mc9 = f9.ids.new(ActivityId), f9.ids.new(ModelCallId)
    folder9.feed(
        f9.event(ModelCallRequestedV4(activity_id=a9, model_call_id=mc9, model_ref="workspace/gpt", provider="openai"))
    )
    folder9.feed(f9.event(ModelCallStartedV1(activity_id=a9, model_call_id=mc9)))
    assert folder9.activities[a9].status == "running" and folder9.state.usage.model_iterations == 1
    seen |= folder9.seen

    # the pauses: an approval asked and answered, an interruption, a resume, an abandoned call
    from tests.unit.test_reducer_pauses import OWNER, answer, ask, started_by_owner

    f6, folder6 = started_by_owner()
    folder6.feed_all([f6.tool_requested("Bash"), f6.tool_started(), f6.event(ask(f6)), f6.event(answer())])
    folder6.feed_all([f6.event(RunResumedV1(owner=OWNER, reason="approval")), f6.tool_completed()])
    folder6.feed(f6.event(RunInterruptedV1(reason="gone", last_seen_at=f6.clock.now())))
    folder6.feed(f6.event(RunResumedV1(owner=OWNER)))
    assert f6.tool_call_id is not None
    folder6.feed(
        f6.event(
            ToolCallAbandonedV1(tool_call_id=f6.tool_call_id, tool_name="Bash", side_effect="execute", message="?")
        )
    )
    folder6.feed(f6.event(MessageInjectedV2(kind="continuation", text="go on")))
    seen |= folder6.seen

    # v3: the run's request is on its record
    f7, folder7 = EventFactory(), Folder()
    request = RunRequest(
        initiator_ref="user:ada",
        auth_context={"scopes": ["runs:write"]},
        model_override="fast",
        allowed_tools=("Read",),
    )
    folder7.feed(
        f7.event(
            RunCreatedV3(
                budget_limits=BudgetLimits(), goal="g", agent_name="build", prompt_hash=PROMPT_HASH, request=request
            )
        )
    )
    assert folder7.state.status == "queued" and folder7.state.request == request
    seen |= folder7.seen

    # v4 / v3: a run recorded unplanned, and its plan recorded when it starts
    f8, folder8 = EventFactory(), Folder()
    folder8.feed(
        f8.event(
            RunCreatedV4(
                budget_limits=BudgetLimits(), goal="g", agent_name="build", prompt_hash=PROMPT_HASH, planned=False
            )
        )
    )
    plan = RunPlanFacts(prompt_hash=PROMPT_HASH, tool_spec_versions={"Read": "1"}, model_ref="workspace/fast")
    folder8.feed(f8.event(RunStartedV3(owner=OWNER, plan=plan)))
    assert folder8.state.status == "running" and folder8.state.owner is not None
    seen |= folder8.seen
    assert seen == set(RUN_EVENT_PAYLOADS)


# ---- the run state machine -----------------------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["succeeded", "failed", "cancelled"])
def test_a_terminal_run_rejects_every_further_event(ending: str) -> None:
    f, folder = running()
    folder.feed({"succeeded": f.run_succeeded, "failed": f.run_failed, "cancelled": f.run_cancelled}[ending]())
    for make in (f.run_started, f.run_succeeded, f.run_cancelled, f.model_requested, f.tool_requested):
        with pytest.raises(InvalidTransition) as caught:
            folder.feed(make())
        f.rejected()
        assert caught.value.info.code == "conflict.invalid_transition"
        assert f"is {ending}" in str(caught.value)
        assert "a finished run accepts no further events" in str(caught.value)
    with pytest.raises(InvalidTransition):
        folder.feed(f.event(HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=1)))


def test_a_run_cannot_finish_with_an_active_activity() -> None:
    f, folder = running()
    folder.feed(f.model_requested())
    for make in (f.run_succeeded, f.run_failed):
        with pytest.raises(InvalidTransition) as caught:
            folder.feed(make())
        f.rejected()
        message = str(caught.value)
        assert "RunSucceeded" in message or "RunFailed" in message
        assert "is running (sequence 3, active activity" in message
        assert "complete or fail the activity first" in message


def test_cancel_interrupts_the_active_activity() -> None:
    f, folder = running()
    folder.feed_all([f.tool_requested(), f.tool_started()])
    result = folder.feed(f.run_cancelled("user pressed ctrl-c"))
    assert result.run.status == "cancelled"
    assert result.run.active_activity_id is None
    assert result.run.error is not None and result.run.error.category == "cancelled"
    assert result.activity is not None
    assert result.activity.status == "failed"
    assert result.activity.error is not None and result.activity.error.code == "cancelled.interrupted"
    assert result.activity.ended_at == result.run.ended_at


def test_a_queued_run_can_be_cancelled_but_not_finished_or_used() -> None:
    f = EventFactory()
    folder = Folder()
    folder.feed(f.run_created())
    for make in (f.run_succeeded, f.run_failed, f.model_requested, f.tool_requested):
        with pytest.raises(InvalidTransition) as caught:
            folder.feed(make())
        f.rejected()
        assert "is queued" in str(caught.value)
    assert folder.feed(f.run_cancelled()).run.status == "cancelled"


def test_run_created_comes_first_and_once() -> None:
    f = EventFactory()
    with pytest.raises(InvalidTransition, match="the first event of a run must be RunCreated"):
        reduce(None, None, f.run_started())
    f2, folder = running()
    with pytest.raises(InvalidTransition, match="RunCreated comes once"):
        folder.feed(f2.run_created())
    f2.rejected()
    with pytest.raises(InvalidTransition, match="only a queued run can start"):
        folder.feed(f2.run_started())


def test_sequence_must_be_last_plus_one() -> None:
    f, folder = running()
    with pytest.raises(SequenceConflict) as caught:
        folder.feed(
            f.event(
                ModelCallRequestedV2(
                    activity_id=f.ids.new(ActivityId), model_call_id=f.ids.new(ModelCallId), model_ref="m"
                ),
                sequence=7,
            )
        )
    assert caught.value.info.code == "conflict.sequence"
    assert "event has sequence 7 but the next free sequence is 3" in str(caught.value)
    assert "no gaps: append sequence 3 first" in str(caught.value)
    with pytest.raises(SequenceConflict, match="next free sequence is 1"):
        reduce(None, None, EventFactory().run_created().model_copy(update={"sequence": 2}))


# ---- the activity state machine ------------------------------------------------------------------------------


def test_at_most_one_active_activity() -> None:
    f, folder = running()
    folder.feed(f.model_requested())
    with pytest.raises(InvalidTransition, match="at most one pending/running activity per run"):
        folder.feed(f.tool_requested())


def test_activity_steps_must_follow_pending_running_done() -> None:
    f, folder = running()
    folder.feed(f.model_requested())
    with pytest.raises(InvalidTransition, match="record its Started event first"):
        folder.feed(f.model_completed())
    f.rejected()
    folder.feed(f.model_started())
    with pytest.raises(InvalidTransition, match="Started comes once"):
        folder.feed(f.model_started())
    f.rejected()
    folder.feed(f.model_completed())
    with pytest.raises(InvalidTransition, match="is not the active activity"):
        folder.feed(f.model_completed())


def test_activity_ids_and_kinds_must_match_the_active_one() -> None:
    f, folder = running()
    folder.feed(f.model_requested())
    good_activity, good_call = f.activity_id, f.model_call_id
    assert good_activity is not None and good_call is not None
    other = ActivityId("30000000-0000-4000-8000-0000000000ee")
    with pytest.raises(InvalidTransition, match="is not the active activity"):
        folder.feed(f.event(ModelCallStartedV1(activity_id=other, model_call_id=good_call)))
    f.rejected()
    with pytest.raises(InvalidTransition, match="does not match"):
        folder.feed(
            f.event(
                ModelCallStartedV1(
                    activity_id=good_activity, model_call_id=ModelCallId("40000000-0000-4000-8000-0000000000ee")
                )
            )
        )
    f.rejected()
    with pytest.raises(InvalidTransition, match="is a model_call, not a tool_call"):
        folder.feed(
            f.event(
                ToolCallStartedV1(
                    activity_id=good_activity, tool_call_id=ToolCallId("50000000-0000-4000-8000-0000000000ee")
                )
            )
        )


def test_tool_result_must_match_the_outcome_and_the_call() -> None:
    f, folder = running()
    folder.feed_all([f.tool_requested("Write"), f.tool_started()])
    assert f.activity_id is not None and f.tool_call_id is not None
    with pytest.raises(InvalidTransition, match="a succeeded call needs a succeeded result"):
        folder.feed(
            f.event(
                ToolCallCompletedV2(
                    activity_id=f.activity_id, tool_call_id=f.tool_call_id, result=_result(f.tool_call_id, "failed")
                )
            )
        )
    f.rejected()
    stranger = ToolCallId("50000000-0000-4000-8000-0000000000ee")
    with pytest.raises(InvalidTransition, match="belongs to tool call"):
        folder.feed(
            f.event(
                ToolCallCompletedV2(
                    activity_id=f.activity_id, tool_call_id=f.tool_call_id, result=_result(stranger, "succeeded")
                )
            )
        )


def test_agent_switch_counts_must_follow_on() -> None:
    f = EventFactory()
    folder = Folder()
    folder.feed(
        f.event(RunCreatedV2(budget_limits=BudgetLimits(), goal="g", agent_name="build", prompt_hash=PROMPT_HASH))
    )
    with pytest.raises(InvalidTransition, match="switch_count must be 1"):
        folder.feed(f.event(AgentSwitchedV1(from_agent="build", to_agent="plan", switch_count=2)))
    f.rejected()
    with pytest.raises(InvalidTransition, match="is not the current agent 'build'"):
        folder.feed(f.event(AgentSwitchedV1(from_agent="plan", to_agent="build", switch_count=1)))
    f.rejected()
    folder.feed(f.event(AgentSwitchedV1(from_agent="build", to_agent="plan", switch_count=1)))
    folder.feed(f.event(AgentSwitchedV1(from_agent="plan", to_agent="build", switch_count=2)))
    assert folder.state.switch_count == 2 and folder.state.effective_agent_name == "build"


# ---- budgets -------------------------------------------------------------------------------------------------


def test_tokens_already_spent_block_the_next_request() -> None:
    f, folder = running(BudgetLimits(max_tokens=100))
    folder.feed_all(f.model_call(60, 39))  # 99 < 100: the next request is still allowed
    folder.feed_all(f.tool_call())
    folder.feed_all(f.model_call(1, 0))  # now 100 >= 100
    before = folder.state
    for make in (f.model_requested, f.tool_requested):
        with pytest.raises(BudgetExceeded) as caught:
            folder.feed(make())
        f.rejected()
        assert caught.value.info.code == "budget.max_tokens"
        assert caught.value.info.details == {
            "limit": 100,
            "used": 100,
            "event_type": caught.value.info.details["event_type"],
            "run_id": str(f.run_id),
        }
    assert folder.state == before


def test_cost_already_spent_blocks_the_next_request() -> None:
    f, folder = running(BudgetLimits(max_cost_microusd=50))
    folder.feed_all(f.model_call(1, 1, cost_microusd=50))
    with pytest.raises(BudgetExceeded) as caught:
        folder.feed(f.model_requested())
    assert caught.value.info.code == "budget.max_cost_microusd"
    assert caught.value.info.details["used"] == 50


def test_wall_time_over_the_limit_blocks_the_next_request() -> None:
    f, folder = running(BudgetLimits(max_wall_time_ms=5_000))
    folder.feed_all(f.model_call())  # +3 s
    assert folder.state.usage.wall_time_ms == 3_000
    f.clock.advance(timedelta(seconds=1))  # the next request is at +5 s: exactly the limit, still allowed
    folder.feed_all(f.tool_call())
    assert folder.state.usage.wall_time_ms == 7_000
    with pytest.raises(BudgetExceeded) as caught:
        folder.feed(f.model_requested())
    assert caught.value.info.code == "budget.max_wall_time_ms"
    assert caught.value.info.details["used"] == 8_000
    assert "--max-wall-time-ms" in str(caught.value)


def test_the_wait_for_an_mcp_servers_answer_is_not_wall_time() -> None:
    f, folder = running(BudgetLimits(max_wall_time_ms=5_000))
    folder.feed_all(f.model_call())  # +3 s
    folder.feed(f.event(ElicitationRequestedV1(elicitation_id="el_1", server="asker", message="Really?")))  # +4 s
    f.clock.advance(timedelta(minutes=10))  # nobody answered for ten minutes
    answered = ElicitationResolvedV1(elicitation_id="el_1", action="accept", answered_by="alice", waited_ms=601_000)
    folder.feed(f.event(answered))
    assert folder.state.usage.wall_time_ms == 4_000  # the ten minutes are not the run's
    folder.feed(f.model_requested())  # +5 s of running: at the limit, still allowed
    assert folder.state.usage.wall_time_ms == 5_000


def test_check_budget_lets_the_runtime_ask_first() -> None:
    f, folder = running(BudgetLimits(max_model_iterations=1))
    check_budget(folder.state, "ModelCallRequested", f.clock.now())
    folder.feed_all(f.model_call())
    with pytest.raises(BudgetExceeded, match="max_model_iterations"):
        check_budget(folder.state, "ModelCallRequested", f.clock.now())
    check_budget(folder.state, "ToolCallRequested", f.clock.now())


def test_zero_budget_blocks_the_first_request() -> None:
    f, folder = running(BudgetLimits(max_model_iterations=0))
    with pytest.raises(BudgetExceeded) as caught:
        folder.feed(f.model_requested())
    assert caught.value.info.details == {
        "limit": 0,
        "used": 0,
        "event_type": "ModelCallRequested",
        "run_id": str(f.run_id),
    }


# ---- validation and purity -----------------------------------------------------------------------------------


def test_unknown_event_pairs_and_bad_payloads_fail_closed() -> None:
    f, folder = running()
    good = f.model_requested()
    f.rejected()
    with pytest.raises(BearAgentError) as caught:
        folder.feed(good.model_copy(update={"schema_version": 9}))
    assert caught.value.info.code == "validation.unknown_event"
    with pytest.raises(BearAgentError) as caught:
        folder.feed(good.model_copy(update={"event_type": "ModelCallTeleported"}))
    assert caught.value.info.code == "validation.unknown_event"
    with pytest.raises(BearAgentError) as caught:
        folder.feed(good.model_copy(update={"payload": {"activity_id": "nope"}}))
    assert caught.value.info.code == "validation.invalid_event_payload"


def test_reduce_never_changes_its_inputs_and_needs_the_active_activity() -> None:
    f, folder = running()
    folder.feed(f.model_requested())
    run, active = folder.state, folder.active()
    dumped = (run.model_dump(), None if active is None else active.model_dump())
    reduce(run, active, f.model_started())
    assert (run.model_dump(), None if active is None else active.model_dump()) == dumped
    with pytest.raises(ValueError, match="pass the run's active activity"):
        reduce(run, None, f.model_started())


def test_projections_are_valid_models() -> None:
    folder = Folder()
    folder.feed_all([s.event for s in seed_001_steps()])
    run = folder.state
    assert RunProjection.model_validate(run.model_dump()) == run
    for activity in folder.activities.values():
        assert ActivityProjection.model_validate_json(activity.model_dump_json()) == activity


def test_uppercase_ids_in_payloads_are_canonicalised() -> None:
    f, folder = running()
    event = f.model_requested()
    loud = event.model_copy(
        update={"payload": {k: str(v).upper() for k, v in event.payload.items()}}  # same ids, upper case
    )
    result = folder.feed(loud)
    assert result.activity is not None and result.activity.activity_id == f.activity_id
    folder.feed(f.model_started())
    assert folder.activities[result.activity.activity_id].status == "running"


def test_the_budget_list_is_the_budget_model() -> None:
    # one list (domain.budgets.BUDGETS) makes the config keys, the CLI flags and the reducer's messages
    from bearagent.cli._run_common import BUDGET_FLAGS
    from bearagent.config.model import BUDGET_KEYS
    from bearagent.domain.budgets import BUDGETS, BudgetLimits

    assert tuple(BudgetLimits.model_fields) == tuple(BUDGETS) == BUDGET_KEYS
    assert [name for name, _ in BUDGET_FLAGS] == list(BUDGETS)

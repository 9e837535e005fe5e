"""The run's two pauses in the reducer: waiting for an approval and interrupted by a dead owner, and resuming.

Wall time counts only while the run runs; an approval is answered once; only the states that may resume do.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.support.events import EventFactory
from tests.unit.test_reducer import Folder, running

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError
from bearagent.domain.run_events import (
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    InFlight,
    RunInterruptedV1,
    RunOwner,
    RunResumedV1,
    RunStartedV2,
    ToolCallAbandonedV1,
)
from bearagent.runtime.reducer import BudgetExceeded, InvalidTransition

OWNER = RunOwner(host="host-a", boot_id="b1", pid=4242, process_start=99)
OTHER = RunOwner(host="host-b", boot_id="b2", pid=7, process_start=5)


def ask(f: EventFactory, approval_id: str = "ap1", *, attached: bool = False) -> ApprovalRequestedV1:
    assert f.activity_id is not None and f.tool_call_id is not None
    return ApprovalRequestedV1(
        approval_id=approval_id,
        activity_id=f.activity_id,
        tool_call_id=f.tool_call_id,
        tool_name="Bash",
        arguments={"command": "make"},
        reason="Bash asks in default mode",
        attached=attached,
    )


def answer(approval_id: str = "ap1", decision: str = "allow_once") -> ApprovalResolvedV1:
    return ApprovalResolvedV1.model_validate(
        {"approval_id": approval_id, "decision": decision, "answered_by": "cli:test"}
    )


def started_by_owner(limits: BudgetLimits | None = None) -> tuple[EventFactory, Folder]:
    f = EventFactory()
    folder = Folder()
    folder.feed_all([f.run_created(limits), f.event(RunStartedV2(owner=OWNER))])
    return f, folder


def test_run_started_v2_records_its_owner() -> None:
    _f, folder = started_by_owner()
    assert folder.state.owner == OWNER and folder.state.status == "running"


def test_approval_pauses_wall_time_and_is_answered_once() -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started()])  # 2 s after the start
    folder.feed(f.event(ask(f)))  # +1 s: waiting, 3 s of wall time
    run = folder.state
    assert run.status == "waiting" and run.usage.wall_time_ms == 3000
    assert run.owner is None, "an unattached request lets go of the run"
    assert run.pending_approval is not None and run.pending_approval.decision is None
    f.clock.advance(timedelta(hours=5))  # a person thinks for five hours
    folder.feed(f.event(answer()))
    assert folder.state.status == "waiting" and folder.state.pending_approval is not None
    assert folder.state.pending_approval.decision == "allow_once"
    assert folder.state.usage.wall_time_ms == 3000

    # a second answer, even with the same id, is refused and changes nothing
    with pytest.raises(InvalidTransition, match="already answered"):
        folder.feed(f.event(answer(decision="deny")))
    f.rejected()
    folder.feed(f.event(RunResumedV1(owner=OTHER, reason="approval")))
    assert folder.state.status == "running" and folder.state.owner == OTHER
    assert folder.state.pending_approval is None
    folder.feed(f.tool_completed())  # +1 s of running
    assert folder.state.usage.wall_time_ms == 4000, "the five hours of waiting are not counted"


def test_wall_time_budget_counts_only_running_time() -> None:
    f, folder = started_by_owner(BudgetLimits(max_wall_time_ms=10_000))
    folder.feed_all([f.tool_requested("Bash"), f.tool_started()])
    folder.feed(f.event(ask(f)))
    f.clock.advance(timedelta(days=2))
    folder.feed_all([f.event(answer()), f.event(RunResumedV1(owner=OWNER, reason="approval")), f.tool_completed()])
    folder.feed_all(f.model_call())  # still within 10 s of running time: admitted
    f.clock.advance(timedelta(seconds=20))
    with pytest.raises(BudgetExceeded, match="max_wall_time_ms"):
        folder.feed(f.model_requested())


@pytest.mark.parametrize(
    ("approval_id", "why"),
    [("other", "the pending approval is ap1, not other")],
)
def test_an_answer_to_the_wrong_request_is_refused(approval_id: str, why: str) -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started(), f.event(ask(f))])
    with pytest.raises(InvalidTransition, match=why):
        folder.feed(f.event(answer(approval_id)))


def test_an_answer_without_a_request_is_refused() -> None:
    f, folder = running()
    with pytest.raises(InvalidTransition, match="waits for no approval"):
        folder.feed(f.event(answer()))


def test_a_waiting_run_resumes_only_after_its_answer() -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started(), f.event(ask(f, attached=True))])
    assert folder.state.owner == OWNER, "an attached asker keeps the run"
    with pytest.raises(InvalidTransition, match="only after its approval is answered"):
        folder.feed(f.event(RunResumedV1(owner=OWNER, reason="approval")))


def test_approval_needs_the_running_tool_call() -> None:
    f, folder = started_by_owner()
    folder.feed(f.tool_requested("Bash"))  # pending, not started
    with pytest.raises(InvalidTransition, match="is pending, not running"):
        folder.feed(f.event(ask(f)))


def test_interrupted_counts_wall_time_until_last_seen_and_closes_the_activity() -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started()])  # +2 s
    last_seen = f.clock.now() + timedelta(seconds=3)
    f.clock.advance(timedelta(minutes=30))  # found dead half an hour later
    assert f.activity_id is not None and f.tool_call_id is not None
    in_flight = InFlight(activity_id=f.activity_id, kind="tool_call", name="Bash", tool_call_id=f.tool_call_id)
    result = folder.feed(
        f.event(RunInterruptedV1(reason="pid 4242 is gone", owner=OWNER, last_seen_at=last_seen, in_flight=in_flight))
    )
    run = result.run
    assert run.status == "interrupted" and run.owner is None and run.active_activity_id is None
    assert run.usage.wall_time_ms == 5000
    assert result.activity is not None and result.activity.status == "failed"
    assert result.activity.error is not None and result.activity.error.code == "cancelled.owner_gone"
    # nothing else may happen to an interrupted run but a resume (or a cancel)
    with pytest.raises(InvalidTransition):
        folder.feed(f.model_requested())
    f.rejected()
    folder.feed(f.event(RunResumedV1(owner=OTHER)))
    folder.feed(
        f.event(
            ToolCallAbandonedV1(
                tool_call_id=f.tool_call_id, tool_name="Bash", side_effect="execute", message="outcome unknown"
            )
        )
    )
    folder.feed_all(f.model_call())  # +1 s each
    assert folder.state.usage.wall_time_ms == 5000 + 4000, "counted again from the resume, 1 s per event"
    assert folder.state.status == "running" and folder.state.owner == OTHER


def test_only_running_runs_are_interrupted_and_only_paused_runs_resume() -> None:
    f, folder = started_by_owner()
    with pytest.raises(InvalidTransition, match="only an interrupted run"):
        folder.feed(f.event(RunResumedV1(owner=OWNER)))
    f.rejected()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started(), f.event(ask(f))])
    with pytest.raises(InvalidTransition, match="waiting run waits"):
        folder.feed(f.event(RunInterruptedV1(reason="x", last_seen_at=f.clock.now())))


def test_abandoned_only_between_activities() -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started()])
    assert f.tool_call_id is not None
    with pytest.raises(InvalidTransition, match="between activities"):
        folder.feed(
            f.event(ToolCallAbandonedV1(tool_call_id=f.tool_call_id, tool_name="Bash", side_effect="x", message="m"))
        )


def test_a_waiting_run_can_be_cancelled() -> None:
    f, folder = started_by_owner()
    folder.feed_all([f.tool_requested("Bash"), f.tool_started(), f.event(ask(f))])
    result = folder.feed(f.run_cancelled("nobody will answer"))
    assert result.run.status == "cancelled" and result.run.pending_approval is None
    assert result.activity is not None and result.activity.status == "failed"


def test_pause_events_are_bearagent_errors_with_the_state_named() -> None:
    f, folder = running()
    with pytest.raises(BearAgentError) as caught:
        folder.feed(f.event(RunResumedV1(owner=OWNER)))
    assert "is running" in str(caught.value)

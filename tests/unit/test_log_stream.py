"""`runtime.streaming.LogStream`: the stream events a run's log makes. Approvals are in the stream (protocol 3: a
client sees a run start waiting and the answer without polling), and an abandoned tool call closes its `tool_call`
with an error `tool_result`. Every event made is checked to survive the wire (encode, then the trust-boundary
decoder)."""

from __future__ import annotations

from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ModelCallId, ToolCallId
from bearagent.domain.run_events import (
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    InFlight,
    ModelCallCompletedV2,
    RecordedToolCall,
    RunCancelledV1,
    RunCreatedV2,
    RunInterruptedV1,
    RunStartedV1,
    RunSucceededV2,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.stream import (
    ApprovalRequestedEvent,
    ApprovalResolvedEvent,
    StreamEvent,
    ToolResultEvent,
    encode_stream_event,
    parse_stream_event_json,
)
from bearagent.domain.tools import ToolResult
from bearagent.runtime.streaming import LogStream


def _made(f: EventFactory, events: list[Event]) -> list[StreamEvent]:
    """The stream events of `events`, as a consumer reads them (each checked to read back unchanged)."""
    stream = LogStream(f.run_id)
    made = [out for event in events for out in stream.committed(event)]
    decoded = [parse_stream_event_json(encode_stream_event(out)) for out in made]
    assert decoded == made
    return decoded


def _asking_run(f: EventFactory) -> tuple[list[Event], ToolCallId, ActivityId]:
    """A run whose model asked for `write_file` (the projected name of Write), which the gate put to the user."""
    model = f.ids.new(ModelCallId)
    call, activity = f.ids.new(ToolCallId), f.ids.new(ActivityId)
    args = {"file_path": "notes.txt", "content": "release notes\n"}
    events = [
        f.event(
            RunCreatedV2(
                budget_limits=BudgetLimits(),
                goal="write the notes",
                agent_name="main",
                prompt_hash="0" * 64,
                tool_spec_versions={"Write": "1"},
            )
        ),
        f.event(RunStartedV1()),
        f.event(
            ModelCallCompletedV2(
                activity_id=f.ids.new(ActivityId),
                model_call_id=model,
                usage=TokenUsage(input_tokens=10, output_tokens=2),
                text="Writing.",
                tool_calls=(
                    RecordedToolCall(tool_call_id=call, provider_call_id="p1", name="write_file", arguments=args),
                ),
                stop_reason="tool_use",
            )
        ),
        f.event(ToolCallRequestedV2(activity_id=activity, tool_call_id=call, tool_name="Write", arguments=args)),
        f.event(
            ApprovalRequestedV1(
                approval_id="ap_5f2c9a41d0e3",
                activity_id=activity,
                tool_call_id=call,
                tool_name="Write",
                arguments=args,
                reason="Write is a file-writing tool",
                suggested_rule="Write(/notes.txt)",
            )
        ),
    ]
    return events, call, activity


def test_an_approval_asked_and_answered_is_in_the_stream() -> None:
    f = EventFactory()
    events, call, activity = _asking_run(f)
    resolved = ApprovalResolvedV1(
        approval_id="ap_5f2c9a41d0e3", decision="deny", answered_by="user:42", message="not now", seal="a" * 64
    )
    events.append(f.event(resolved))
    made = _made(f, events)
    assert [e.type for e in made] == ["run.started", "step", "tool_call", "approval.requested", "approval.resolved"]
    asked, answered = made[3], made[4]
    assert isinstance(asked, ApprovalRequestedEvent) and isinstance(answered, ApprovalResolvedEvent)
    assert (asked.run_id, asked.seq, asked.approval_id) == (f.run_id, 5, "ap_5f2c9a41d0e3")
    assert (asked.tool_call_id, asked.tool_name) == (str(call), "write_file")  # the name of its tool_call event
    assert dict(asked.arguments) == {"file_path": "notes.txt", "content": "release notes\n"}
    assert (asked.reason, asked.suggested_rule) == ("Write is a file-writing tool", "Write(/notes.txt)")
    assert asked.choices == ("allow_once", "allow_always", "deny")
    assert (answered.run_id, answered.seq, answered.approval_id) == (f.run_id, 6, "ap_5f2c9a41d0e3")
    assert (answered.decision, answered.answered_by, answered.message) == ("deny", "user:42", "not now")
    assert answered.tool_call_id == str(call)  # remembered from the request
    assert "seal" not in encode_stream_event(answered)  # the seal is the log's, not the stream's
    assert str(activity) not in encode_stream_event(asked)  # so is the activity


def test_an_allowed_call_goes_on_to_its_result_and_the_run_ends() -> None:
    f = EventFactory()
    events, call, activity = _asking_run(f)
    events.append(
        f.event(ApprovalResolvedV1(approval_id="ap_5f2c9a41d0e3", decision="allow_once", answered_by="local"))
    )
    events.append(f.event(ToolCallStartedV1(activity_id=activity, tool_call_id=call)))
    result = ToolResult(tool_call_id=call, tool_name="Write", status="succeeded", content="wrote notes.txt")
    events.append(f.event(ToolCallCompletedV2(activity_id=activity, tool_call_id=call, result=result)))
    events.append(f.event(RunSucceededV2(final_text="Done.")))
    made = _made(f, events)
    assert [e.type for e in made][4:] == ["approval.resolved", "tool_result", "step", "final", "run.succeeded"]


def test_an_approval_a_cancel_made_moot_ends_with_the_run() -> None:
    f = EventFactory()
    events, _, _ = _asking_run(f)
    events.append(f.event(RunCancelledV1(reason="cancelled over HTTP")))
    stream = LogStream(f.run_id)
    made = [parse_stream_event_json(encode_stream_event(out)) for event in events for out in stream.committed(event)]
    assert [e.type for e in made][-2:] == ["approval.requested", "run.failed"] and stream.finished


def test_an_abandoned_call_is_closed_by_an_error_result() -> None:
    f = EventFactory()
    events, call, activity = _asking_run(f)
    events = events[:4]  # no approval: the call ran
    events.append(f.event(ToolCallStartedV1(activity_id=activity, tool_call_id=call)))
    in_flight = InFlight(activity_id=activity, kind="tool_call", name="Write", tool_call_id=call)
    events.append(f.event(RunInterruptedV1(reason="owner died", last_seen_at=f.clock.now(), in_flight=in_flight)))
    message = "Write was running when the run stopped; its outcome is unknown: check before doing it again"
    events.append(
        f.event(ToolCallAbandonedV1(tool_call_id=call, tool_name="Write", side_effect="write", message=message))
    )
    made = _made(f, events)
    assert [e.type for e in made] == ["run.started", "step", "tool_call", "tool_result"]
    closed = made[-1]
    assert isinstance(closed, ToolResultEvent)
    assert (closed.id, closed.name, closed.result, closed.is_error) == (str(call), "write_file", message, True)
    assert (closed.run_id, closed.seq) == (f.run_id, events[-1].sequence)

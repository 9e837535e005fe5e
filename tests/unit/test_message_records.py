"""Session messages as records (`runtime/message_records.py`): the history `history.py` rebuilds, each message with
its run, its time and its parts; pure, over hand-built logs."""

from __future__ import annotations

from tests.unit.test_run_steps import V2Run, read_the_notes

from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.domain.run_events import MessageInjectedV1
from bearagent.runtime.history import run_messages, sourced_run_messages
from bearagent.runtime.message_records import session_message_records

SESSION = "20000000-0000-4000-8000-000000000002"


def test_the_records_are_the_rebuilt_history_with_runs_times_and_parts() -> None:
    first = read_the_notes()
    second = V2Run(ids=Uuid4IdGenerator())
    second.fact(MessageInjectedV1(kind="prompt_context", text="extra context"))
    second.turn("Just text.")
    second.succeed("Just text.")
    records = session_message_records(SESSION, [(first.run_id, first.events), (second.run_id, second.events)])
    history = run_messages(first.events) + run_messages(second.events)
    assert (
        [r.role for r in records]
        == [m.role for m in history]
        == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
    )
    assert [r.run_id for r in records] == [first.run_id] * 4 + [second.run_id] * 2
    assert all(r.session_id == SESSION for r in records) and first.run_id != second.run_id
    user, call, result, _, merged, _ = records
    assert user.content == ({"type": "text", "text": "read the notes"},)
    assert user.metadata["event_type"] == "RunCreated" and user.created_at == first.events[0].occurred_at
    assert call.content[0] == {"type": "text", "text": "Reading."}
    assert call.content[1]["type"] == "tool-call" and call.content[1]["tool_name"] == "Read"
    assert call.content[1]["arguments"] == {"file_path": "notes.md"}
    assert result.content[0]["type"] == "tool-result" and result.content[0]["result"] == "hello notes"
    assert result.content[0]["tool_call_id"] == call.content[1]["tool_call_id"]
    assert result.created_at > call.created_at > user.created_at
    assert merged.content[0]["text"] == "read the notes\n\nextra context"  # the goal with its hook context
    assert len({r.id for r in records}) == 6
    again = session_message_records(SESSION, [(first.run_id, first.events), (second.run_id, second.events)])
    assert [r.to_json() for r in again] == [r.to_json() for r in records]


def test_an_unanswered_call_gets_the_synthetic_result_the_history_has() -> None:
    run = V2Run()
    run.turn("Writing.", ("Write", {"file_path": "a.txt", "content": "x"}))
    sourced = sourced_run_messages(run.events)
    assert [m for m, _ in sourced] == run_messages(run.events)
    *_, (last, source) = sourced
    assert last.role == "tool" and source.sequence == run.events[-1].sequence

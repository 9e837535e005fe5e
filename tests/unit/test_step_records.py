"""RunStep records (`runtime/step_records.py`): a run's log flattened into model calls, tool calls, delegations and
agent switches, with their log sequences and times; pure, over hand-built logs."""

from __future__ import annotations

from tests.unit.test_run_steps import V2Run, read_the_notes

from bearagent.domain.ids import ActivityId, ModelCallId, RunId
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    ChildRunFinishedV2,
    ChildRunStartedV1,
    ModelCallRequestedV2,
    ToolCallRequestedV2,
)
from bearagent.runtime.step_records import RunStepRecord, run_step_records


def _types(records: list[RunStepRecord]) -> list[str]:
    return [r.step_type for r in records]


def test_a_finished_run_reads_as_model_and_tool_steps_with_times() -> None:
    run = read_the_notes()
    records = run_step_records(run.run_id, run.events)
    assert _types(records) == ["model_call", "tool_call", "model_call"]
    assert [r.seq for r in records] == [1, 2, 3]
    first, tool, last = records
    assert first.status == "succeeded" and first.output is not None and first.output["text"] == "Reading."
    assert first.agent_name == "main" and first.ended_seq is not None and first.ended_seq > first.started_seq
    assert tool.name == "Read" and tool.input["arguments"] == {"file_path": "notes.md"}
    assert tool.output is not None and tool.output["content"] == "hello notes" and tool.status == "succeeded"
    by_seq = {e.sequence: e for e in run.events}
    assert tool.started_at == by_seq[tool.started_seq].occurred_at
    assert tool.ended_seq is not None and tool.ended_at == by_seq[tool.ended_seq].occurred_at
    assert last.output is not None and last.output["tool_calls"] == []
    again = run_step_records(run.run_id, run.events)
    assert [r.id for r in again] == [r.id for r in records] and len({r.id for r in records}) == 3
    assert records[0].to_json()["started_at"] == first.started_at.isoformat()  # pyright: ignore[reportOptionalMemberAccess]


def test_switches_and_delegations_are_steps_of_their_own() -> None:
    run = V2Run()
    (switch,) = run.turn("", ("SwitchAgent", {"agent": "builder"}))
    run.tool(switch, "SwitchAgent", {"agent": "builder"}, "switched")
    run.fact(AgentSwitchedV1(from_agent="main", to_agent="builder", switch_count=1, reason="needs edits"))
    (task,) = run.turn("Delegating.", ("Task", {"subagent_type": "explore", "prompt": "look"}))
    child = run.f.ids.new(RunId)
    started = ChildRunStartedV1(child_run_id=child, agent_name="explore", tool_call_id=task)
    finished = ChildRunFinishedV2(child_run_id=child, status="succeeded")
    run.tool(task, "Task", {"subagent_type": "explore", "prompt": "look"}, "found it", during=(started, finished))  # pyright: ignore[reportArgumentType]
    run.turn("Done.")
    records = run_step_records(run.run_id, run.succeed("Done."))
    assert _types(records) == [
        "model_call",
        "tool_call",
        "agent_switch",
        "model_call",
        "tool_call",
        "agent_delegate",
        "model_call",
    ]
    switched = records[2]
    assert (switched.name, switched.agent_name, switched.status) == ("builder", "main", "succeeded")
    assert switched.input["reason"] == "needs edits"
    delegated = records[5]
    assert (delegated.name, delegated.agent_name, delegated.status) == ("explore", "builder", "succeeded")
    assert delegated.input["child_run_id"] == str(child) and delegated.ended_seq is not None
    assert records[3].agent_name == "builder"


def test_a_live_run_has_running_steps_and_an_ended_one_unfinished_ones() -> None:
    run = V2Run()
    (write,) = run.turn("Writing.", ("Write", {"file_path": "a.txt", "content": "x"}))
    run.events.append(
        run.f.event(
            ToolCallRequestedV2(
                activity_id=run.f.ids.new(ActivityId), tool_call_id=write, tool_name="Write", arguments={}
            )
        )
    )
    (_, tool) = run_step_records(run.run_id, run.events, status="running")
    assert tool.status == "running" and tool.ended_seq is None and tool.ended_at is None and tool.output is None
    (_, cut) = run_step_records(run.run_id, run.events, status="interrupted")
    assert cut.status == "unfinished"

    thinking = V2Run()
    thinking.events.append(
        thinking.f.event(
            ModelCallRequestedV2(
                activity_id=thinking.f.ids.new(ActivityId), model_call_id=thinking.f.ids.new(ModelCallId), model_ref="x"
            )
        )
    )
    (in_flight,) = run_step_records(thinking.run_id, thinking.events, status="running")
    assert (in_flight.step_type, in_flight.status, in_flight.agent_name) == ("model_call", "running", "main")
    assert in_flight.output is None and in_flight.name == "x"

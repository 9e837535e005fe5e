"""A run's log read as steps (`runtime/run_steps.py`), checked as a valid run (`runtime/log_check.py`) and aligned
with another (`runtime/run_alignment.py`): pure functions over hand-built v1 and v2 logs."""

from __future__ import annotations

from typing import Literal

from tests.support.events import SEED_RUN_ID, EventFactory, seed_001_steps

from bearagent.cli.run_steps_view import steps_json
from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, IdGenerator, ModelCallId, RunId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    HookExecutedV1,
    InFlight,
    MessageInjectedV1,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    ModelCallRequestedV2,
    ModelCallStartedV1,
    RecordedToolCall,
    RunCreatedV2,
    RunInterruptedV1,
    RunOwner,
    RunResumedV1,
    RunStartedV1,
    RunStartedV2,
    RunSucceededV2,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.tools import ToolResult
from bearagent.runtime.log_check import read_log
from bearagent.runtime.replaying import reuse_reason
from bearagent.runtime.run_alignment import DIFF, REPLAY, align, text_diff
from bearagent.runtime.run_steps import canonical_tool_name

PROMPT_HASH = "0" * 64


class V2Run:
    """A v2 log as the agent loop writes it, one helper per step."""

    def __init__(self, agent: str = "main", *, ids: IdGenerator | None = None) -> None:
        self.f = EventFactory(ids=ids)
        self.events: list[Event] = [
            self.f.event(
                RunCreatedV2(
                    budget_limits=BudgetLimits(),
                    goal="read the notes",
                    agent_name=agent,
                    prompt_hash=PROMPT_HASH,
                    tool_spec_versions={"Read": "1"},
                )
            ),
            self.f.event(RunStartedV1()),
        ]

    @property
    def run_id(self) -> str:
        return str(self.f.run_id)

    def _model_start(self) -> tuple[ActivityId, ModelCallId]:
        activity, call = self.f.ids.new(ActivityId), self.f.ids.new(ModelCallId)
        self.events.append(
            self.f.event(ModelCallRequestedV2(activity_id=activity, model_call_id=call, model_ref="workspace/x"))
        )
        self.events.append(self.f.event(ModelCallStartedV1(activity_id=activity, model_call_id=call)))
        return activity, call

    def turn(self, text: str, *calls: tuple[str, dict[str, str]], tokens: int = 10) -> list[ToolCallId]:
        activity, call = self._model_start()
        ids = [self.f.ids.new(ToolCallId) for _ in calls]
        recorded = tuple(
            RecordedToolCall(tool_call_id=i, provider_call_id=f"p{n}", name=name, arguments=args)
            for n, (i, (name, args)) in enumerate(zip(ids, calls, strict=True))
        )
        self.events.append(
            self.f.event(
                ModelCallCompletedV2(
                    activity_id=activity,
                    model_call_id=call,
                    usage=TokenUsage(input_tokens=tokens, output_tokens=2),
                    text=text,
                    tool_calls=recorded,
                    stop_reason="tool_use" if calls else "end_turn",
                )
            )
        )
        return ids

    def failed_attempt(self) -> None:
        activity, call = self._model_start()
        error = ErrorInfo.of("rate_limit", "slow", "slow down", retryable=True)
        self.events.append(
            self.f.event(ModelCallFailedV2(activity_id=activity, model_call_id=call, error=error, will_retry=True))
        )

    def tool(
        self,
        call_id: ToolCallId,
        name: str,
        args: dict[str, str],
        content: str,
        *,
        error: bool = False,
        during: tuple[HookExecutedV1, ...] = (),
    ) -> None:
        activity = self.f.ids.new(ActivityId)
        self.events.append(
            self.f.event(
                ToolCallRequestedV2(activity_id=activity, tool_call_id=call_id, tool_name=name, arguments=args)
            )
        )
        self.events.append(self.f.event(ToolCallStartedV1(activity_id=activity, tool_call_id=call_id)))
        self.events.extend(self.f.event(fact) for fact in during)
        if error:
            result = ToolResult(
                tool_call_id=call_id,
                tool_name=name,
                status="failed",
                content=content,
                error=ErrorInfo.of("tool", "x", content),
            )
            self.events.append(
                self.f.event(ToolCallFailedV2(activity_id=activity, tool_call_id=call_id, result=result))
            )
        else:
            result = ToolResult(tool_call_id=call_id, tool_name=name, status="succeeded", content=content)
            self.events.append(
                self.f.event(ToolCallCompletedV2(activity_id=activity, tool_call_id=call_id, result=result))
            )

    def fact(self, payload: AgentSwitchedV1 | MessageInjectedV1) -> None:
        self.events.append(self.f.event(payload))

    def succeed(self, text: str) -> list[Event]:
        self.events.append(self.f.event(RunSucceededV2(final_text=text)))
        return self.events


def read_the_notes(content: str = "hello notes", *, ids: IdGenerator | None = None) -> V2Run:
    run = V2Run(ids=ids)
    (read,) = run.turn("Reading.", ("Read", {"file_path": "notes.md"}))
    run.tool(read, "Read", {"file_path": "notes.md"}, content)
    run.turn("All read.")
    run.succeed("All read.")
    return run


# ---- steps -----------------------------------------------------------------------------------------------------


def test_a_v2_log_reads_as_turns_with_their_tool_calls() -> None:
    run = read_the_notes()
    check, steps = read_log(run.run_id, run.events)
    assert check.valid, check.problems
    assert steps.status == "succeeded" and steps.final_text == "All read."
    assert steps.agent_name == "main" and steps.goal == "read the notes"
    assert [t.text for t in steps.turns] == ["Reading.", "All read."]
    (tool,) = steps.turns[0].tools
    assert (tool.name, tool.content, tool.is_error, tool.outcome) == ("Read", "hello notes", False, "succeeded")
    assert tool.arguments == {"file_path": "notes.md"}
    calls = steps.turns[0].tool_calls
    assert calls is not None and str(calls[0].tool_call_id) == tool.tool_call_id
    assert [row["step"] for row in steps_json(steps)] == ["1", "1.1", "2", "end"]


def test_a_retried_attempt_belongs_to_the_turn_that_followed_it() -> None:
    run = V2Run()
    run.failed_attempt()
    run.turn("Done.")
    check, steps = read_log(run.run_id, run.succeed("Done."))
    assert check.valid
    assert len(steps.turns) == 1
    (attempt,) = steps.turns[0].failed_attempts
    assert (attempt.kind, attempt.code) == ("retried", "rate_limit.slow")


def test_switches_stop_feedback_and_hooks_are_attributed() -> None:
    run = V2Run()
    (switch,) = run.turn("", ("SwitchAgent", {"agent": "builder"}))
    hook = HookExecutedV1(hook_event="PreToolUse", handler="guard.sh", handler_type="command", duration_ms=1)
    run.tool(switch, "SwitchAgent", {"agent": "builder"}, "switched", during=(hook,))
    run.fact(AgentSwitchedV1(from_agent="main", to_agent="builder", switch_count=1))
    run.turn("first answer")
    run.fact(MessageInjectedV1(kind="stop_feedback", text="Stop hook feedback: run the tests"))
    run.turn("tests pass")
    check, steps = read_log(run.run_id, run.succeed("tests pass"))
    assert check.valid, check.problems
    assert steps.turns[0].switched_to == "builder"
    assert [t.agent for t in steps.turns] == ["main", "builder", "builder"]
    assert steps.turns[1].stop_feedback == "run the tests"
    assert steps.hook_executions == 1
    assert steps.turns[0].tools[0].hook_decisions == ("none",)  # the hook ran during the SwitchAgent call


def test_the_seed_001_worked_example_is_a_valid_v1_log_whose_fields_are_not_recorded() -> None:
    events = [s.event for s in seed_001_steps()]
    check, steps = read_log(str(SEED_RUN_ID), events)
    assert check.valid, check.problems
    assert check.events == 18 and steps.status == "succeeded"
    assert len(steps.turns) == 3
    assert [t.usage.total_tokens for t in steps.turns] == [448, 660, 192]
    assert all(t.text is None and t.tool_calls is None for t in steps.turns)  # v1: not recorded, not ""
    names = [canonical_tool_name(t.name) for t in steps.tool_steps]
    assert names == ["Read", "Write"]
    assert all(t.arguments is None and t.content is None and t.is_error is False for t in steps.tool_steps)
    assert steps.recorded_with_v1 and steps.agent_name is None and steps.goal is None


# ---- the log check ---------------------------------------------------------------------------------------------


def test_a_missing_event_names_the_run_and_the_sequence() -> None:
    run = read_the_notes()
    broken = [e for e in run.events if e.sequence != 5]
    check, _ = read_log(run.run_id, broken)
    assert not check.valid and check.status == "invalid"
    (problem,) = check.errors
    assert problem.sequence == 5
    assert "event 5 is missing: the log goes from 4 to 6" in problem.message


def test_an_event_that_does_not_fold_is_named_with_its_type() -> None:
    run = read_the_notes()
    renumbered = [e.model_copy(update={"sequence": i}) for i, e in enumerate(run.events[:4] + run.events[5:], 1)]
    check, _ = read_log(run.run_id, renumbered)
    (problem,) = check.errors
    assert problem.sequence == 5
    assert problem.message.startswith("event 5 (ToolCallRequested v2) does not fold into a valid run")


def test_a_log_without_its_end_is_explained_not_an_error() -> None:
    run = V2Run()
    (read,) = run.turn("Reading.", ("Read", {"file_path": "notes.md"}))
    activity = run.f.ids.new(ActivityId)
    run.events.append(
        run.f.event(ToolCallRequestedV2(activity_id=activity, tool_call_id=read, tool_name="Read", arguments={}))
    )
    check, steps = read_log(run.run_id, run.events)
    assert check.valid
    assert steps.status == "running"
    notes = [p.message for p in check.problems]
    assert any(m.startswith("no terminal event: the run is running") for m in notes)
    assert any("has no result: the run is running" in m for m in notes)


def test_a_log_from_another_run_is_refused() -> None:
    run = read_the_notes()
    check, _ = read_log(str(RunId.new()), run.events)
    assert not check.valid
    assert "belongs to run" in check.errors[0].message


# ---- alignment -------------------------------------------------------------------------------------------------


def test_two_runs_align_step_by_step_and_name_what_changed() -> None:
    _, a = read_log(*_log(read_the_notes("hello notes\nline two\n")))
    _, b = read_log(*_log(read_the_notes("bye notes\nline two\n", ids=Uuid4IdGenerator())))
    rows = align(a, b, DIFF)
    assert [(r.step, r.kind, r.status) for r in rows] == [
        ("1", "model", "same"),  # ids differ, and a diff does not compare them
        ("1.1", "tool", "changed"),
        ("2", "model", "same"),
        ("end", "end", "same"),
    ]
    (change,) = rows[1].changes
    assert change.field == "content"
    assert change.diff == ("-hello notes", "+bye notes")
    replay_rows = align(a, b, REPLAY)  # a replay reuses the ids: here they differ
    assert replay_rows[0].status == "changed" and replay_rows[0].changes[0].field == "tool_calls"


def test_a_step_only_one_run_has_is_added_or_removed() -> None:
    _, a = read_log(*_log(read_the_notes()))
    short = V2Run()
    short.turn("All read.")
    _, b = read_log(short.run_id, short.succeed("All read."))
    rows = align(a, b, DIFF)
    assert [(r.step, r.status) for r in rows] == [
        ("1", "changed"),
        ("1.1", "removed"),
        ("2", "removed"),
        ("end", "same"),
    ]
    assert [(r.step, r.status) for r in align(b, a, DIFF)][1:3] == [("1.1", "added"), ("2", "added")]


def test_fields_a_v1_log_did_not_record_are_not_compared() -> None:
    events = [s.event for s in seed_001_steps()]
    _, v1 = read_log(str(SEED_RUN_ID), events)
    rows = align(v1, v1, REPLAY)
    assert all(r.status == "same" for r in rows)


def test_text_diff_is_short() -> None:
    a = "\n".join(f"line {i}" for i in range(40))
    b = "\n".join(f"line {i}!" for i in range(40))
    lines = text_diff(a, b)
    assert len(lines) == 13 and lines[-1] == "… 68 more lines"
    assert text_diff("one", "two") == ()


def _log(run: V2Run) -> tuple[str, list[Event]]:
    return run.run_id, run.events


# ---- interrupted and resumed runs ------------------------------------------------------------------------------

OWNER = RunOwner(host="host-a", boot_id="b1", pid=4242, process_start=99)
OTHER = RunOwner(host="host-b", boot_id="b2", pid=7, process_start=5)


def _interrupt(f: EventFactory, kind: Literal["model_call", "tool_call"]) -> list[Event]:
    assert f.activity_id is not None
    in_flight = InFlight(
        activity_id=f.activity_id,
        kind=kind,
        model_call_id=f.model_call_id if kind == "model_call" else None,
        tool_call_id=f.tool_call_id if kind == "tool_call" else None,
    )
    return [
        f.event(RunInterruptedV1(reason="pid 4242 is gone", last_seen_at=f.clock.now(), in_flight=in_flight)),
        f.event(RunResumedV1(owner=OTHER)),
    ]


def test_a_side_effecting_call_abandoned_by_a_resume_reads_as_a_failed_step() -> None:
    f = EventFactory()
    events = [f.run_created(), f.event(RunStartedV2(owner=OWNER)), *f.model_call(10, 2)]
    events += [f.tool_requested("Bash"), f.tool_started(), *_interrupt(f, "tool_call")]
    assert f.tool_call_id is not None
    abandoned = ToolCallAbandonedV1(
        tool_call_id=f.tool_call_id, tool_name="Bash", side_effect="execute", message="outcome unknown"
    )
    events += [f.event(abandoned), *f.model_call(5, 1), f.run_succeeded()]
    check, steps = read_log(str(f.run_id), events)
    assert check.valid, check.problems
    assert steps.interruptions == 1 and len(steps.turns) == 2
    (bash,) = steps.turns[0].tools
    assert (bash.outcome, bash.is_error, bash.content) == ("abandoned", True, "outcome unknown")
    assert reuse_reason(bash, "execute") == "execute tool: not executed, recorded result reused"
    assert reuse_reason(bash, "read_only") is not None  # it did not finish: never judged by running it again


def test_a_model_call_cut_by_an_interruption_is_an_attempt_of_the_next_turn() -> None:
    f = EventFactory()
    events = [f.run_created(), f.event(RunStartedV2(owner=OWNER)), f.model_requested(), f.model_started()]
    events += [*_interrupt(f, "model_call"), *f.model_call(5, 1), f.run_succeeded()]
    check, steps = read_log(str(f.run_id), events)
    assert check.valid, check.problems
    (turn,) = steps.turns
    assert [a.kind for a in turn.failed_attempts] == ["interrupted"]

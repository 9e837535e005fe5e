"""Is a stored log a valid run? What `bearagent replay --dry` answers, and what a replay checks before it starts.
Pure: one run's events in, problems out.

- the sequence is gapless from 1, and every event belongs to the run;
- the log folds through the reducer from nothing, every payload validated against its `(type, version)` (the same
  `Replayer` that rebuilds projections: a v1 log folds as it did when it was written);
- every tool call has a result, or the run's status explains why not (it is still running, waiting for an
  approval, or was interrupted); every tool call a model turn asked for was requested, or the run ended first;
- every child run that started finished, or the run has not ended;
- a terminal event is present, or the status explains its absence.

A problem is an `error` (the log is not a valid run: it was changed outside BearAgent, or a bug wrote it) or a
`note` (something a reader should know that the status explains).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.state import TERMINAL_RUN_STATUSES
from bearagent.runtime.replay import Replayer, ReplayError
from bearagent.runtime.run_steps import RunSteps, steps_of

_WHY_NOT_ENDED: dict[str, str] = {
    "queued": "it never started",
    "running": "a process is still running it, or its process died and no store has noticed yet",
    "waiting": "it waits for an approval (`bearagent approvals list`)",
    "interrupted": "its process died; `bearagent runs resume RUN` continues it",
}


@dataclass(frozen=True, slots=True)
class LogProblem:
    severity: Literal["error", "note"]
    message: str
    sequence: int | None = None


@dataclass(frozen=True, slots=True)
class LogCheck:
    run_id: str
    status: str
    """The status the fold ends in (`invalid` when the log does not fold)."""
    events: int
    problems: tuple[LogProblem, ...]

    @property
    def valid(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def errors(self) -> tuple[LogProblem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")


def fold_status(run_id: str, events: Sequence[Event]) -> tuple[str, list[LogProblem]]:
    """The run's status after folding its events through the reducer, or `invalid` and the first problem."""
    problems: list[LogProblem] = []
    if not events:
        return "invalid", [LogProblem("error", "the run has no events")]
    expected = 1
    for event in events:
        if str(event.run_id) != run_id:
            problems.append(
                LogProblem(
                    "error", f"event {event.sequence} belongs to run {event.run_id}, not {run_id}", event.sequence
                )
            )
        if event.sequence != expected:
            if event.sequence > expected:
                missing = f"{expected}" if event.sequence == expected + 1 else f"{expected} to {event.sequence - 1}"
                message = (
                    f"event {missing} is missing: the log goes from {expected - 1} to {event.sequence} (a run's "
                    "sequence has no gaps)"
                )
            else:
                message = f"event {event.sequence} appears again after event {expected - 1}"
            problems.append(LogProblem("error", message, expected))
            expected = event.sequence
        expected += 1
    if problems:
        return "invalid", problems
    replayer = Replayer(validate=True)
    try:
        for event in events:
            replayer.feed(
                run_id, event.sequence, event.event_type, event.schema_version, event.occurred_at, event.payload
            )
    except ReplayError as exc:
        cause = exc.__cause__
        why = cause.info.message if isinstance(cause, BearAgentError) else f"{type(cause).__name__}: {cause}"
        event = events[exc.sequence - 1] if 0 < exc.sequence <= len(events) else None
        what = f"event {exc.sequence}" + (f" ({event.event_type} v{event.schema_version})" if event else "")
        return "invalid", [LogProblem("error", f"{what} does not fold into a valid run: {why}", exc.sequence)]
    return replayer.runs[run_id].status, []


def read_log(run_id: str, events: Sequence[Event]) -> tuple[LogCheck, RunSteps]:
    """Check one run's log (see the module docstring) and read its steps (with the status the fold ends in)."""
    status, problems = fold_status(run_id, events)
    steps = steps_of(run_id, events, status=status)
    if status == "invalid":
        return LogCheck(run_id, status, len(events), tuple(problems)), steps
    return _check(run_id, events, steps, status, problems), steps


def _check(run_id: str, events: Sequence[Event], steps: RunSteps, status: str, problems: list[LogProblem]) -> LogCheck:
    ended = status in TERMINAL_RUN_STATUSES
    why = _WHY_NOT_ENDED.get(status, f"its status is {status}")
    if not ended:
        problems.append(LogProblem("note", f"no terminal event: the run is {status} ({why})"))
    for turn in steps.turns:
        requested = {tool.tool_call_id for tool in turn.tools}
        for call in turn.tool_calls or ():
            if str(call.tool_call_id) in requested:
                continue
            where = (
                f"model turn {turn.index} (event {turn.requested_sequence}) asked for {call.name} ({call.tool_call_id})"
            )
            if status == "succeeded":
                problems.append(LogProblem("error", f"{where}, but the log has no request for it"))
            else:
                problems.append(LogProblem("note", f"{where}; it never ran: the run {status} first"))
        for tool in turn.tools:
            if tool.outcome != "unfinished":
                continue
            where = f"tool call {tool.tool_call_id} ({tool.name}, event {tool.requested_sequence}) has no result"
            if ended:
                problems.append(LogProblem("error", f"{where}, yet the run {status}", tool.requested_sequence))
            else:
                problems.append(LogProblem("note", f"{where}: the run is {status}", tool.requested_sequence))
    started = [e for e in events if e.event_type == "ChildRunStarted"]
    finished = {str(e.payload.get("child_run_id")) for e in events if e.event_type == "ChildRunFinished"}
    for event in started:
        child = str(event.payload.get("child_run_id"))
        if child in finished:
            continue
        where = f"child run {child} (started at event {event.sequence}) has no ChildRunFinished"
        if ended:
            problems.append(LogProblem("error", f"{where}, yet the run {status}", event.sequence))
        else:
            problems.append(LogProblem("note", f"{where}: the run is {status}", event.sequence))
    return LogCheck(run_id, status, len(events), tuple(problems))

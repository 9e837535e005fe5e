"""The reducer: which fact may come next, and what it changes. Pure, no I/O.

Two state machines and five budgets, seed 001:

- Run: ``queued -> running -> succeeded | failed | cancelled``. ``RunCancelled`` is also accepted while queued,
  waiting or interrupted. A terminal run rejects every further event. Two pauses: ``running -> waiting``
  (``ApprovalRequested``; ``ApprovalResolved`` answers it once; ``RunResumed`` runs again) and ``running ->
  interrupted`` (``RunInterrupted``: the owner died; ``RunResumed`` continues). ``RunSucceeded``/``RunFailed`` need no active activity; ``RunCancelled``
  interrupts in-flight work, so it closes the active activity as ``failed`` (error ``cancelled.interrupted``).
- Activity (one model call or one tool call): ``pending -> running -> succeeded | failed``, at most one
  pending/running activity per run, only while the run is ``running``.
- Budgets are checked before a ``ModelCallRequested``/``ToolCallRequested`` becomes a fact: a request the budget does
  not allow raises `BudgetExceeded` and changes nothing. Iterations and tool calls count at Requested; tokens and
  cost count at Completed/Failed by actual usage; ``wall_time_ms`` is ``occurred_at - wall_origin`` of the latest
  state-machine event while the run runs (``wall_origin`` is ``started_at`` moved later by every pause).

The public entry is `reduce` (immutable projections in and out). `apply` is the same logic over the mutable
`RunState`/`ActivityState` the store and replay keep, so an append costs the same on event 10 and event 10,000: it
needs the run and its active activity, never the whole log. `apply` reads the raw JSON payload; callers that take
events from outside validate them first (`reduce` and the store do, with `parse_run_event_payload`).

Why one long module: it is one transition function. Every handler is a few lines, and keeping all of them beside
the table that dispatches on them (`_HANDLERS`, checked against every registered event type at import) is what
lets a reader check a state machine against seed 001 in one file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from bearagent.domain.budgets import BUDGETS, BudgetLimits
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.run_events import RUN_EVENT_PAYLOADS, parse_run_event_payload, payload_type_for
from bearagent.domain.state import (
    TERMINAL_RUN_STATUSES,
    ActivityKind,
    ActivityProjection,
    ActivityStatus,
    RunProjection,
)
from bearagent.runtime.run_state import ActivityState, RunState, canonical_id, error_of, iso

__all__ = [
    "ActivityState",
    "BudgetExceeded",
    "InvalidTransition",
    "Reduction",
    "RunState",
    "SequenceConflict",
    "apply",
    "apply_event",
    "check_budget",
    "reduce",
]

# ---- errors ---------------------------------------------------------------------------------------------------


class BudgetExceeded(BearAgentError):
    """A Requested event the budget does not allow; nothing was recorded. Turn it into a budget stop."""

    def __init__(self, field: str, *, limit: int, used: int, event_type: str, run_id: str) -> None:
        what = BUDGETS[field][0]
        flag = "--" + field.replace("_", "-")
        message = (
            f"budget {field} exhausted for run {run_id}: {used} {what} used of {limit}; {event_type} was not recorded. "
            f"Raise it with {flag} or budgets.{field} in config.yaml"
        )
        info = ErrorInfo.of("budget", field, message, limit=limit, used=used, event_type=event_type, run_id=run_id)
        super().__init__(info, hint=f"raise {flag} or budgets.{field} in config.yaml")
        self.field = field
        self.limit = limit
        self.used = used


class InvalidTransition(BearAgentError):
    """An event the state machines do not allow in the current state; nothing was recorded."""

    def __init__(self, event_type: str, state: str, why: str, *, run_id: str | None = None) -> None:
        run = f"run {run_id}" if run_id else "run"
        message = f"{event_type} is not allowed: {run} {state}; {why}"
        info = ErrorInfo.of(
            "conflict", "invalid_transition", message, event_type=event_type, state=state[:1000], run_id=run_id
        )
        super().__init__(info, hint="append only the events the run's state allows")
        self.event_type = event_type


class SequenceConflict(BearAgentError):
    """The event's sequence is not the run's last sequence + 1: another writer got there first (or a gap)."""

    def __init__(self, run_id: str, *, expected: int, got: int) -> None:
        if got < expected:
            why = "another writer appended first. Re-read the run (get_run) and retry with the next sequence"
        else:
            why = f"a run's sequences have no gaps: append sequence {expected} first"
        message = f"sequence conflict on run {run_id}: event has sequence {got} but the next free sequence is {expected}; {why}"
        super().__init__(
            ErrorInfo.of("conflict", "sequence", message, run_id=run_id, expected=expected, got=got),
            hint="re-read the run and retry with the next sequence",
        )
        self.expected = expected
        self.got = got


# ---- the transition function ----------------------------------------------------------------------------------

Payload = Mapping[str, Any]  # raw JSON of a payload the caller validated; read field by field


class Fact:
    """One event as the transition function sees it (raw JSON payload, already validated by the caller)."""

    __slots__ = ("at", "event_type", "payload", "sequence", "version")

    def __init__(self, event_type: str, version: int, sequence: int, at: datetime, payload: Payload) -> None:
        self.event_type = event_type
        self.version = version
        self.sequence = sequence
        self.at = at
        self.payload = payload


Active = ActivityState | None
_MS = timedelta(milliseconds=1)


_KIND: Mapping[str, ActivityKind] = {
    "ModelCallRequested": "model_call",
    "ModelCallStarted": "model_call",
    "ModelCallCompleted": "model_call",
    "ModelCallFailed": "model_call",
    "ToolCallRequested": "tool_call",
    "ToolCallStarted": "tool_call",
    "ToolCallCompleted": "tool_call",
    "ToolCallFailed": "tool_call",
    "ContextCompacted": "model_call",  # closes a compaction's model call, with its usage
}


def _describe(run: RunState) -> str:
    if run.active_activity_id is None:
        return f"is {run.status} (sequence {run.last_sequence}, no active activity)"
    return f"is {run.status} (sequence {run.last_sequence}, active activity {run.active_activity_id})"


def _refuse(run: RunState, fact: Fact, why: str) -> InvalidTransition:
    return InvalidTransition(fact.event_type, _describe(run), why, run_id=run.run_id)


def _wall_origin(run: RunState) -> datetime | None:
    """Where the running stretch's wall time counts from (None while the run does not run)."""
    if run.status != "running":
        return None
    return run.wall_origin if run.wall_origin is not None else run.started_at


def _touch_wall_time(run: RunState, occurred_at: datetime) -> None:
    if run.status == "running":  # `_wall_origin`, inlined: this runs for almost every event
        origin = run.wall_origin if run.wall_origin is not None else run.started_at
        if origin is not None:
            elapsed = (occurred_at - origin) // _MS
            if elapsed > run.wall_time_ms:
                run.wall_time_ms = elapsed


def _pause_wall_time(run: RunState, until: datetime) -> None:
    """End the running stretch at `until`: wall time stops counting until the run runs again."""
    _touch_wall_time(run, until)
    run.wall_origin = None


def check_budget(run: RunState | RunProjection, event_type: str, occurred_at: datetime) -> None:
    """Raise `BudgetExceeded` if a `ModelCallRequested`/`ToolCallRequested` at `occurred_at` is over budget.

    The runtime may call it before doing work; the reducer calls it for every Requested event.
    """
    if type(run) is not RunState:  # a RunProjection (the metaclass's isinstance costs more than the check)
        run = RunState.from_projection(cast(RunProjection, run))
    limits = run.budget_limits
    used: int | None = None
    field, limit = "", 0
    if event_type == "ModelCallRequested" and run.model_iterations >= limits.max_model_iterations:
        field, limit, used = "max_model_iterations", limits.max_model_iterations, run.model_iterations
    elif event_type == "ToolCallRequested" and run.tool_calls >= limits.max_tool_calls:
        field, limit, used = "max_tool_calls", limits.max_tool_calls, run.tool_calls
    elif run.input_tokens + run.output_tokens >= limits.max_tokens:
        field, limit, used = "max_tokens", limits.max_tokens, run.input_tokens + run.output_tokens
    elif run.cost_microusd >= limits.max_cost_microusd:
        field, limit, used = "max_cost_microusd", limits.max_cost_microusd, run.cost_microusd
    elif (origin := _wall_origin(run)) is not None:
        elapsed = (occurred_at - origin) // _MS
        if elapsed > limits.max_wall_time_ms:
            field, limit, used = "max_wall_time_ms", limits.max_wall_time_ms, elapsed
    if used is not None:
        raise BudgetExceeded(field, limit=limit, used=used, event_type=event_type, run_id=run.run_id)


def _usage(payload: Payload) -> tuple[int, int]:
    usage = payload.get("usage")
    if not usage:
        return 0, 0
    return usage.get("input_tokens", 0), usage.get("output_tokens", 0)


def _require_running(run: RunState, fact: Fact) -> None:
    if run.status != "running":
        raise _refuse(run, fact, "activities are only accepted while the run is running")


def _active_for(run: RunState, active: Active, fact: Fact, kind: ActivityKind) -> ActivityState:
    payload = fact.payload
    activity_id = payload["activity_id"]
    if active is None or activity_id != active.activity_id:  # the active id is canonical: equal text is too
        activity_id = canonical_id(activity_id)
    if active is None:
        raise _refuse(run, fact, f"activity {activity_id} is not the active activity; record its Requested event first")
    if active.activity_id != activity_id:
        raise _refuse(run, fact, f"activity {activity_id} is not the active activity {active.activity_id}")
    if active.kind != kind:
        raise _refuse(run, fact, f"activity {activity_id} is a {active.kind}, not a {kind}")
    if kind == "model_call":
        call_key, expected = "model_call_id", active.model_call_id
    else:
        call_key, expected = "tool_call_id", active.tool_call_id
    call_id = payload[call_key]
    if call_id != expected:
        call_id = canonical_id(call_id)
        if call_id != expected:
            raise _refuse(run, fact, f"{call_key} {call_id} does not match {expected} recorded at the Requested event")
    return active


def _request(run: RunState, active: Active, fact: Fact) -> ActivityState:
    kind = _KIND[fact.event_type]
    if run.status != "running":  # `_require_running`, inlined here and below: one of them runs for most events
        raise _refuse(run, fact, "activities are only accepted while the run is running")
    if run.active_activity_id is not None:
        raise _refuse(run, fact, "at most one pending/running activity per run: finish the active one first")
    check_budget(run, fact.event_type, fact.at)
    payload = fact.payload
    activity_id = canonical_id(payload["activity_id"])
    if kind == "model_call":
        model_call_id, tool_call_id, name = canonical_id(payload["model_call_id"]), None, payload.get("model_ref")
        run.model_iterations += 1
    else:
        model_call_id, tool_call_id, name = None, canonical_id(payload["tool_call_id"]), payload["tool_name"]
        run.tool_calls += 1
    activity = ActivityState(
        run.run_id,
        activity_id,
        kind,
        requested_sequence=fact.sequence,
        requested_at=fact.at,
        model_call_id=model_call_id,
        tool_call_id=tool_call_id,
        name=name,
    )
    run.active_activity_id = activity_id
    _touch_wall_time(run, fact.at)
    return activity


def _start(run: RunState, active: Active, fact: Fact) -> ActivityState:
    kind = _KIND[fact.event_type]
    if run.status != "running":
        raise _refuse(run, fact, "activities are only accepted while the run is running")
    activity = _active_for(run, active, fact, kind)
    if activity.status != "pending":
        raise _refuse(run, fact, f"activity {activity.activity_id} is already {activity.status}; Started comes once")
    activity.status = "running"
    activity.started_at = fact.at
    activity.last_sequence = fact.sequence
    _touch_wall_time(run, fact.at)
    return activity


def _finish(run: RunState, active: Active, fact: Fact) -> ActivityState:
    kind = _KIND[fact.event_type]
    outcome: ActivityStatus = "failed" if fact.event_type.endswith("Failed") else "succeeded"
    if run.status != "running":
        raise _refuse(run, fact, "activities are only accepted while the run is running")
    activity = _active_for(run, active, fact, kind)
    if activity.status != "running":
        raise _refuse(
            run, fact, f"activity {activity.activity_id} is {activity.status}; record its Started event first"
        )
    payload = fact.payload
    error: ErrorInfo | None = None
    if kind == "model_call":
        if outcome == "failed":
            error = error_of(payload.get("error"))
        input_tokens, output_tokens = _usage(payload)
        run.input_tokens += input_tokens
        run.output_tokens += output_tokens
        run.cost_microusd += payload.get("cost_microusd", 0)
    else:
        result = payload.get("result")
        if result is not None:
            status = result.get("status")
            if status != outcome:
                raise _refuse(
                    run, fact, f"its ToolResult has status {status!r}; a {outcome} call needs a {outcome} result"
                )
            result_call_id = result["tool_call_id"]
            if result_call_id != activity.tool_call_id and canonical_id(result_call_id) != activity.tool_call_id:
                raise _refuse(
                    run,
                    fact,
                    f"its ToolResult belongs to tool call {result['tool_call_id']}, not {activity.tool_call_id}",
                )
            if outcome == "failed":
                error = error_of(result.get("error"))
    activity.status = outcome
    activity.ended_at = fact.at
    activity.last_sequence = fact.sequence
    if error is not None:
        activity.error = error
    run.active_activity_id = None
    _touch_wall_time(run, fact.at)
    return activity


def _create(run_id: str, fact: Fact) -> RunState:
    if fact.sequence != 1:
        raise SequenceConflict(run_id, expected=1, got=fact.sequence)
    payload = fact.payload
    run = RunState(run_id, budget_limits=BudgetLimits.model_validate(payload["budget_limits"]), created_at=fact.at)
    session_id = payload.get("session_id")
    run.session_id = None if session_id is None else canonical_id(session_id)
    if fact.version >= 2:
        parent = payload.get("parent_run_id")
        run.parent_run_id = None if parent is None else canonical_id(parent)
        run.agent_name = run.effective_agent_name = payload["agent_name"]
        run.goal = payload["goal"]
        run.trigger_type = payload.get("trigger_type", "message")
    if fact.version >= 3:
        run.request = dict(payload["request"])
    return run


def _end_run(run: RunState, fact: Fact) -> None:
    if run.status != "running":
        raise _refuse(run, fact, "only a running run can finish this way")
    if run.active_activity_id is not None:
        raise _refuse(run, fact, "a run can only finish with no active activity: complete or fail the activity first")
    _touch_wall_time(run, fact.at)
    run.ended_at = fact.at


def _on_created(run: RunState, active: Active, fact: Fact) -> Active:
    raise _refuse(run, fact, "the run already exists; RunCreated comes once")


def _on_started(run: RunState, active: Active, fact: Fact) -> Active:
    if run.status != "queued":
        raise _refuse(run, fact, "only a queued run can start")
    run.status = "running"
    run.started_at = fact.at
    run.wall_origin = fact.at
    if fact.version >= 2:
        run.owner = dict(fact.payload["owner"])
    return None


def _on_succeeded(run: RunState, active: Active, fact: Fact) -> Active:
    _end_run(run, fact)
    run.status = "succeeded"
    if fact.version >= 2:
        run.final_text = fact.payload.get("final_text", "")
        run.stop_reason = fact.payload.get("stop_reason", "end_turn")
    return None


def _on_failed(run: RunState, active: Active, fact: Fact) -> Active:
    error = error_of(fact.payload["error"]) if fact.version >= 2 else None
    _end_run(run, fact)
    run.status = "failed"
    run.error = error
    return None


def _close_in_flight(run: RunState, active: Active, fact: Fact, error: ErrorInfo) -> Active:
    """End the run's active activity (if any) as failed with `error`: the run stopped underneath it."""
    if run.active_activity_id is not None and active is None:
        raise ValueError(f"run {run.run_id} has active activity {run.active_activity_id}; pass it to apply")
    if active is None:
        return None
    active.status = "failed"
    active.ended_at = fact.at
    active.last_sequence = fact.sequence
    active.error = error
    run.active_activity_id = None
    return active


def _on_cancelled(run: RunState, active: Active, fact: Fact) -> Active:
    reason = fact.payload.get("reason", "cancelled") or "cancelled"
    _pause_wall_time(run, fact.at)
    run.status = "cancelled"
    run.ended_at = fact.at
    run.owner = None
    run.pending_approval = None
    run.error = ErrorInfo.of("cancelled", "requested", f"run cancelled: {reason}")
    error = ErrorInfo.of("cancelled", "interrupted", f"interrupted: the run was cancelled ({reason})")
    return _close_in_flight(run, active, fact, error)


def _on_interrupted(run: RunState, active: Active, fact: Fact) -> Active:
    """The owner died mid-run: wall time counted until its last sign of life; the in-flight activity failed."""
    if run.status != "running":
        raise _refuse(run, fact, "only a running run can be interrupted (a waiting run waits for its answer)")
    last_seen = datetime.fromisoformat(fact.payload["last_seen_at"])
    _pause_wall_time(run, min(last_seen, fact.at))
    run.status = "interrupted"
    run.owner = None
    error = ErrorInfo.of("cancelled", "owner_gone", f"interrupted: {fact.payload['reason']}")
    return _close_in_flight(run, active, fact, error)


def _on_resumed(run: RunState, active: Active, fact: Fact) -> Active:
    if run.status == "waiting":
        pending = run.pending_approval
        if pending is None or pending.get("decision") is None:
            raise _refuse(run, fact, "a waiting run continues only after its approval is answered")
    elif run.status != "interrupted":
        raise _refuse(run, fact, "only an interrupted run, or a waiting run whose approval was answered, resumes")
    run.status = "running"
    run.pending_approval = None
    run.owner = dict(fact.payload["owner"])
    run.wall_origin = fact.at - timedelta(milliseconds=run.wall_time_ms)
    return None


def _on_abandoned(run: RunState, active: Active, fact: Fact) -> Active:
    _require_running(run, fact)
    if run.active_activity_id is not None:
        raise _refuse(run, fact, "a tool call is abandoned only between activities, when its run is resumed")
    return None


def _on_approval_requested(run: RunState, active: Active, fact: Fact) -> Active:
    _require_running(run, fact)
    payload = fact.payload
    activity = _active_for(run, active, fact, "tool_call")
    if activity.status != "running":
        raise _refuse(run, fact, f"tool call activity {activity.activity_id} is {activity.status}, not running")
    _pause_wall_time(run, fact.at)
    run.status = "waiting"
    if not payload.get("attached", False):
        run.owner = None
    run.pending_approval = {
        "approval_id": payload["approval_id"],
        "tool_call_id": canonical_id(payload["tool_call_id"]),
        "tool_name": payload["tool_name"],
        "requested_at": iso(fact.at),
        "decision": None,
        "answered_by": None,
    }
    return None


def _on_approval_resolved(run: RunState, active: Active, fact: Fact) -> Active:
    payload = fact.payload
    pending = run.pending_approval
    if run.status != "waiting" or pending is None:
        raise _refuse(run, fact, "the run waits for no approval (it was answered already, or never asked)")
    if pending["approval_id"] != payload["approval_id"]:
        raise _refuse(run, fact, f"the pending approval is {pending['approval_id']}, not {payload['approval_id']}")
    if pending.get("decision") is not None:
        raise _refuse(run, fact, f"approval {pending['approval_id']} was already answered ({pending['decision']})")
    run.pending_approval = {**pending, "decision": payload["decision"], "answered_by": payload["answered_by"]}
    return None


def _on_agent_switched(run: RunState, active: Active, fact: Fact) -> Active:
    payload = fact.payload
    count = payload["switch_count"]
    if count != run.switch_count + 1:
        raise _refuse(
            run,
            fact,
            f"switch_count must be {run.switch_count + 1} (the run switched {run.switch_count} times), got {count}",
        )
    from_agent = payload["from_agent"]
    if run.effective_agent_name is not None and from_agent != run.effective_agent_name:
        raise _refuse(run, fact, f"from_agent {from_agent!r} is not the current agent {run.effective_agent_name!r}")
    run.effective_agent_name = payload["to_agent"]
    run.switch_count = count
    return None


def _on_child_finished(run: RunState, active: Active, fact: Fact) -> Active:
    """ChildRunFinished v2 charges the child's usage to this run (v1 recorded none)."""
    usage: Mapping[str, int] = fact.payload.get("usage") or {}
    run.model_iterations += usage.get("model_iterations", 0)
    run.tool_calls += usage.get("tool_calls", 0)
    run.input_tokens += usage.get("input_tokens", 0)
    run.output_tokens += usage.get("output_tokens", 0)
    run.cost_microusd += usage.get("cost_microusd", 0)
    return None


def _on_record(run: RunState, active: Active, fact: Fact) -> Active:
    """HookExecuted, TodosUpdated, ChildRunStarted, MessageInjected, Elicitation*: facts for the log, no state besides
    last_sequence."""
    return None


def _on_elicitation_resolved(run: RunState, active: Active, fact: Fact) -> Active:
    """An MCP server's question answered: the time its call waited for a person is not the run's wall time (as a
    tool approval's wait is not), so the running stretch's origin moves later by `waited_ms`."""
    waited = fact.payload.get("waited_ms")
    if isinstance(waited, int) and waited > 0 and run.status == "running":
        origin = run.wall_origin if run.wall_origin is not None else run.started_at
        if origin is not None:
            run.wall_origin = min(origin + timedelta(milliseconds=waited), fact.at)
            run.wall_time_ms = (fact.at - run.wall_origin) // _MS
    return None


_Handler = Callable[[RunState, Active, Fact], Active]

AFTER_FINISH = frozenset({"FilesRewound", "FilesChanged", "ConversationRewound"})
"""Facts a finished run still accepts: a rewind of its file changes (`rewind/`), recorded in the run it undid; the
file changes of one of its calls whose process died, recorded late by the next process (`rewind/capture.py`); and
a rewind of its session's conversation, recorded in the session's latest run."""

_HANDLERS: Mapping[str, _Handler] = {
    "RunCreated": _on_created,
    "RunStarted": _on_started,
    "RunSucceeded": _on_succeeded,
    "RunFailed": _on_failed,
    "RunCancelled": _on_cancelled,
    "RunInterrupted": _on_interrupted,
    "RunResumed": _on_resumed,
    "ToolCallAbandoned": _on_abandoned,
    "ApprovalRequested": _on_approval_requested,
    "ApprovalResolved": _on_approval_resolved,
    "ElicitationRequested": _on_record,
    "ElicitationResolved": _on_elicitation_resolved,
    "ModelCallRequested": _request,
    "ModelCallStarted": _start,
    "ModelCallCompleted": _finish,
    "ModelCallFailed": _finish,
    "ToolCallRequested": _request,
    "ToolCallStarted": _start,
    "ToolCallCompleted": _finish,
    "ToolCallFailed": _finish,
    "AgentSwitched": _on_agent_switched,
    "HookExecuted": _on_record,
    "TodosUpdated": _on_record,
    "ChildRunStarted": _on_record,
    "ChildRunFinished": _on_child_finished,
    "MessageInjected": _on_record,
    "ContextCompacted": _finish,
    "FilesChanged": _on_record,
    "FilesRewound": _on_record,
    "ConversationRewound": _on_record,
}

_missing = {t for (t, _v) in RUN_EVENT_PAYLOADS} - set(_HANDLERS)
if _missing:  # pragma: no cover - guards future additions to RUN_EVENT_PAYLOADS
    raise RuntimeError(f"reducer has no handler for {sorted(_missing)}")

TERMINAL = TERMINAL_RUN_STATUSES


def apply(
    run: RunState | None,
    active: Active,
    event_type: str,
    schema_version: int,
    sequence: int,
    occurred_at: datetime,
    payload: Payload,
    *,
    run_id: str,
) -> tuple[RunState, Active]:
    """Apply one (already validated) event to mutable state; return the run and the activity it changed.

    `run` and `active` are changed IN PLACE (`run` is None before `RunCreated`; `active` must be the run's active
    activity when it has one). After an exception they must not be used any more: callers drop them or keep copies.
    `sequence` must be `run.last_sequence + 1` (`SequenceConflict` otherwise).
    """
    if (event_type, schema_version) not in RUN_EVENT_PAYLOADS:
        payload_type_for(event_type, schema_version)  # raises validation.unknown_event
    fact = Fact(event_type, schema_version, sequence, occurred_at, payload)
    if run is None:
        if event_type != "RunCreated":
            raise InvalidTransition(
                event_type, "does not exist", "the first event of a run must be RunCreated", run_id=run_id
            )
        return _create(run_id, fact), None
    if sequence != run.last_sequence + 1:
        raise SequenceConflict(run.run_id, expected=run.last_sequence + 1, got=sequence)
    if run.status in TERMINAL and event_type not in AFTER_FINISH:
        raise _refuse(run, fact, "a finished run accepts no further events; start a new run")
    if active is not None and active.activity_id != run.active_activity_id:
        raise ValueError(f"activity {active.activity_id} is not run {run.run_id}'s active activity")
    changed = _HANDLERS[event_type](run, active, fact)
    run.last_sequence = sequence
    return run, changed


# ---- public, immutable API ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reduction:
    """The outcome of one accepted event: the new run projection and the activity it created or changed."""

    run: RunProjection
    activity: ActivityProjection | None


def apply_event(
    run: RunState | None, active: ActivityState | None, event: Event
) -> tuple[RunState, ActivityState | None]:
    """`apply` for a validated `Event` (validates the payload against its exact `(event_type, schema_version)`)."""
    parse_run_event_payload(event.event_type, event.schema_version, event.payload)
    run_id = str(event.run_id)
    if run is not None and run.run_id != run_id:
        raise ValueError(f"event {event.event_id} belongs to run {run_id}, not {run.run_id}")
    return apply(
        run,
        active,
        event.event_type,
        event.schema_version,
        event.sequence,
        event.occurred_at,
        event.payload,
        run_id=run_id,
    )


def reduce(run: RunProjection | None, active: ActivityProjection | None, event: Event) -> Reduction:
    """The pure reducer: the run (None before `RunCreated`) and its active activity (if any) plus one event.

    Raises `InvalidTransition`, `BudgetExceeded`, `SequenceConflict` or `BearAgentError(validation.*)` for a payload
    that does not match its `(event_type, schema_version)`; the inputs are never changed.
    """
    if (
        run is not None
        and run.active_activity_id is not None
        and (active is None or active.activity_id != run.active_activity_id)
    ):
        raise ValueError(f"pass the run's active activity {run.active_activity_id} to reduce()")
    state = None if run is None else RunState.from_projection(run)
    act = (
        None
        if active is None or run is None or run.active_activity_id is None
        else ActivityState.from_projection(active)
    )
    new_run, changed = apply_event(state, act, event)
    return Reduction(new_run.to_projection(), None if changed is None else changed.to_projection())

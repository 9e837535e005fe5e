"""RunStep (seed 002): one run's log as a flat list of steps, for diagnosis and display (`GET /v1/runs/{id}/steps`,
the steps table of `bearagent inspect`).

Pure: events in, records out. The steps come from `run_steps.steps_of`, the one reader of a log as steps (replay
and diff use it too); this module only flattens them and adds the times the events carry:

- `model_call`: a model turn (failed attempts that were tried again belong to it, under `input.failed_attempts`),
  or the call in flight when the log ends;
- `tool_call`: a tool call the turn asked for, with what the gate, the hooks and an approval said of it;
- `agent_delegate`: a child run a tool call started (a `Task` subagent or an action tool);
- `agent_switch`: an `AgentSwitched` after a `SwitchAgent` call.

`seq` is the step's number in the run (1-based, in log order); `started_seq` / `ended_seq` are the log sequences it
starts and ends at (the stream protocol's `seq`), so a step can be matched with its events.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.events import Event
from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep, steps_of

StepType: TypeAlias = Literal["model_call", "tool_call", "agent_switch", "agent_delegate"]
ACTIVE_RUN_STATES = frozenset({"queued", "running", "waiting"})


@dataclass(frozen=True, slots=True)
class RunStepRecord:
    id: str
    """Derived from the run id and `started_seq` (a UUID, the same every time the log is read)."""
    run_id: str
    seq: int
    step_type: StepType
    name: str
    agent_name: str | None
    status: str
    """`running`, `succeeded`, `failed`; for tool calls also `waiting` (for an approval), `abandoned` (a resumed
    run never redid it) and `unfinished` (the run ended without its result); a delegation takes its child's status
    (`cancelled` too)."""
    input: Mapping[str, JsonValue]
    output: Mapping[str, JsonValue] | None
    started_at: datetime | None
    ended_at: datetime | None
    started_seq: int
    ended_seq: int | None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "seq": self.seq,
            "step_type": self.step_type,
            "name": self.name,
            "agent_name": self.agent_name,
            "status": self.status,
            "input": dict(self.input),
            "output": dict(self.output) if self.output is not None else None,
            "started_at": self.started_at.isoformat() if self.started_at is not None else None,
            "ended_at": self.ended_at.isoformat() if self.ended_at is not None else None,
            "started_seq": self.started_seq,
            "ended_seq": self.ended_seq,
        }


@dataclass(frozen=True, slots=True)
class _Raw:
    started_seq: int
    step_type: StepType
    name: str
    agent_name: str | None
    status: str
    input: Mapping[str, JsonValue]
    output: Mapping[str, JsonValue] | None
    ended_seq: int | None


def run_step_records(run_id: str, events: Sequence[Event], *, status: str | None = None) -> list[RunStepRecord]:
    """The steps of one run from its events (in sequence order). `status` is the run's status as the reducer folded
    it: it tells a step still running from one a finished run left without an end."""
    steps = steps_of(run_id, events, status=status)
    by_seq = {e.sequence: e for e in events}
    active = steps.status in ACTIVE_RUN_STATES
    raw: list[_Raw] = []
    for turn in steps.turns:
        raw.append(_model(turn, steps, _requested_model(by_seq, turn.requested_sequence)))
        for tool in turn.tools:
            raw.append(_tool(tool, turn.agent, active=active))
            raw.extend(_delegations(tool, turn.agent))
        if turn.switched_to is not None and turn.switched_sequence is not None:
            raw.append(_switch(turn, by_seq))
    if steps.model_call_in_flight is not None:
        last = steps.turns[-1] if steps.turns else None
        agent = (last.switched_to or last.agent) if last is not None else steps.agent_name
        model_ref = _requested_model(by_seq, steps.model_call_in_flight) or steps.model_ref
        raw.append(
            _Raw(
                started_seq=steps.model_call_in_flight,
                step_type="model_call",
                name=model_ref or "model",
                agent_name=agent,
                status="running" if active else "unfinished",
                input={"model_ref": model_ref, "failed_attempts": []},
                output=None,
                ended_seq=None,
            )
        )
    raw.sort(key=lambda r: (r.started_seq, _ORDER[r.step_type]))
    namespace = _namespace(run_id)
    return [
        RunStepRecord(
            id=str(uuid.uuid5(namespace, f"step:{r.started_seq}:{r.step_type}")),
            run_id=run_id,
            seq=n,
            step_type=r.step_type,
            name=r.name,
            agent_name=r.agent_name,
            status=r.status,
            input=r.input,
            output=r.output,
            started_at=_at(by_seq, r.started_seq),
            ended_at=_at(by_seq, r.ended_seq),
            started_seq=r.started_seq,
            ended_seq=r.ended_seq,
        )
        for n, r in enumerate(raw, start=1)
    ]


_ORDER: Mapping[str, int] = {"model_call": 0, "tool_call": 1, "agent_delegate": 2, "agent_switch": 3}


def _namespace(run_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(run_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"bearagent:run:{run_id}")


def _at(by_seq: Mapping[int, Event], sequence: int | None) -> datetime | None:
    event = by_seq.get(sequence) if sequence is not None else None
    return event.occurred_at if event is not None else None


def _error(error: ErrorInfo | None) -> JsonValue:
    if error is None:
        return None
    return {"category": error.category, "code": error.code, "message": error.message, "retryable": error.retryable}


def _requested_model(by_seq: Mapping[int, Event], sequence: int) -> str | None:
    event = by_seq.get(sequence)
    ref = event.payload.get("model_ref") if event is not None and event.event_type == "ModelCallRequested" else None
    return ref if isinstance(ref, str) else None


def _model(turn: ModelStep, steps: RunSteps, requested: str | None) -> _Raw:
    model_ref = requested or steps.model_ref
    output: dict[str, JsonValue] = {
        "text": turn.text,
        "tool_calls": None
        if turn.tool_calls is None
        else [
            {"id": str(c.tool_call_id), "name": c.name, "arguments": thaw_json_mapping(c.arguments)}
            for c in turn.tool_calls
        ],
        "stop_reason": turn.stop_reason,
        "refusal": turn.refusal,
        "model": turn.model,
        "provider_request_id": turn.provider_request_id,
        "usage": {"input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens},
        "error": _error(turn.error),
    }
    return _Raw(
        started_seq=turn.requested_sequence,
        step_type="model_call",
        name=turn.model or model_ref or "model",
        agent_name=turn.agent,
        status="failed" if turn.error is not None else "succeeded",
        input={
            "model_ref": model_ref,
            "failed_attempts": [
                {"seq": a.sequence, "kind": a.kind, "code": a.code, "message": a.message} for a in turn.failed_attempts
            ],
        },
        output=output,
        ended_seq=turn.ended_sequence,
    )


def _tool(tool: ToolStep, agent: str | None, *, active: bool) -> _Raw:
    status = tool.outcome
    if status == "unfinished":
        status = "waiting" if tool.approval == "asked" else ("running" if active else "unfinished")
    ended = tool.result_sequence is not None
    return _Raw(
        started_seq=tool.requested_sequence,
        step_type="tool_call",
        name=tool.name,
        agent_name=agent,
        status=status,
        input={
            "tool_call_id": tool.tool_call_id,
            "arguments": thaw_json_mapping(tool.arguments) if tool.arguments is not None else None,
        },
        output={
            "content": tool.content,
            "is_error": tool.is_error,
            "error": _error(tool.error),
            "approval": tool.approval,
            "hook_decisions": list(tool.hook_decisions),
        }
        if ended or tool.approval is not None or tool.hook_decisions
        else None,
        ended_seq=tool.result_sequence,
    )


def _delegations(tool: ToolStep, agent: str | None) -> list[_Raw]:
    out: list[_Raw] = []
    finished = {str(e.payload.get("child_run_id")): e for e in tool.child_facts if e.event_type == "ChildRunFinished"}
    for started in tool.child_facts:
        if started.event_type != "ChildRunStarted":
            continue
        child = str(started.payload.get("child_run_id"))
        end = finished.get(child)
        out.append(
            _Raw(
                started_seq=started.sequence,
                step_type="agent_delegate",
                name=str(started.payload.get("agent_name") or "subagent"),
                agent_name=agent,
                status=str(end.payload.get("status")) if end is not None else "running",
                input={"child_run_id": child, "tool_call_id": tool.tool_call_id, "tool_name": tool.name},
                output={"child_run_id": child, "status": end.payload.get("status")} if end is not None else None,
                ended_seq=end.sequence if end is not None else None,
            )
        )
    return out


def _switch(turn: ModelStep, by_seq: Mapping[int, Event]) -> _Raw:
    assert turn.switched_sequence is not None and turn.switched_to is not None
    event = by_seq.get(turn.switched_sequence)
    payload: Mapping[str, JsonValue] = event.payload if event is not None else {}
    from_agent = payload.get("from_agent")
    return _Raw(
        started_seq=turn.switched_sequence,
        step_type="agent_switch",
        name=turn.switched_to,
        agent_name=from_agent if isinstance(from_agent, str) else turn.agent,
        status="succeeded",
        input={"from_agent": from_agent, "reason": payload.get("reason", "")},
        output={"to_agent": turn.switched_to, "switch_count": payload.get("switch_count")},
        ended_seq=turn.switched_sequence,
    )

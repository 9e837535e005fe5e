"""The cursor of a run: where a stopped run stands, derived from its events alone. Pure, no I/O.

Resume rebuilds the loop from it: the conversation so far (the same messages `runtime/history.py` rebuilds), the
effective agent and switch count, the steps taken, the tool calls of the last completed model turn that have no
result yet, the tool call that was in flight when the run stopped (and the answer to its approval, if it waited
for one), and how many model calls reached a provider (where a scripted model continues).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    ContextCompactedV1,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    RecordedToolCall,
    RunCreatedV2,
    RunResumedV1,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    parse_run_event_payload,
    run_plan_facts,
)
from bearagent.runtime.history import conversation, run_messages


@dataclass(frozen=True, slots=True)
class InFlightCall:
    """A tool call that was requested and never got a result."""

    tool_call_id: ToolCallId
    activity_id: ActivityId
    tool_name: str
    approval_id: str | None = None
    decision: str | None = None
    """The answer to its approval (allow_once / allow_always / deny), when it waited for one and was answered."""
    rule: str | None = None
    """The permission rule "allow always" remembers for it (the approval's suggested rule)."""
    seal: str | None = None
    """The answer's seal (`trust/seals.py`): a resume acts on the answer only if it verifies."""


@dataclass(frozen=True, slots=True)
class LastTurn:
    """The last completed model turn: its text and calls, and which calls already have a result."""

    text: str
    tool_calls: tuple[RecordedToolCall, ...]
    stop_reason: str
    refusal: str | None
    answered: frozenset[ToolCallId]


@dataclass(frozen=True, slots=True)
class RunCursor:
    goal: str
    agent_name: str
    prompt_hash: str
    tool_spec_versions: dict[str, str]
    messages: tuple[Message, ...]
    """This run's conversation after the system prompt and the session's history: the goal, then each turn."""
    last_turn: LastTurn | None
    in_flight: InFlightCall | None
    switch_count: int = 0
    steps: int = 0
    model_calls: int = 0
    """Model calls that reached a provider (completed or failed with an answer): where a scripted model goes on."""
    last_sequence: int = 0
    resumes: int = 0
    pending: tuple[RecordedToolCall, ...] = field(default=())
    """The calls of the last turn with no result yet, in the order the model asked for them."""
    events: tuple[Event, ...] = field(default=(), repr=False)
    trigger_ref: str | None = None
    """RunCreated's `trigger_ref` (`compact`: the run was a `/compact`)."""

    def conversation(self, history: Sequence[Message]) -> list[Message]:
        """The working history to go on with: the session's `history` before this run, then this run's messages,
        with the run's compactions applied (`messages` alone has them all)."""
        return conversation(history, self.events, answer_pending=False)


def run_cursor(events: Sequence[Event]) -> RunCursor:
    """Where the run of `events` (in sequence order, from RunCreated) stands. A log written before RunCreated v2
    cannot be resumed: it does not record the goal and the agent."""
    if not events or events[0].event_type != "RunCreated" or events[0].schema_version < 2:
        raise BearAgentError(
            ErrorInfo.of(
                "invalid_request",
                "not_resumable",
                "this run's log does not record its goal and agent (it was written by an older BearAgent)",
            ),
            hint="start a new run with the same prompt instead",
        )
    created = parse_run_event_payload("RunCreated", events[0].schema_version, events[0].payload)
    assert isinstance(created, RunCreatedV2)
    started = next((e for e in events if e.event_type == "RunStarted"), None)
    plan = run_plan_facts(
        created,
        parse_run_event_payload("RunStarted", started.schema_version, started.payload) if started else None,
    )
    agent = created.agent_name
    switch_count = steps = model_calls = resumes = 0
    last: LastTurn | None = None
    answered: set[ToolCallId] = set()
    requested: dict[ToolCallId, tuple[ActivityId, str]] = {}
    approvals: dict[ToolCallId, tuple[str, str | None]] = {}
    rules: dict[str, str | None] = {}
    seals: dict[str, str | None] = {}
    for event in events[1:]:
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if isinstance(payload, ModelCallCompletedV2):
            steps += 1
            model_calls += 1
            answered = set()
            requested.clear()
            approvals.clear()
            last = LastTurn(
                text=payload.text,
                tool_calls=payload.tool_calls,
                stop_reason=payload.stop_reason,
                refusal=payload.refusal,
                answered=frozenset(),
            )
        elif isinstance(payload, ModelCallFailedV2):
            if payload.error.code not in ("cancelled.owner_gone", "cancelled.interrupted"):
                model_calls += 1
        elif isinstance(payload, ToolCallRequestedV2):
            requested[payload.tool_call_id] = (payload.activity_id, payload.tool_name)
        elif isinstance(payload, (ToolCallCompletedV2, ToolCallFailedV2)):
            answered.add(payload.tool_call_id)
            requested.pop(payload.tool_call_id, None)
            approvals.pop(payload.tool_call_id, None)
        elif isinstance(payload, ToolCallAbandonedV1):
            answered.add(payload.tool_call_id)
            requested.pop(payload.tool_call_id, None)
        elif isinstance(payload, ApprovalRequestedV1):
            approvals[payload.tool_call_id] = (payload.approval_id, None)
            rules[payload.approval_id] = payload.suggested_rule or payload.tool_name
        elif isinstance(payload, ApprovalResolvedV1):
            for call_id, (approval_id, _none) in list(approvals.items()):
                if approval_id == payload.approval_id:
                    approvals[call_id] = (approval_id, payload.decision)
                    seals[approval_id] = payload.seal
        elif isinstance(payload, AgentSwitchedV1):
            agent = payload.to_agent
            switch_count = payload.switch_count
        elif isinstance(payload, RunResumedV1):
            resumes += 1
        elif isinstance(payload, ContextCompactedV1) and payload.model_ref == plan.model_ref:
            model_calls += 1  # the summary came from the run's own provider: a scripted model used a turn for it
    in_flight: InFlightCall | None = None
    if requested:
        call_id, (activity_id, name) = next(iter(requested.items()))
        approval_id, decision = approvals.get(call_id, (None, None))
        rule = rules.get(approval_id) if approval_id is not None else None
        seal = seals.get(approval_id) if approval_id is not None else None
        in_flight = InFlightCall(call_id, activity_id, name, approval_id, decision, rule, seal)
    if last is not None:
        last = LastTurn(last.text, last.tool_calls, last.stop_reason, last.refusal, frozenset(answered))
    pending = tuple(c for c in last.tool_calls if c.tool_call_id not in answered) if last is not None else ()
    return RunCursor(
        goal=created.goal,
        agent_name=agent,
        prompt_hash=plan.prompt_hash,
        tool_spec_versions=dict(plan.tool_spec_versions),
        messages=tuple(run_messages(events, answer_pending=False)),
        last_turn=last,
        in_flight=in_flight,
        switch_count=switch_count,
        steps=steps,
        model_calls=model_calls,
        last_sequence=events[-1].sequence,
        resumes=resumes,
        pending=pending,
        events=tuple(events),
        trigger_ref=created.trigger_ref,
    )

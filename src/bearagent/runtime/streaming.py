"""The stream protocol of SPEC §14 (`bearagent.domain.stream`), made from the log.

`LogStream` turns one run's committed events (in sequence order) and its token deltas into stream events that carry
the run's id and the log sequence they come from, so a consumer can tell runs apart and resume by sequence: the same
events come out whether they are read back from the store or published live by the run writer. `follow_run` is the
catch-up-then-live subscription over a store and its writer (through the store's one follower,
`runtime.log_follower`); `RunTreeStream` hands a run's (and its child runs')
events to a sink as the writer publishes them (`bearagent run --stream-json`, `Workspace.stream`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, cast

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    ApprovalRequestedV1,
    ApprovalResolvedV1,
    ChildRunFinishedV2,
    ChildRunStartedV1,
    ElicitationRequestedV1,
    ElicitationResolvedV1,
    ModelCallCompletedV2,
    RunFailedV2,
    RunSucceededV2,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    parse_run_event_payload,
)
from bearagent.domain.stream import (
    AgentSwitchedEvent,
    ApprovalRequestedEvent,
    ApprovalResolvedEvent,
    ElicitationRequestedEvent,
    ElicitationResolvedEvent,
    FinalEvent,
    RunFailedEvent,
    RunStartedEvent,
    RunSucceededEvent,
    StepEvent,
    StreamError,
    StreamEventModel,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)

if TYPE_CHECKING:
    from bearagent.domain.run_events_legacy import ChildRunFinishedV1
from bearagent.ports import RunStorage
from bearagent.runtime.log_follower import follow_log
from bearagent.runtime.run_writer import Published, RunWriter, TokenDelta

StreamSink = Callable[[StreamEventModel], None]

TERMINAL_EVENTS = frozenset({"RunSucceeded", "RunFailed", "RunCancelled"})
CANCELLED = ErrorInfo.of("cancelled", "by_caller", "the run was cancelled")


class LogStream:
    """The stream events of ONE run, from its committed events fed in sequence order (`committed`) and its token
    deltas (`token`). Deterministic: a replay of the log from sequence 1 yields the same events as the live run."""

    def __init__(self, run_id: RunId) -> None:
        self.run_id = run_id
        self.last_sequence = 0
        self.finished = False
        self._steps = 0
        self._call_names: dict[str, str] = {}
        self._children: dict[str, str] = {}
        self._approval_calls: dict[str, str] = {}

    def committed(self, event: Event) -> list[StreamEventModel]:
        """The stream events of the next committed event (often none: most facts are not shown live)."""
        self.last_sequence = event.sequence
        run_id, seq, kind = self.run_id, event.sequence, event.event_type
        if kind in TERMINAL_EVENTS:
            self.finished = True
        if kind == "RunStarted":
            return [RunStartedEvent(run_id=run_id, seq=seq)]
        if kind not in _SHOWN:
            return []
        payload = parse_run_event_payload(kind, event.schema_version, event.payload)
        if isinstance(payload, ModelCallCompletedV2):
            for call in payload.tool_calls:
                self._call_names[str(call.tool_call_id)] = call.name
            if not payload.tool_calls:
                return []
            self._steps += 1
            return [StepEvent(index=self._steps - 1, kind="tool_call", run_id=run_id, seq=seq)]
        if isinstance(payload, ToolCallRequestedV2):
            call_id = str(payload.tool_call_id)
            name = self._call_names.get(call_id, payload.tool_name)
            return [ToolCallEvent(id=call_id, name=name, arguments=payload.arguments, run_id=run_id, seq=seq)]
        if isinstance(payload, ToolCallCompletedV2 | ToolCallFailedV2):
            call_id = str(payload.tool_call_id)
            result = payload.result
            return [
                ToolResultEvent(
                    id=call_id,
                    name=self._call_names.get(call_id, result.tool_name),
                    result=result.content,
                    is_error=result.status == "failed",
                    run_id=run_id,
                    seq=seq,
                )
            ]
        if isinstance(payload, ToolCallAbandonedV1):  # the call's end: its outcome is unknown, it is not run again
            call_id = str(payload.tool_call_id)
            return [
                ToolResultEvent(
                    id=call_id,
                    name=self._call_names.get(call_id, payload.tool_name),
                    result=payload.message,
                    is_error=True,
                    run_id=run_id,
                    seq=seq,
                )
            ]
        if isinstance(payload, ApprovalRequestedV1):
            call_id = str(payload.tool_call_id)
            self._approval_calls[payload.approval_id] = call_id
            return [
                ApprovalRequestedEvent(
                    run_id=run_id,
                    approval_id=payload.approval_id,
                    tool_call_id=call_id,
                    tool_name=self._call_names.get(call_id, payload.tool_name),
                    arguments=payload.arguments,
                    reason=payload.reason,
                    suggested_rule=payload.suggested_rule,
                    choices=payload.choices,
                    seq=seq,
                )
            ]
        if isinstance(payload, ApprovalResolvedV1):
            return [
                ApprovalResolvedEvent(
                    run_id=run_id,
                    approval_id=payload.approval_id,
                    decision=payload.decision,
                    answered_by=payload.answered_by,
                    tool_call_id=self._approval_calls.get(payload.approval_id),
                    message=payload.message,
                    seq=seq,
                )
            ]
        if isinstance(payload, ElicitationRequestedV1):
            return [
                ElicitationRequestedEvent(
                    run_id=run_id,
                    elicitation_id=payload.elicitation_id,
                    tool_call_id=str(payload.tool_call_id) if payload.tool_call_id is not None else None,
                    server=payload.server,
                    message=payload.message,
                    mode=payload.mode,
                    requested_schema=payload.requested_schema,
                    url=payload.url,
                    seq=seq,
                )
            ]
        if isinstance(payload, ElicitationResolvedV1):
            return [
                ElicitationResolvedEvent(
                    run_id=run_id,
                    elicitation_id=payload.elicitation_id,
                    action=payload.action,
                    answered_by=payload.answered_by,
                    seq=seq,
                )
            ]
        if isinstance(payload, RunSucceededV2):
            self._steps += 1
            return [
                StepEvent(index=self._steps - 1, kind="final", run_id=run_id, seq=seq),
                FinalEvent(content=payload.final_text, run_id=run_id, seq=seq),
                RunSucceededEvent(run_id=run_id, steps=self._steps, seq=seq),
            ]
        if isinstance(payload, RunFailedV2):
            return [RunFailedEvent(run_id=run_id, error=StreamError.from_info(payload.error), seq=seq)]
        if kind == "RunCancelled":
            return [RunFailedEvent(run_id=run_id, error=StreamError.from_info(CANCELLED), seq=seq)]
        if isinstance(payload, AgentSwitchedV1):
            return [
                AgentSwitchedEvent(run_id=run_id, from_agent=payload.from_agent, to_agent=payload.to_agent, seq=seq)
            ]
        if isinstance(payload, ChildRunStartedV1):
            self._children[str(payload.child_run_id)] = payload.agent_name
            return [
                SubagentStartedEvent(
                    run_id=payload.child_run_id, parent_run_id=run_id, agent=payload.agent_name, seq=seq
                )
            ]
        if kind == "ChildRunFinished":  # v2, or v1 from an old log (its model is loaded only to read one)
            finished = cast("ChildRunFinishedV1 | ChildRunFinishedV2", payload)
            agent = self._children.get(str(finished.child_run_id), "subagent")
            return [
                SubagentFinishedEvent(
                    run_id=finished.child_run_id, parent_run_id=run_id, agent=agent, status=finished.status, seq=seq
                )
            ]
        return []

    def token(self, delta: TokenDelta) -> TokenEvent:
        return TokenEvent(
            text=delta.text,
            run_id=self.run_id,
            activity_id=delta.activity_id,
            offset=delta.offset,
            seq=delta.after or None,
        )


_SHOWN = frozenset(
    {
        "ModelCallCompleted",
        "ToolCallRequested",
        "ToolCallCompleted",
        "ToolCallFailed",
        "ToolCallAbandoned",
        "ApprovalRequested",
        "ApprovalResolved",
        "ElicitationRequested",
        "ElicitationResolved",
        "RunSucceeded",
        "RunFailed",
        "RunCancelled",
        "AgentSwitched",
        "ChildRunStarted",
        "ChildRunFinished",
    }
)


class RunTreeStream:
    """A run writer subscriber that hands the stream events of one run (and, with `children=True`, of the child
    runs it starts, recursively) to `sink` as they are committed or generated. Subscribe it before the run starts
    (its id is known up front: `RunOptions.run_id`); `finished` is set after the root run's terminal event. Child
    runs are opt-in because a protocol-1 client cannot tell their `token` and `final` events from the parent's."""

    def __init__(self, run_id: RunId, sink: StreamSink, *, children: bool = False) -> None:
        self.root = run_id
        self._sink = sink
        self._children = children
        self._streams: dict[str, LogStream] = {str(run_id): LogStream(run_id)}
        self.finished = False

    def __call__(self, item: Published) -> None:
        stream = self._streams.get(str(item.run_id))
        if stream is None:
            return
        if isinstance(item, TokenDelta):
            self._sink(stream.token(item))
            return
        for event in stream.committed(item.event):
            if self._children and isinstance(event, SubagentStartedEvent):
                self._streams[str(event.run_id)] = LogStream(event.run_id)
            self._sink(event)
        if stream.finished and item.run_id == self.root:
            self.finished = True

    def catch_up(self, events: Iterable[Event]) -> list[StreamEventModel]:
        """Feed the root run's events already in the log (in sequence order) to its stream without handing them to
        the sink, for a subscriber attached to a run that goes on (a resumed run): the events committed after are
        then made with the run's whole state (tool names, step numbers, child agents). Returns the stream events the
        earlier ones make, for a sink that needs to know what came before without showing it."""
        stream = self._streams[str(self.root)]
        made: list[StreamEventModel] = []
        for event in events:
            for out in stream.committed(event):
                if self._children and isinstance(out, SubagentStartedEvent):
                    self._streams[str(out.run_id)] = LogStream(out.run_id)
                made.append(out)
        if stream.finished:
            self.finished = True
        return made


POLL_INTERVAL_S = 0.25
"""How long `follow_run` waits for a live event before it looks in the store (for a run another process writes)."""


async def follow_run(
    storage: RunStorage, writer: RunWriter | None, run_id: RunId, *, after_seq: int = 0
) -> AsyncIterator[StreamEventModel]:
    """The stream events of `run_id` after log sequence `after_seq`: first caught up from the store, then live from
    `writer` (this process's runs) or, for a run another process writes, from the store as it grows; ends after the
    run's terminal event. Served by the store's one follower (`runtime.log_follower`): no gaps, no duplicates.
    Tokens are live only (a consumer that reconnects gets the rest of the model call's tokens, then its
    `step`/`final` from the log)."""
    stream = LogStream(run_id)
    polled = POLL_INTERVAL_S
    async for item in follow_log(storage, writer, run_id, poll_s=polled, max_poll_s=polled):
        if isinstance(item, TokenDelta):
            if item.after >= after_seq:
                yield stream.token(item)
            continue
        for out in stream.committed(item):
            if item.sequence > after_seq:
                yield out

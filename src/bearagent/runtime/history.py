"""Rebuild a session's conversation from the event log: the log is the only source of truth for history.

Per run: the user's goal (with a UserPromptSubmit hook's context), then each completed model call as an assistant message (text + tool calls), then each
tool result and each message a hook injected (`MessageInjected`). A tool call whose result never became a fact (the run was cancelled or crashed mid-call) gets a
synthetic failed result, so the history stays valid for every provider (each call answered once).

A compaction (`ContextCompacted`) is a fact too: the working history (`history_from_events`, `conversation`) has
its summary in place of the messages it replaced, as the model was sent after it; `run_messages` and
`sourced_run_messages` keep every message of a run (the full transcript, e.g. for the message records).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bearagent.domain.events import Event
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.domain.run_events import (
    ContextCompactedV1,
    MessageInjectedV1,
    MessageInjectedV2,
    ModelCallCompletedV2,
    RunCreatedV2,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    parse_run_event_payload,
)
from bearagent.runtime.compaction import compacted
from bearagent.runtime.context import tool_result_message

_INTERRUPTED = "[no result: the run ended before this tool call finished]"


def history_from_events(runs: Iterable[Sequence[Event]]) -> list[Message]:
    """The working history of several runs, oldest run first, each given as its ordered events: every run's
    messages, with each compaction (`ContextCompacted`) applied where it happened, also to earlier runs' part."""
    messages: list[Message] = []
    for events in runs:
        messages = conversation(messages, events)
    return messages


def run_messages(events: Sequence[Event], *, answer_pending: bool = True) -> list[Message]:
    """One run's messages, all of them (its compactions not applied: `conversation` applies them).
    `answer_pending=False` leaves the calls of the last turn that have no result unanswered (a resumed run answers
    them itself)."""
    return list(_rebuild(events, answer_pending))


def conversation(prior: Sequence[Message], events: Sequence[Event], *, answer_pending: bool = True) -> list[Message]:
    """The working history after one run: `prior` (the session's history before it) followed by the run's
    messages, each of the run's compactions replacing the first `replaced_messages` messages of what the history
    was at that point by its summary."""
    rebuilt = _rebuild(events, answer_pending)
    working = list(prior)
    taken = 0
    for position, compaction in rebuilt.compactions:
        working.extend(rebuilt[taken:position])
        taken = position
        working = compacted(working, compaction.replaced_messages, compaction.summary)
    working.extend(rebuilt[taken:])
    return working


def sourced_run_messages(events: Sequence[Event]) -> list[tuple[Message, Event]]:
    """One run's messages exactly as `run_messages` rebuilds them, each with the event it came from (the goal's
    `RunCreated`, the `ModelCallCompleted` of a turn, the result of a tool call; a synthetic result of a call that
    never finished comes from the event that closed it): where a message record's time comes from."""
    out = _rebuild(events, True)
    return [(message, source) for message, source in zip(out, out.sources, strict=True) if source is not None]


class _Sourced(list[Message]):
    """The messages being rebuilt and, beside each, the event being read when it was added."""

    def __init__(self) -> None:
        super().__init__()
        self.reading: Event | None = None
        self.sources: list[Event | None] = []
        self.compactions: list[tuple[int, ContextCompactedV1]] = []
        """Each compaction of the run and how many of the run's messages came before it."""

    def append(self, message: Message, /) -> None:
        super().append(message)
        self.sources.append(self.reading)


def _rebuild(events: Sequence[Event], answer_pending: bool) -> _Sourced:
    out = _Sourced()
    pending: dict[ToolCallId, ToolCallPart] = {}

    def flush_pending() -> None:
        for call in pending.values():
            out.append(tool_result_message(call, _INTERRUPTED, True))
        pending.clear()

    for event in events:
        out.reading = event
        if event.event_type not in _INTERESTING:
            continue
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if isinstance(payload, RunCreatedV2):
            if payload.goal.strip():
                out.append(Message.user(payload.goal))
        elif isinstance(payload, MessageInjectedV1 | MessageInjectedV2):
            if payload.kind == "prompt_context" and out and out[-1].role == "user":
                out[-1] = Message.user(f"{out[-1].text}\n\n{payload.text}")
            else:
                out.append(Message.user(payload.text))
        elif isinstance(payload, ModelCallCompletedV2):
            flush_pending()
            parts: list[TextPart | ToolCallPart] = []
            if payload.text:
                parts.append(TextPart(text=payload.text))
            for call in payload.tool_calls:
                part = ToolCallPart(
                    tool_call_id=call.tool_call_id,
                    provider_call_id=call.provider_call_id,
                    name=call.name,
                    arguments=call.arguments,
                )
                parts.append(part)
                pending[call.tool_call_id] = part
            if parts:
                out.append(Message(role="assistant", parts=tuple(parts)))
        elif isinstance(payload, ContextCompactedV1):
            out.compactions.append((len(out), payload))
        elif isinstance(payload, ToolCallAbandonedV1):
            call = pending.pop(payload.tool_call_id, None)
            if call is not None:
                out.append(tool_result_message(call, payload.message, True))
        elif isinstance(payload, (ToolCallCompletedV2, ToolCallFailedV2)):
            call = pending.pop(payload.tool_call_id, None)
            if call is None:
                continue
            out.append(tool_result_message(call, payload.result.content, payload.result.is_error))
    if answer_pending:
        flush_pending()
    return out


_INTERESTING = frozenset(
    {
        "RunCreated",
        "MessageInjected",
        "ModelCallCompleted",
        "ToolCallCompleted",
        "ToolCallFailed",
        "ToolCallAbandoned",
        "ContextCompacted",
    }
)

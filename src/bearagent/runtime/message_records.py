"""Session messages as records (seed 002's Message: `id`, `session_id`, `run_id`, `role`, `content`, `metadata`,
`created_at`), for `GET /v1/sessions/{id}/messages`: the session's timeline (`session_history.py`, its rewinds
applied and a fork's origin first), or with `?include_rewound=true` every run's messages.

Pure: the messages are the conversation `history.py` rebuilds from the log (the history the model is sent, the
one source of truth), each with the event it came from (`sourced_run_messages`), which gives its run and its time.
Content is always a list of parts in the AI SDK's style: `text`, `tool-call`, `tool-result` (field names as in the
stream protocol: `tool_call_id`, `tool_name`, `arguments`, `result`, `is_error`). A tool result is what the model
read (bounded to 30,000 characters); the full result is on the run's steps.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.events import Event
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.runtime.history import sourced_run_messages
from bearagent.runtime.session_history import SourcedMessage


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: str
    """Derived from the run id and the message's place in the run (a UUID, the same every time it is read)."""
    session_id: str
    run_id: str
    role: str
    content: tuple[Mapping[str, JsonValue], ...]
    metadata: Mapping[str, JsonValue]
    """`sequence` and `event_type` of the event it came from; an assistant turn adds `model` and `stop_reason`, an
    injected user message its `kind` (`prompt_context`, `stop_feedback`, …)."""
    created_at: datetime

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "run_id": self.run_id,
            "role": self.role,
            "content": [dict(part) for part in self.content],
            "metadata": dict(self.metadata),
            "created_at": self.created_at.isoformat(),
        }


def session_message_records(session_id: str, runs: Iterable[tuple[str, Sequence[Event]]]) -> list[MessageRecord]:
    """The messages of a session's top-level runs, given oldest first as `(run id, events in sequence order)`,
    every run's (`?include_rewound=true`: no rewind applied, no fork origin)."""
    records: list[MessageRecord] = []
    for run_id, events in runs:
        for n, (message, source) in enumerate(sourced_run_messages(events), start=1):
            records.append(_record(session_id, run_id, n, message, source))
    return records


def timeline_message_records(session_id: str, messages: Iterable[SourcedMessage]) -> list[MessageRecord]:
    """The messages of a session's timeline (`Timeline.messages`: its rewinds applied, a fork's origin first): the
    conversation its next run is given, without compactions."""
    return [_record(session_id, str(m.run_id), m.number, m.message, m.source) for m in messages]


def _record(session_id: str, run_id: str, n: int, message: Message, source: Event) -> MessageRecord:
    return MessageRecord(
        id=str(uuid.uuid5(_namespace(run_id), f"message:{n}")),
        session_id=session_id,
        run_id=run_id,
        role=message.role,
        content=_parts(message),
        metadata=_metadata(source),
        created_at=source.occurred_at,
    )


def _namespace(run_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(run_id)
    except ValueError:
        return uuid.uuid5(uuid.NAMESPACE_URL, f"bearagent:run:{run_id}")


def _parts(message: Message) -> tuple[Mapping[str, JsonValue], ...]:
    out: list[Mapping[str, JsonValue]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            out.append(
                {
                    "type": "tool-call",
                    "tool_call_id": str(part.tool_call_id),
                    "tool_name": part.name,
                    "arguments": thaw_json_mapping(part.arguments),
                }
            )
        else:
            out.append(
                {
                    "type": "tool-result",
                    "tool_call_id": str(part.tool_call_id),
                    "tool_name": part.name,
                    "result": part.content,
                    "is_error": part.is_error,
                }
            )
    return tuple(out)


def _metadata(source: Event) -> Mapping[str, JsonValue]:
    meta: dict[str, JsonValue] = {"sequence": source.sequence, "event_type": source.event_type}
    payload = source.payload
    if source.event_type == "ModelCallCompleted":
        meta["model"] = payload.get("model")
        meta["stop_reason"] = payload.get("stop_reason")
    elif source.event_type == "MessageInjected":
        meta["kind"] = payload.get("kind")
    return meta

"""The text of an event that a run search looks in (`domain/search.py`): for the events that carry what people
remember of a run (the prompt, the model's answers and tool calls, tool results and errors, injected messages), the
string values of the payload, in order, minus ids, hashes, times and other machine keys. Bounded: at most
`MAX_EVENT_TEXT` characters per event, so a huge tool result costs the index no more than a page of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bearagent.domain._base import JsonValue

MAX_EVENT_TEXT = 32_000

SEARCHED_EVENTS = frozenset(
    {
        "RunCreated",
        "RunSucceeded",
        "RunFailed",
        "ModelCallCompleted",
        "ModelCallFailed",
        "ToolCallRequested",
        "ToolCallCompleted",
        "ToolCallFailed",
        "MessageInjected",
        "ApprovalResolved",
        "ContextCompacted",
    }
)

_SKIPPED_KEYS = frozenset(
    {
        "sha256",
        "hash",
        "digest",
        "model",
        "provider",
        "kind",
        "category",
        "code",
        "stop_reason",
        "finish_reason",
        "status",
        "media_type",
        "mime_type",
        "encoding",
        "trigger_type",
        "version",
        "owner",
        "budget_limits",
        "usage",
        "request",
    }
)


def _skipped(key: str) -> bool:
    return key in _SKIPPED_KEYS or key.endswith(("_id", "_ids", "_at", "_ms", "_tokens", "_sha256"))


def search_text(event_type: str, payload: Mapping[str, JsonValue]) -> str | None:
    """The searchable text of one event (None: nothing to index), at most `MAX_EVENT_TEXT` characters, NUL-free
    (neither index takes it)."""
    if event_type not in SEARCHED_EVENTS:
        return None
    pieces: list[str] = []
    room = [MAX_EVENT_TEXT]

    def walk(value: JsonValue, depth: int) -> None:
        if room[0] <= 0 or depth > 12:
            return
        if isinstance(value, str):
            if value:
                piece = value[: room[0]]
                pieces.append(piece)
                room[0] -= len(piece) + 1
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not _skipped(key):
                    walk(item, depth + 1)
        elif isinstance(value, Sequence):
            for item in value:
                walk(item, depth + 1)

    walk(payload, 0)
    text = "\n".join(pieces).replace("\x00", " ").strip()
    return text or None

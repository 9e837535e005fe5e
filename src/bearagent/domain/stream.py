"""The live stream protocol (SPEC §14, seed 004): what `--stream-json` and SSE consumers receive, one JSON object per
event, discriminated by `type`.

Encoding is `encode_stream_event` (one JSON line). Decoding is the trust boundary: `parse_stream_event` /
`parse_stream_event_json` turn untrusted JSON into exactly one of the models below, and fail with a `BearAgentError`
(`validation.stream_event`) that names the problem on an unknown `type`, a missing or malformed field, or a line that
is not a JSON object.

Protocol 2 adds `run_id` to every event and `seq` (the log sequence it comes from), and `activity_id`/`offset` to
`token`, all optional: protocol-1 lines still parse, and a protocol-1 client ignores them.

Compatibility rules (see docs/stream-protocol.md):
- a `type` value, once published, is never renamed or removed; new facts get a new `type`;
- new fields are only ever added as optional fields with a default, so old producers stay valid;
- decoding ignores fields it does not know, so an old client keeps working against a newer producer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Final, Literal, TypeAlias, cast

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.config import JsonDict

from bearagent.domain._base import DomainModel, JsonObject, JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId

STREAM_PROTOCOL_VERSION: Final = 2
"""1: the first published events. 2: optional `run_id` and `seq` on every event, `activity_id`/`offset` on `token`."""

MAX_STREAM_TEXT_CHARS = 4 * 1_048_576
MAX_STREAM_LINE_CHARS = 16 * 1_048_576


def _type_is_required(schema: JsonDict) -> None:
    # `type` has a default so Python producers need not repeat it, but on the wire it is always present and required.
    properties = schema.get("properties")
    if isinstance(properties, dict) and "type" in properties:
        required = schema.get("required")
        names = [name for name in required if name != "type"] if isinstance(required, list) else []
        schema["required"] = ["type", *names]


class _StreamPart(DomainModel):
    """Frozen like every domain model, but unknown fields are IGNORED on decode so an old client tolerates fields a
    newer BearAgent adds (the only kind of change allowed to an existing `type`). Types are strict: `"2"` is not a
    step count and `1` is not `true`, as in the TypeScript twin."""

    model_config = ConfigDict(extra="ignore", strict=True, json_schema_extra=_type_is_required)


class StreamEventModel(_StreamPart):
    """Base of every stream event (see `_StreamPart` for decoding).

    `seq` (protocol 2, optional): the sequence of the run's log event this stream event comes from; several stream
    events of one log event share it (`step`, `final`, `run.succeeded` all come from `RunSucceeded`). A `token`
    carries the run's last committed sequence when it was generated. A consumer that reconnects asks for the events
    after the last `seq` it has all events of (`Workspace.stream_run(run_id, after_seq=...)`)."""

    seq: int | None = Field(default=None, ge=1)


class RunStartedEvent(StreamEventModel):
    type: Literal["run.started"] = "run.started"
    run_id: RunId


class StepEvent(StreamEventModel):
    """A new loop step begins: `kind` says whether it ends in tool calls or the final answer."""

    type: Literal["step"] = "step"
    index: int = Field(ge=0)
    kind: Literal["tool_call", "final"]
    run_id: RunId | None = None


class TokenEvent(StreamEventModel):
    """A piece of model text as it is generated (streamed only, never stored one by one). `activity_id` is the model
    call's activity and `offset` the number of characters of that call's text before this piece, so a consumer can
    tell a gap (tokens are ephemeral: one that reconnects gets the rest of the call's text, then its `final`)."""

    type: Literal["token"] = "token"
    text: str = Field(max_length=MAX_STREAM_TEXT_CHARS)
    run_id: RunId | None = None
    activity_id: str | None = Field(default=None, min_length=1, max_length=64)
    offset: int | None = Field(default=None, ge=0)


class ToolCallEvent(StreamEventModel):
    type: Literal["tool_call"] = "tool_call"
    id: str = Field(min_length=1, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    run_id: RunId | None = None


class ToolResultEvent(StreamEventModel):
    type: Literal["tool_result"] = "tool_result"
    id: str = Field(min_length=1, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    result: str = Field(max_length=MAX_STREAM_TEXT_CHARS)
    is_error: bool
    run_id: RunId | None = None


class FinalEvent(StreamEventModel):
    type: Literal["final"] = "final"
    content: str = Field(max_length=MAX_STREAM_TEXT_CHARS)
    run_id: RunId | None = None


class RunSucceededEvent(StreamEventModel):
    type: Literal["run.succeeded"] = "run.succeeded"
    run_id: RunId
    steps: int = Field(ge=0)


class StreamError(_StreamPart):
    """The public part of an `ErrorInfo`. `category` is a plain string here so an old client accepts a category a
    newer BearAgent introduces."""

    category: str = Field(min_length=1, max_length=64)
    code: str = Field(min_length=1, max_length=128)
    message: str = Field(max_length=2_000)
    retryable: bool

    @classmethod
    def from_info(cls, info: ErrorInfo) -> StreamError:
        return cls(category=info.category, code=info.code, message=info.message, retryable=info.retryable)


class RunFailedEvent(StreamEventModel):
    type: Literal["run.failed"] = "run.failed"
    run_id: RunId
    error: StreamError


class AgentSwitchedEvent(StreamEventModel):
    type: Literal["agent.switched"] = "agent.switched"
    run_id: RunId
    from_agent: str = Field(min_length=1, max_length=64)
    to_agent: str = Field(min_length=1, max_length=64)


class SubagentStartedEvent(StreamEventModel):
    """A child run started; `run_id` is the child's, `parent_run_id` the run that delegated to it."""

    type: Literal["subagent.started"] = "subagent.started"
    run_id: RunId
    parent_run_id: RunId
    agent: str = Field(min_length=1, max_length=64)


class SubagentFinishedEvent(StreamEventModel):
    type: Literal["subagent.finished"] = "subagent.finished"
    run_id: RunId
    parent_run_id: RunId
    agent: str = Field(min_length=1, max_length=64)
    status: Literal["succeeded", "failed", "cancelled"]


StreamEvent: TypeAlias = Annotated[
    RunStartedEvent
    | StepEvent
    | TokenEvent
    | ToolCallEvent
    | ToolResultEvent
    | FinalEvent
    | RunSucceededEvent
    | RunFailedEvent
    | AgentSwitchedEvent
    | SubagentStartedEvent
    | SubagentFinishedEvent,
    Field(discriminator="type"),
]
"""One event of the live stream (a discriminated union on `type`)."""

STREAM_EVENT_MODELS: Final[Mapping[str, type[StreamEventModel]]] = {
    "run.started": RunStartedEvent,
    "step": StepEvent,
    "token": TokenEvent,
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "final": FinalEvent,
    "run.succeeded": RunSucceededEvent,
    "run.failed": RunFailedEvent,
    "agent.switched": AgentSwitchedEvent,
    "subagent.started": SubagentStartedEvent,
    "subagent.finished": SubagentFinishedEvent,
}
STREAM_EVENT_TYPES: Final[tuple[str, ...]] = tuple(STREAM_EVENT_MODELS)

_ADAPTER: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def _decode_error(message: str, hint: str) -> BearAgentError:
    return BearAgentError(ErrorInfo.of("validation", "stream_event", message), hint=hint)


def parse_stream_event(obj: object) -> StreamEvent:
    """Decode one already-parsed JSON value into its stream event model; fails closed with a clear message."""
    if not isinstance(obj, Mapping):
        raise _decode_error(
            f"a stream event must be a JSON object, got {type(obj).__name__}",
            'send one JSON object per event, e.g. {"type": "token", "text": "hi"}',
        )
    mapping = cast(Mapping[object, object], obj)
    event_type = mapping.get("type")
    if not isinstance(event_type, str):
        raise _decode_error(
            "a stream event needs a string field 'type'",
            f"set 'type' to one of: {', '.join(STREAM_EVENT_TYPES)}",
        )
    if event_type not in STREAM_EVENT_MODELS:
        raise _decode_error(
            f"unknown stream event type {event_type[:64]!r}; known types: {', '.join(STREAM_EVENT_TYPES)}",
            "upgrade the client if the producer is a newer BearAgent, otherwise fix the 'type' value",
        )
    # Plain dicts and lists all the way down (a read-only mapping from Python code is as good as JSON's dict).
    plain = thaw_json_mapping(cast(Mapping[str, JsonValue], mapping))
    try:
        return _ADAPTER.validate_python(plain)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]]
        # The discriminated union puts the tag first in the location; drop it so the path is the field's own.
        if loc and loc[0] == event_type:
            loc = loc[1:]
        where = ".".join(loc) or "event"
        raise _decode_error(
            f"invalid {event_type!r} stream event: field {where}: {first['msg']}",
            f"see docs/stream-protocol.md for the fields of {event_type!r}",
        ) from exc


def parse_stream_event_json(line: str | bytes) -> StreamEvent:
    """Decode one JSONL line (or SSE `data:` payload) into a stream event."""
    if len(line) > MAX_STREAM_LINE_CHARS:
        raise _decode_error(
            f"stream event line of {len(line)} characters exceeds the limit of {MAX_STREAM_LINE_CHARS}",
            "split large content across several token events",
        )
    try:
        obj: object = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _decode_error(
            f"stream event line is not valid JSON: {exc}",
            "each line of --stream-json output is one complete JSON object",
        ) from exc
    return parse_stream_event(obj)


def encode_stream_event(event: StreamEventModel) -> str:
    """One event as a compact JSON line (no trailing newline); `parse_stream_event_json` reads it back. Optional
    fields that are not set are left out (no field of the protocol is ever `null` on the wire)."""
    return event.model_dump_json(exclude_none=True)


def stream_json_schema() -> dict[str, object]:
    """The JSON Schema of the stream union (committed as schemas/stream.schema.json)."""
    schema = _ADAPTER.json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "BearAgent stream event",
        "description": (
            f"One event of the BearAgent live stream (SPEC §14), protocol {STREAM_PROTOCOL_VERSION}; "
            "unknown fields must be ignored."
        ),
        "x-protocol-version": STREAM_PROTOCOL_VERSION,
        **schema,
    }

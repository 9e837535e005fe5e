"""The live stream protocol (SPEC §14, seed 004): what `--stream-json` and SSE consumers receive, one JSON object per
event, discriminated by `type`.

Encoding is `encode_stream_event` (one JSON line). Decoding is the trust boundary: `parse_stream_event` /
`parse_stream_event_json` turn untrusted JSON into exactly one of the models below, and fail with a `BearAgentError`
(`validation.stream_event`) that names the problem on an unknown `type`, a missing or malformed field, or a line that
is not a JSON object. They accept exactly what the TypeScript client's decoder accepts (clients/typescript/src/
decode.ts; tests/fixtures/stream_edge_cases.json is the table both are tested against), so a few rules exist for
JavaScript's sake: integer fields stop at 2^53-1, run ids are UUIDs in the 8-4-4-4-12 form only, and no field, known or
ignored, may nest deeper than 64 levels, hold a number that is no finite double (or NaN/Infinity) or a lone surrogate.

Protocol 2 adds `run_id` to every event and `seq` (the log sequence it comes from), and `activity_id`/`offset` to
`token`, all optional: protocol-1 lines still parse, and a protocol-1 client ignores them. Protocol 3 adds the types
`approval.requested` and `approval.resolved` (a run waits for someone's answer to a tool call; the answer).
Protocol 4 adds `elicitation.requested` and `elicitation.resolved` (an MCP server's question mid-call; its answer).

Compatibility rules (see docs/stream-protocol.md):
- a `type` value, once published, is never renamed or removed; new facts get a new `type`;
- new fields are only ever added as optional fields with a default, so old producers stay valid;
- decoding ignores fields it does not know, so an old client keeps working against a newer producer.

Why it is over 400 lines: it is the whole wire protocol, every event model beside the decoder that is its trust
boundary (the wording of every refusal, the protocol versions); the JSON Schema and the TypeScript union are
generated from or checked against this one file.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Mapping
from typing import Annotated, Final, Literal, TypeAlias, cast

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic.config import JsonDict

from bearagent.domain._base import DomainModel, JsonObject, JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId

STREAM_PROTOCOL_VERSION: Final = 4
"""1: the first published events. 2: optional `run_id` and `seq` on every event, `activity_id`/`offset` on `token`.
3: `approval.requested` and `approval.resolved`."""

MAX_STREAM_TEXT_CHARS = 4 * 1_048_576
MAX_STREAM_LINE_CHARS = 16 * 1_048_576
MAX_STREAM_INT: Final = 2**53 - 1
"""The largest integer field value (`seq`, `index`, `offset`, `steps`): the largest a JavaScript number holds exactly."""
MAX_STREAM_JSON_DEPTH: Final = 64
"""How deeply a stream event line may nest (the event object is level 1), in any field, known or not."""

APPROVAL_ID_PATTERN: Final = r"^[A-Za-z0-9_-]+$"
"""What an approval id is made of (the run events' rule): it goes into a URL path as it is."""
ApprovalDecision: TypeAlias = Literal["allow_once", "allow_always", "deny"]

_UUID_FORM = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


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

    seq: int | None = Field(default=None, ge=1, le=MAX_STREAM_INT)

    @field_validator("run_id", "parent_run_id", mode="before", check_fields=False)
    @classmethod
    def _uuid_on_the_wire(cls, value: object) -> object:
        # `uuid.UUID` also takes braces, a `urn:uuid:` prefix or no hyphens and rewrites them; on the wire a run id
        # is only the 8-4-4-4-12 form (any case), so both decoders accept the same strings and return the same value.
        if isinstance(value, str) and not _UUID_FORM.fullmatch(value):
            raise ValueError("a run id must be a UUID string in the 8-4-4-4-12 form")
        return value


class RunStartedEvent(StreamEventModel):
    type: Literal["run.started"] = "run.started"
    run_id: RunId


class StepEvent(StreamEventModel):
    """A new loop step begins: `kind` says whether it ends in tool calls or the final answer."""

    type: Literal["step"] = "step"
    index: int = Field(ge=0, le=MAX_STREAM_INT)
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
    offset: int | None = Field(default=None, ge=0, le=MAX_STREAM_INT)


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
    steps: int = Field(ge=0, le=MAX_STREAM_INT)


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


class ApprovalRequestedEvent(StreamEventModel):
    """A tool call waits for someone's answer (the run is `waiting` until `approval.resolved`, or ends): answer it
    with `POST /v1/runs/{run_id}/approvals/{approval_id}` or `bearagent approvals answer`. `tool_call_id` is the `id`
    of the call's `tool_call` event; `tool_name` the name the model used; `reason` why the gate asks;
    `suggested_rule` the permission rule "allow always" would add; `choices` the answers it takes."""

    type: Literal["approval.requested"] = "approval.requested"
    run_id: RunId
    approval_id: str = Field(min_length=1, max_length=64, pattern=APPROVAL_ID_PATTERN)
    tool_call_id: str = Field(min_length=1, max_length=256)
    tool_name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    reason: str = Field(max_length=4_000)
    suggested_rule: str | None = Field(default=None, max_length=1_000)
    choices: tuple[ApprovalDecision, ...] = Field(min_length=1, max_length=3)

    @field_validator("choices", mode="before")
    @classmethod
    def _array_on_the_wire(cls, value: object) -> object:
        # JSON has arrays, not tuples: a strict tuple field would refuse every decoded line.
        return tuple(cast(list[object], value)) if isinstance(value, list) else value


class ApprovalResolvedEvent(StreamEventModel):
    """The answer to `approval.requested` `approval_id`, given once. `answered_by` is who answered (a subject, or
    `terminal`); `message`, when the answer had one, is what the model is told with it. `tool_call_id` is the
    requested call's (absent only if the producer did not see the request)."""

    type: Literal["approval.resolved"] = "approval.resolved"
    run_id: RunId
    approval_id: str = Field(min_length=1, max_length=64, pattern=APPROVAL_ID_PATTERN)
    decision: ApprovalDecision
    answered_by: str = Field(min_length=1, max_length=256)
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=256)
    message: str | None = Field(default=None, max_length=2_000)


class ElicitationRequestedEvent(StreamEventModel):
    """An MCP server asks the user a question in the middle of tool call `tool_call_id` (MCP elicitation); the call
    waits for an answer: `POST /v1/runs/{run_id}/approvals/{elicitation_id}` with `action` (accept, decline,
    cancel) and, to accept a form, `content` fitting `requested_schema`; or `bearagent approvals answer`."""

    type: Literal["elicitation.requested"] = "elicitation.requested"
    run_id: RunId
    elicitation_id: str = Field(min_length=1, max_length=64, pattern=APPROVAL_ID_PATTERN)
    tool_call_id: str | None = Field(default=None, min_length=1, max_length=256)
    server: str = Field(min_length=1, max_length=256)
    message: str = Field(max_length=2_000)
    mode: Literal["form", "url"] = "form"
    requested_schema: JsonObject | None = None
    url: str | None = Field(default=None, max_length=2_000)


class ElicitationResolvedEvent(StreamEventModel):
    """The answer to `elicitation.requested` `elicitation_id`: `action`, who gave it (`nobody`: the wait ran out)."""

    type: Literal["elicitation.resolved"] = "elicitation.resolved"
    run_id: RunId
    elicitation_id: str = Field(min_length=1, max_length=64, pattern=APPROVAL_ID_PATTERN)
    action: Literal["accept", "decline", "cancel"]
    answered_by: str = Field(min_length=1, max_length=256)


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
    | SubagentFinishedEvent
    | ApprovalRequestedEvent
    | ApprovalResolvedEvent
    | ElicitationRequestedEvent
    | ElicitationResolvedEvent,
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
    "approval.requested": ApprovalRequestedEvent,
    "approval.resolved": ApprovalResolvedEvent,
    "elicitation.requested": ElicitationRequestedEvent,
    "elicitation.resolved": ElicitationResolvedEvent,
}
STREAM_EVENT_TYPES: Final[tuple[str, ...]] = tuple(STREAM_EVENT_MODELS)


@functools.cache
def _adapter() -> TypeAdapter[StreamEvent]:
    """The union's validator, built on first use: a run only encodes stream events, so building it at import
    (~5 ms of schema build) would be paid by every `bearagent run` for nothing (issue 37)."""
    return TypeAdapter(StreamEvent)


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
    problem = _wire_problem(mapping)
    if problem is not None:
        field, message = problem
        raise _decode_error(
            f"invalid {event_type!r} stream event: field {field}: {message}" if field else message,
            "see docs/stream-protocol.md for what a stream event line may hold",
        )
    # Plain dicts and lists all the way down (a read-only mapping from Python code is as good as JSON's dict).
    plain = thaw_json_mapping(cast(Mapping[str, JsonValue], mapping))
    try:
        return _adapter().validate_python(plain)
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
        obj: object = json.loads(line, parse_constant=_not_json, parse_int=_json_int)
    except RecursionError:  # json.loads gives up near 500 levels; the limit is far lower, so it says the same
        raise _decode_error(_TOO_DEEP, "see docs/stream-protocol.md for what a stream event line may hold") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, _not_json
        raise _decode_error(
            f"stream event line is not valid JSON: {exc}",
            "each line of --stream-json output is one complete JSON object",
        ) from exc
    return parse_stream_event(obj)


def _not_json(name: str) -> object:
    # Python's json module reads NaN, Infinity and -Infinity; JSON has no such literals (and JSON.parse refuses them).
    raise ValueError(f"{name} is not JSON")


def _json_int(text: str) -> int | float:
    # An integer literal longer than any finite double becomes float("inf") (as JSON.parse makes it Infinity), which
    # `_wire_problem` refuses, instead of int()'s ValueError beyond 4300 digits.
    return int(text) if len(text) <= 400 else float(text)


_MAX_DOUBLE = sys.float_info.max
_TOO_DEEP = f"stream event line nests deeper than {MAX_STREAM_JSON_DEPTH} levels"


def _wire_problem(event: Mapping[object, object]) -> tuple[str | None, str] | None:
    """What no stream event may hold, in any field (known or ignored): nesting deeper than MAX_STREAM_JSON_DEPTH, a
    number that is not a finite IEEE-754 double, a string with a lone surrogate (not Unicode, not encodable as
    UTF-8). These are the limits of JSON every consumer can read (RFC 8259 §6 and §8.2); checking them everywhere
    keeps Python's verdict and the TypeScript decoder's the same. Returns (top-level field, problem), with no field
    for nesting (a line too deep for the json module has no field to name either), or None."""
    for key in event:
        if isinstance(key, str) and _SURROGATE.search(key):
            return "event", "a field name with a lone surrogate is not Unicode"
    stack: list[tuple[str, object, int]] = [(str(key), value, 2) for key, value in event.items()]
    while stack:
        field, value, depth = stack.pop()
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if not -_MAX_DOUBLE <= value <= _MAX_DOUBLE:
                return field, "a number out of the range of a double"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return field, "a number out of the range of a double"
        elif isinstance(value, str):
            if _SURROGATE.search(value):
                return field, "a string with a lone surrogate is not Unicode"
        elif isinstance(value, Mapping | list | tuple):
            if depth > MAX_STREAM_JSON_DEPTH:
                return None, _TOO_DEEP
            if isinstance(value, Mapping):
                items = cast(Mapping[object, object], value)
                for key in items:
                    if isinstance(key, str) and _SURROGATE.search(key):
                        return field, "a string with a lone surrogate is not Unicode"
                stack.extend((field, item, depth + 1) for item in items.values())
            else:
                stack.extend((field, item, depth + 1) for item in cast(list[object] | tuple[object, ...], value))
    return None


def encode_stream_event(event: StreamEventModel) -> str:
    """One event as a compact JSON line (no trailing newline); `parse_stream_event_json` reads it back. Optional
    fields that are not set are left out (no field of the protocol is ever `null` on the wire)."""
    return event.model_dump_json(exclude_none=True)


def stream_json_schema() -> dict[str, object]:
    """The JSON Schema of the stream union (committed as schemas/stream.schema.json)."""
    schema = _adapter().json_schema()
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

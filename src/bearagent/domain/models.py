"""The model channel: a bounded `ModelRequest` in, a stream of `ModelEvent`s out."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Literal, Self, TypeAlias

from pydantic import Field

from bearagent.domain._base import DomainModel, JsonObject, JsonValue
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message

StopReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_output_tokens", "content_filter", "refusal", "stop_sequence", "other"
]


MAX_TOOL_NAME_CHARS = 128
"""The longest name a tool can have; a longer name from the model names no tool."""


class ToolDescriptor(DomainModel):
    """A tool as offered to the model: projected name, description and JSON Schema of its arguments."""

    name: str = Field(min_length=1, max_length=MAX_TOOL_NAME_CHARS)
    description: str = Field(max_length=16_384)
    input_schema: JsonObject


MAX_REQUEST_MESSAGES = 100_000
MAX_REFUSAL_CHARS = 16_384
MAX_DELTA_CHARS = 1_048_576
"""The most text one `TextDelta` carries; longer text is sent as several deltas (`text_deltas`)."""
MAX_TURN_TEXT_CHARS = 1_048_576
"""The most text one model turn may hold (what `ModelCallCompleted.text` records); a longer turn fails the run."""
MAX_TOOL_CALLS_PER_TURN = 512
"""The most tool calls one model turn may ask for (what `ModelCallCompleted.tool_calls` records); more fail the
run."""
MAX_RECORDED_NAME_CHARS = 256
"""The longest tool name (and provider id) a tool call records; adapters cut longer ones to this length."""
MAX_INVALID_ARGUMENTS_CHARS = 2_000
MAX_CALL_TIMEOUT_MS = 3_600_000
"""The longest deadline a model call can have (`ModelRequest.timeout_ms`): one hour."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """`text` with every lone UTF-16 surrogate (U+D800-U+DFFF) replaced by U+FFFD. A JSON `"\\ud800"` escape from
    a provider decodes to one; no UTF-8 encoder, JSON writer or database accepts it, so model output is cleaned
    before it becomes a domain object. Costs one `isascii()` for ASCII text."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and _LONE_SURROGATE.search(text) is not None


def bounded_text(text: str, limit: int) -> str:
    """Valid Unicode, cut to `limit` characters (the last one an ellipsis when cut)."""
    text = valid_unicode(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ModelRequest(DomainModel):
    model: str = Field(min_length=1, max_length=256)
    messages: tuple[Message, ...] = Field(min_length=1, max_length=MAX_REQUEST_MESSAGES)
    tools: tuple[ToolDescriptor, ...] = Field(default=(), max_length=512)
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    timeout_ms: int = Field(default=120_000, ge=1, le=MAX_CALL_TIMEOUT_MS)
    """The deadline of the whole call, streaming included. The model entry's own limits (time to the first event,
    silence between events, `max_stream_s`) are the provider's; the runtime sets this to `max_stream_s`, else to
    `MAX_CALL_TIMEOUT_MS`."""
    prompt_version: str | None = Field(default=None, max_length=128)
    conversation_calls: int | None = Field(default=None, ge=0, le=100_000_000)
    """How many model calls this conversation's provider was sent before this one, as the run log records them
    (earlier runs of the session, failed calls and retries included). Set on the first call of a run that continues
    a conversation (a later run of a session, a resumed run, a `/compact`), None on every other call. A provider that
    keeps no state between calls ignores it; a deterministic one (the scripted model) continues from it, so its
    place comes from the log rather than from the memory of the process that started the conversation."""

    def with_messages(self, messages: Sequence[Message]) -> ModelRequest:
        """A copy with `messages` replaced. The messages are already validated `Message` models, so only the list
        bounds are checked: building the next request costs nothing per message of history."""
        if not 1 <= len(messages) <= MAX_REQUEST_MESSAGES:
            raise ValueError(f"a model request needs 1 to {MAX_REQUEST_MESSAGES} messages, got {len(messages)}")
        for message in messages:
            if not isinstance(message, Message):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"messages must be Message models, got {type(message).__name__}")
        return self.model_copy(update={"messages": tuple(messages)})


class TextDelta(DomainModel):
    kind: Literal["text_delta"] = "text_delta"
    text: str = Field(max_length=MAX_DELTA_CHARS)


def text_deltas(text: str) -> Iterator[TextDelta]:
    """`text` from a model as deltas: lone surrogates replaced (`valid_unicode`), at most `MAX_DELTA_CHARS` each."""
    text = valid_unicode(text)
    for start in range(0, len(text), MAX_DELTA_CHARS):
        yield TextDelta(text=text[start : start + MAX_DELTA_CHARS])


class ModelToolCall(DomainModel):
    """One complete tool call. When the model's argument text was not a JSON object, `arguments` is empty and
    `invalid_arguments` says why: the runtime turns that into a failed tool call the model can read."""

    kind: Literal["tool_call"] = "tool_call"
    tool_call_id: ToolCallId
    provider_call_id: str | None = Field(default=None, max_length=256)
    name: str = Field(min_length=1, max_length=MAX_RECORDED_NAME_CHARS)
    arguments: JsonObject
    invalid_arguments: str | None = Field(default=None, max_length=MAX_INVALID_ARGUMENTS_CHARS)

    @classmethod
    def from_model(
        cls,
        tool_call_id: ToolCallId,
        provider_call_id: str | None,
        name: str,
        arguments: Mapping[str, JsonValue],
        invalid_arguments: str | None = None,
    ) -> Self:
        """A call as a model sent it, fitted into the bounds: lone surrogates replaced in the name and id, both cut
        to `MAX_RECORDED_NAME_CHARS`, an empty name named `unnamed_tool`. The runtime judges what remains (a name
        longer than any tool's, arguments that are not valid Unicode or too large for the turn)."""
        name = valid_unicode(name)[:MAX_RECORDED_NAME_CHARS] or "unnamed_tool"
        call_id = valid_unicode(provider_call_id)[:MAX_RECORDED_NAME_CHARS] if provider_call_id else None
        invalid = bounded_text(invalid_arguments, MAX_INVALID_ARGUMENTS_CHARS) if invalid_arguments else None
        return cls(
            tool_call_id=tool_call_id,
            provider_call_id=call_id,
            name=name,
            arguments=arguments,
            invalid_arguments=invalid,
        )


class ModelCompleted(DomainModel):
    kind: Literal["completed"] = "completed"
    provider_request_id: str | None = Field(default=None, max_length=256)
    model: str | None = Field(default=None, max_length=256)
    stop_reason: StopReason
    usage: TokenUsage = Field(default_factory=TokenUsage)
    refusal: str | None = Field(default=None, max_length=MAX_REFUSAL_CHARS)


ModelEvent: TypeAlias = Annotated[TextDelta | ModelToolCall | ModelCompleted, Field(discriminator="kind")]

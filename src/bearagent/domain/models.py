"""The model channel: a bounded `ModelRequest` in, a stream of `ModelEvent`s out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from bearagent.domain._base import DomainModel, JsonObject
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message

StopReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_output_tokens", "content_filter", "refusal", "stop_sequence", "other"
]


class ToolDescriptor(DomainModel):
    """A tool as offered to the model: projected name, description and JSON Schema of its arguments."""

    name: str = Field(min_length=1, max_length=128)
    description: str = Field(max_length=16_384)
    input_schema: JsonObject


MAX_REQUEST_MESSAGES = 100_000
MAX_REFUSAL_CHARS = 16_384


class ModelRequest(DomainModel):
    model: str = Field(min_length=1, max_length=256)
    messages: tuple[Message, ...] = Field(min_length=1, max_length=MAX_REQUEST_MESSAGES)
    tools: tuple[ToolDescriptor, ...] = Field(default=(), max_length=512)
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    timeout_ms: int = Field(default=120_000, ge=1, le=3_600_000)
    prompt_version: str | None = Field(default=None, max_length=128)

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
    text: str = Field(max_length=1_048_576)


class ModelToolCall(DomainModel):
    """One complete tool call. When the model's argument text was not a JSON object, `arguments` is empty and
    `invalid_arguments` says why: the runtime turns that into a failed tool call the model can read."""

    kind: Literal["tool_call"] = "tool_call"
    tool_call_id: ToolCallId
    provider_call_id: str | None = Field(default=None, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    invalid_arguments: str | None = Field(default=None, max_length=2_000)


class ModelCompleted(DomainModel):
    kind: Literal["completed"] = "completed"
    provider_request_id: str | None = Field(default=None, max_length=256)
    model: str | None = Field(default=None, max_length=256)
    stop_reason: StopReason
    usage: TokenUsage = Field(default_factory=TokenUsage)
    refusal: str | None = Field(default=None, max_length=MAX_REFUSAL_CHARS)


ModelEvent: TypeAlias = Annotated[TextDelta | ModelToolCall | ModelCompleted, Field(discriminator="kind")]

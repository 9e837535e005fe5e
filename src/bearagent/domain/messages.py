"""Conversation messages: a role and its parts, with the role rules enforced at construction.

| role               | allowed parts                                  |
|--------------------|------------------------------------------------|
| system, user       | non-empty text only                            |
| assistant          | text and tool calls, never a tool result       |
| tool               | exactly one tool result                        |
"""

from __future__ import annotations

from typing import Annotated, Literal, Self, TypeAlias

from pydantic import Field, model_validator

from bearagent.domain._base import DomainModel, JsonObject
from bearagent.domain.ids import ToolCallId

MAX_TEXT_CHARS = 1_048_576
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


class TextPart(DomainModel):
    kind: Literal["text"] = "text"
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)


class ToolCallPart(DomainModel):
    """A tool call the model asked for. `tool_call_id` is ours and stable; `provider_call_id` is the provider's."""

    kind: Literal["tool_call"] = "tool_call"
    tool_call_id: ToolCallId
    provider_call_id: str | None = Field(default=None, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject


class ToolResultPart(DomainModel):
    """The bounded result of one tool call, as the model will read it."""

    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: ToolCallId
    provider_call_id: str | None = Field(default=None, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    content: str = Field(max_length=MAX_TEXT_CHARS)
    is_error: bool = False


MessagePart: TypeAlias = Annotated[TextPart | ToolCallPart | ToolResultPart, Field(discriminator="kind")]


class Message(DomainModel):
    role: Role
    parts: tuple[MessagePart, ...] = Field(min_length=1, max_length=1_024)

    @model_validator(mode="after")
    def validate_role_parts(self) -> Self:
        if self.role in ("system", "user"):
            for part in self.parts:
                if not isinstance(part, TextPart):
                    raise ValueError(f"a {self.role} message may only contain text, got {part.kind}")
        elif self.role == "assistant":
            seen: set[ToolCallId] = set()
            for part in self.parts:
                if isinstance(part, ToolResultPart):
                    raise ValueError("an assistant message may not contain a tool result")
                if isinstance(part, ToolCallPart):
                    if part.tool_call_id in seen:
                        raise ValueError(f"duplicate tool_call_id {part.tool_call_id} in one assistant message")
                    seen.add(part.tool_call_id)
        else:
            if len(self.parts) != 1 or not isinstance(self.parts[0], ToolResultPart):
                raise ValueError("a tool message must contain exactly one tool result")
        return self

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", parts=(TextPart(text=text),))

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCallPart, ...] = ()) -> Message:
        parts: list[TextPart | ToolCallPart] = [TextPart(text=text)] if text else []
        parts.extend(tool_calls)
        return cls(role="assistant", parts=tuple(parts))

    @classmethod
    def tool(cls, result: ToolResultPart) -> Message:
        return cls(role="tool", parts=(result,))

    @property
    def text(self) -> str:
        """All text parts joined (empty when there are none)."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(part for part in self.parts if isinstance(part, ToolCallPart))

"""Tool boundary types: what a tool is (`ToolSpec`), a call (`ToolRequest`), and its outcome (`ToolResult`)."""

from __future__ import annotations

import re
from typing import Literal, Self, TypeAlias

from pydantic import Field, field_validator, model_validator

from bearagent.domain._base import DomainModel, JsonObject
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ArtifactId, ToolCallId

SideEffect: TypeAlias = Literal["read_only", "write", "execute", "network"]
ToolSource: TypeAlias = Literal["native", "plugin", "mcp", "action", "skill", "runtime"]
TOOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}$")
MAX_TOOL_CONTENT_CHARS = 1_048_576


class ToolSpec(DomainModel):
    """What the model sees of a tool, plus the limits and side-effect class the gate enforces."""

    name: str = Field(min_length=1, max_length=128)
    description: str = Field(max_length=16_384)
    input_schema: JsonObject
    side_effect: SideEffect = "read_only"
    version: str = Field(default="1", min_length=1, max_length=64)
    timeout_ms: int = Field(default=120_000, ge=1, le=3_600_000)
    max_input_bytes: int = Field(default=1_048_576, ge=1)
    max_output_chars: int = Field(default=100_000, ge=1, le=MAX_TOOL_CONTENT_CHARS)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not TOOL_NAME_RE.match(value):
            raise ValueError(f"tool name {value!r} must match {TOOL_NAME_RE.pattern}")
        return value


class ToolRequest(DomainModel):
    """A tool call on its way through the gate."""

    tool_call_id: ToolCallId
    name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject


class Artifact(DomainModel):
    """A file a tool wrote: where, how big, and its content hash (the content itself is not repeated)."""

    artifact_id: ArtifactId
    path: str = Field(min_length=1, max_length=4_096)
    kind: Literal["text", "binary", "image"] = "text"
    encoding: str | None = Field(default="utf-8", max_length=32)
    media_type: str | None = Field(default=None, max_length=128)
    size_bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ToolResult(DomainModel):
    """The outcome of one tool call. `content` is what the model reads; `data` is structured output."""

    tool_call_id: ToolCallId
    tool_name: str = Field(min_length=1, max_length=256)
    status: Literal["succeeded", "failed"]
    content: str = Field(default="", max_length=MAX_TOOL_CONTENT_CHARS)
    data: JsonObject | None = None
    error: ErrorInfo | None = None
    artifacts: tuple[Artifact, ...] = Field(default=(), max_length=64)
    truncated: bool = False
    duration_ms: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _status_matches_error(self) -> Self:
        if self.status == "succeeded" and self.error is not None:
            raise ValueError("a succeeded tool result carries no error")
        if self.status == "failed" and self.error is None:
            raise ValueError("a failed tool result must carry an error")
        return self

    @property
    def is_error(self) -> bool:
        return self.status == "failed"

    @classmethod
    def failure(cls, request: ToolRequest, error: ErrorInfo, *, duration_ms: int = 0) -> ToolResult:
        """A failed result whose content is the error message, so the model can read what went wrong."""
        return cls(
            tool_call_id=request.tool_call_id,
            tool_name=request.name,
            status="failed",
            content=error.message,
            error=error,
            duration_ms=duration_ms,
        )

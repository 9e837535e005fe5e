"""The JSON object a hook may print (Claude Code's fields), as pydantic models: apart from `protocol.py`, which every
session's hook dispatcher imports, so that they are built only when a hook first answers in JSON (issue 37: a run
without hooks does not define them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from bearagent.domain._base import JsonValue

# defer_build, as on `DomainModel` (issue 29): the schema is built when a hook's output is first parsed.


class PermissionRequestAnswer(BaseModel):
    """PermissionRequest's `hookSpecificOutput.decision` (Claude Code's shape)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    behavior: Literal["allow", "deny"]
    updatedInput: dict[str, JsonValue] | None = None
    updatedPermissions: list[JsonValue] | None = None
    message: StrictStr | None = None
    interrupt: StrictBool = False


class HookSpecificOutput(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    hookEventName: StrictStr | None = None
    permissionDecision: Literal["allow", "deny", "ask", "defer"] | None = None
    permissionDecisionReason: StrictStr | None = None
    updatedInput: dict[str, JsonValue] | None = None
    updatedRequest: dict[str, JsonValue] | None = None
    updatedToolOutput: JsonValue = None
    additionalContext: StrictStr | None = None
    decision: PermissionRequestAnswer | None = None
    action: Literal["accept", "decline", "cancel"] | None = None
    """Elicitation / ElicitationResult: the answer to the MCP server's question (read by `hooks/elicitation.py`)."""
    content: dict[str, JsonValue] | None = None


class HookJsonOutput(BaseModel):
    """The JSON object a hook may print on exit 0 (Claude Code's fields). Unknown keys are tolerated (Claude Code
    has many more) and reported as ignored."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True, defer_build=True)

    continue_: StrictBool = Field(default=True, alias="continue")
    stopReason: StrictStr | None = None
    systemMessage: StrictStr | None = None
    suppressOutput: StrictBool = False
    decision: Literal["block", "approve"] | None = None
    reason: StrictStr | None = None
    hookSpecificOutput: HookSpecificOutput | None = None

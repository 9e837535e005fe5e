"""What a hook handler reads: the stdin JSON (or the POST body, or a Python handler's argument).

It is Claude Code's JSON, field for field, so a script written for Claude Code runs unchanged: the common fields
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `permission_mode`) are always present, plus our
`run_id` and `agent_name` (null outside a run / agent), plus the per-event fields (`EVENT_INPUT_MODELS`).

Tool names are Claude Code's: BearAgent's delegation tool `Task` is `Agent` in `tool_name` (Claude Code renamed
it; `hook_tool_name`), with the same `tool_input` (`subagent_type`, `prompt`, `description`). How a handler's answer
is read is `hooks/protocol.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.models import ModelRequest
from bearagent.domain.specs import HookEventName
from bearagent.domain.tools import ToolResult
from bearagent.hooks.protocol import JsonDict

TOOL_EVENTS: frozenset[str] = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
"""The events about one tool call: their matcher is tested against `tool_name`, and a handler's `if` applies."""

HOOK_TOOL_NAMES: Mapping[str, str] = {"Task": "Agent"}
"""BearAgent tool name -> the name Claude Code sends in `tool_name` (its delegation tool is `Agent` since v2.1.63)."""


def hook_tool_name(tool_name: str) -> str:
    """The `tool_name` a hook receives for a BearAgent tool (`Task` -> `Agent`; every other name as it is)."""
    return HOOK_TOOL_NAMES.get(tool_name, tool_name)


class _WireModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommonInput(_WireModel):
    session_id: str
    transcript_path: str
    cwd: str
    hook_event_name: HookEventName
    permission_mode: str = "default"
    run_id: str | None = None
    agent_name: str | None = None


class SessionStartInput(_WireModel):
    source: Literal["startup", "resume", "clear", "compact"] = "startup"
    model: str | None = None
    agent_type: str | None = None


class SessionEndInput(_WireModel):
    reason: Literal["clear", "logout", "prompt_input_exit", "other"] = "other"


class UserPromptSubmitInput(_WireModel):
    prompt: str


class UserPromptExpansionInput(_WireModel):
    expansion_type: Literal["slash_command", "mcp_prompt"] = "slash_command"
    command_name: str
    command_args: str = ""
    command_source: str
    prompt: str
    """The command as typed (`/name args`)."""


class PreModelRequestInput(_WireModel):
    model_request: JsonDict
    """`ModelRequest` as JSON (`model_request_to_wire`): `{model, messages: [{role, parts: [...]}], tools: [{name,
    description, input_schema}], max_output_tokens, temperature, timeout_ms, prompt_version}`."""


class PreToolUseInput(_WireModel):
    tool_name: str
    tool_input: JsonDict
    tool_use_id: str


class PostToolUseInput(_WireModel):
    tool_name: str
    tool_input: JsonDict
    tool_response: JsonDict
    tool_use_id: str
    duration_ms: int | None = None


class PostToolUseFailureInput(_WireModel):
    tool_name: str
    tool_input: JsonDict
    tool_response: JsonDict
    tool_use_id: str
    error: str
    is_interrupt: bool = False
    duration_ms: int | None = None


class StopInput(_WireModel):
    stop_hook_active: StrictBool = False
    last_assistant_message: str = ""
    background_tasks: list[JsonValue] = Field(default_factory=list[JsonValue])
    session_crons: list[JsonValue] = Field(default_factory=list[JsonValue])


class SubagentStartInput(_WireModel):
    agent_id: str
    agent_type: str


class SubagentStopInput(_WireModel):
    stop_hook_active: StrictBool = False
    agent_id: str
    agent_type: str
    agent_transcript_path: str = ""
    last_assistant_message: str = ""
    background_tasks: list[JsonValue] = Field(default_factory=list[JsonValue])
    session_crons: list[JsonValue] = Field(default_factory=list[JsonValue])


class BatchToolCall(_WireModel):
    tool_name: str
    tool_input: JsonDict
    tool_use_id: str
    tool_response: str
    """The result as the model sees it (Claude Code sends it serialized)."""


class PostToolBatchInput(_WireModel):
    tool_calls: list[BatchToolCall]


class StopFailureInput(_WireModel):
    error: str
    """Claude Code's error kind (the matcher value): `rate_limit`, `overloaded`, `authentication_failed`,
    `invalid_request`, `model_not_found`, `server_error`, `max_output_tokens` or `unknown` (`stop_failure_kind`)."""
    error_details: str | None = None
    last_assistant_message: str = ""


class PreCompactInput(_WireModel):
    trigger: Literal["manual", "auto"]
    custom_instructions: str = ""


class PostCompactInput(_WireModel):
    trigger: Literal["manual", "auto"]
    compact_summary: str


class PermissionRequestInput(_WireModel):
    tool_name: str
    tool_input: JsonDict
    permission_suggestions: list[JsonValue] = Field(default_factory=list[JsonValue])
    """Claude Code's "always allow" options: `[{type: "addRules", rules: [{toolName, ruleContent?}], behavior:
    "allow", destination: "session"}]`, from the rule the prompt would offer. No `tool_use_id`, as in Claude Code."""


class InstructionsLoadedInput(_WireModel):
    file_path: str
    """The absolute path of the instructions file (or of a file it imports)."""
    memory_type: Literal["Project"] = "Project"
    load_reason: Literal["session_start", "include"]
    parent_file_path: str | None = None
    """For an imported file (`include`): the instructions file the import chain starts at."""


class ElicitationInput(_WireModel):
    mcp_server_name: str
    message: str
    mode: Literal["form", "url"] = "form"
    url: str | None = None
    elicitation_id: str | None = None
    requested_schema: JsonDict | None = None


class ElicitationResultInput(_WireModel):
    mcp_server_name: str
    action: Literal["accept", "decline", "cancel"]
    content: JsonDict | None = None
    mode: Literal["form", "url"] = "form"
    elicitation_id: str | None = None


class NotificationInput(_WireModel):
    message: str
    title: str | None = None
    notification_type: str


EVENT_INPUT_MODELS: Mapping[str, type[_WireModel]] = {
    "SessionStart": SessionStartInput,
    "SessionEnd": SessionEndInput,
    "UserPromptSubmit": UserPromptSubmitInput,
    "PreModelRequest": PreModelRequestInput,
    "PreToolUse": PreToolUseInput,
    "PostToolUse": PostToolUseInput,
    "PostToolUseFailure": PostToolUseFailureInput,
    "Stop": StopInput,
    "SubagentStart": SubagentStartInput,
    "SubagentStop": SubagentStopInput,
    "PostToolBatch": PostToolBatchInput,
    "StopFailure": StopFailureInput,
    "Notification": NotificationInput,
    "PreCompact": PreCompactInput,
    "PostCompact": PostCompactInput,
    "PermissionRequest": PermissionRequestInput,
    "UserPromptExpansion": UserPromptExpansionInput,
    "InstructionsLoaded": InstructionsLoadedInput,
    "Elicitation": ElicitationInput,
    "ElicitationResult": ElicitationResultInput,
}


def build_hook_input(common: CommonInput, payload: Mapping[str, JsonValue]) -> JsonDict:
    """The full stdin JSON: common fields + the event's fields, validated against the event's model.

    Raises `ValueError` naming the field when the payload does not fit the event (a runtime bug, not user input).
    Optional per-event fields that are None are left out (Claude Code omits them too).
    """
    model = EVENT_INPUT_MODELS[common.hook_event_name]
    try:
        event_part = model.model_validate(dict(payload))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise ValueError(f"{common.hook_event_name} hook payload: {problems}") from None
    out: JsonDict = cast(JsonDict, common.model_dump(mode="json"))
    for key, value in cast(JsonDict, event_part.model_dump(mode="json")).items():
        if value is None and key not in ("model_request",):
            continue
        out[key] = value
    return out


def match_target(event: str, payload: Mapping[str, JsonValue]) -> str | None:
    """What a matcher is tested against for this event; None = the event has no matcher support (all match)."""
    key = {
        "PreToolUse": "tool_name",
        "PostToolUse": "tool_name",
        "PostToolUseFailure": "tool_name",
        "PermissionRequest": "tool_name",
        "UserPromptExpansion": "command_name",
        "InstructionsLoaded": "load_reason",
        "SessionStart": "source",
        "SessionEnd": "reason",
        "SubagentStart": "agent_type",
        "SubagentStop": "agent_type",
        "StopFailure": "error",
        "Notification": "notification_type",
        "PreCompact": "trigger",
        "PostCompact": "trigger",
        "Elicitation": "mcp_server_name",
        "ElicitationResult": "mcp_server_name",
    }.get(event)
    if event == "PreModelRequest":
        request = payload.get("model_request")
        model = request.get("model") if isinstance(request, Mapping) else None
        return model if isinstance(model, str) else None
    if key is None:
        return None
    value = payload.get(key)
    if value is None:
        defaults = {"source": "startup", "reason": "other"}
        return defaults.get(key)
    return value if isinstance(value, str) else None


_STOP_FAILURE_KINDS: Mapping[str, str] = {
    "rate_limit": "rate_limit",
    "overloaded": "overloaded",
    "authentication": "authentication_failed",
    "quota": "billing_error",
    "invalid_request": "invalid_request",
    "context_overflow": "invalid_request",
    "server": "server_error",
    "max_output_tokens": "max_output_tokens",
}


def stop_failure_kind(category: str, code: str) -> str:
    """StopFailure's `error` (Claude Code's kinds) for a BearAgent error category; `unknown` for the failures Claude
    Code has no name for (a budget, a tool, a hook...). `error_details` carries BearAgent's own `category.code`."""
    if category == "not_found" and "model" in code:
        return "model_not_found"
    return _STOP_FAILURE_KINDS.get(category, "unknown")


def model_request_to_wire(request: ModelRequest) -> JsonDict:
    return cast(JsonDict, request.model_dump(mode="json"))


def model_request_from_wire(value: Mapping[str, JsonValue]) -> ModelRequest:
    """Validate a hook's `updatedRequest`; raises `ValueError` naming the first bad field."""
    try:
        return ModelRequest.model_validate(dict(value))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "updatedRequest"
        raise ValueError(f"updatedRequest.{where}: {first['msg']}") from None


def tool_response_from_result(tool_name: str, result: ToolResult) -> JsonDict:
    """`tool_response`, always a JSON object. The tool's structured `data` when it has some (plus `content`), else
    `{content}`; for `Bash` always `{stdout, stderr, exit_code, interrupted}` as Claude Code scripts expect."""
    response: JsonDict = thaw_json_mapping(result.data) if result.data is not None else {}
    response.setdefault("content", result.content)
    if result.error is not None:
        response.setdefault("error", result.error.message)
    if tool_name == "Bash":
        response.setdefault("stdout", result.content)
        response.setdefault("stderr", "")
        response.setdefault("exit_code", 0 if result.status == "succeeded" else 1)
        response.setdefault("interrupted", result.error is not None and result.error.code.endswith("timeout"))
    return response

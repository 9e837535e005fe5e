"""The hook side of the tool gate: PreToolUse before a call, PostToolUse / PostToolUseFailure after it. Hooks see
tools by Claude Code's names (`Task` is `Agent`: `hooks.hook_input.hook_tool_name`)."""

from __future__ import annotations

from bearagent.domain._base import JsonValue, frozen_json, thaw_json_mapping
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.hooks.dispatcher import HookDispatcher, HookOutcome
from bearagent.hooks.hook_input import hook_tool_name, tool_response_from_result
from bearagent.ports import PermissionAnswer, PostToolDecision, PreToolDecision, ToolContext


def _messages(outcome: HookOutcome) -> str | None:
    return "\n".join(outcome.system_messages) or None


def _mode(context: ToolContext) -> str | None:
    mode = context.settings.get("permission_mode")
    return mode if isinstance(mode, str) else None


class HookToolInterceptor:
    """Implements `ports.ToolInterceptor` over a `HookDispatcher`. `tool_input` is the prepared arguments;
    `tool_use_id` is our tool call id; `run_id` / `agent_name` come from the `ToolContext`, and `permission_mode`
    from `ToolContext.settings["permission_mode"]` when set (else the session's)."""

    def __init__(self, dispatcher: HookDispatcher) -> None:
        self._dispatcher = dispatcher

    async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision:
        outcome = await self._dispatcher.fire(
            "PreToolUse",
            {
                "tool_name": hook_tool_name(request.name),
                "tool_input": thaw_json_mapping(request.arguments),
                "tool_use_id": str(request.tool_call_id),
            },
            run_id=str(context.run_id) if context.run_id else None,
            agent_name=context.agent_name,
            permission_mode=_mode(context),
        )
        if not outcome.continue_:
            return PreToolDecision(
                block=True,
                reason=outcome.stop_reason,
                stop_reason=outcome.stop_reason,
                additional_context=outcome.additional_context,
                system_message=_messages(outcome),
            )
        updated = frozen_json(outcome.updated_input) if outcome.updated_input is not None else None
        reason = outcome.block_reason if outcome.blocked else outcome.permission_reason
        return PreToolDecision(
            permission=outcome.permission,
            reason=reason,
            block=outcome.blocked,
            updated_arguments=updated,
            additional_context=outcome.additional_context,
            system_message=_messages(outcome),
        )

    async def permission_request(
        self, request: ToolRequest, spec: ToolSpec, context: ToolContext, suggested_rule: str
    ) -> PermissionAnswer:
        """PermissionRequest: the call is about to be asked (a person, or a non-interactive denial). A hook's
        `decision.behavior` answers it instead; `continue: false` (or a fail-closed failure) denies it."""
        if not self._dispatcher.has_hooks("PermissionRequest"):
            return PermissionAnswer()
        outcome = await self._dispatcher.fire(
            "PermissionRequest",
            {
                "tool_name": hook_tool_name(request.name),
                "tool_input": thaw_json_mapping(request.arguments),
                "permission_suggestions": [_suggestion(suggested_rule)],
            },
            run_id=str(context.run_id) if context.run_id else None,
            agent_name=context.agent_name,
            permission_mode=_mode(context),
        )
        messages = _messages(outcome)
        if not outcome.continue_ or outcome.blocked:
            reason = outcome.stop_reason if not outcome.continue_ else outcome.block_reason
            return PermissionAnswer(behavior="deny", message=reason, system_message=messages)
        if outcome.permission == "deny":
            return PermissionAnswer(behavior="deny", message=outcome.permission_reason, system_message=messages)
        if outcome.permission == "allow":
            updated = frozen_json(outcome.updated_input) if outcome.updated_input is not None else None
            return PermissionAnswer(
                behavior="allow", message=outcome.permission_reason, updated_arguments=updated, system_message=messages
            )
        return PermissionAnswer(system_message=messages)

    async def after_tool(
        self, request: ToolRequest, spec: ToolSpec, result: ToolResult, context: ToolContext
    ) -> PostToolDecision:
        payload: dict[str, JsonValue] = {
            "tool_name": hook_tool_name(request.name),
            "tool_input": thaw_json_mapping(request.arguments),
            "tool_response": tool_response_from_result(request.name, result),
            "tool_use_id": str(request.tool_call_id),
            "duration_ms": result.duration_ms,
        }
        event = "PostToolUse"
        if result.status == "failed":
            event = "PostToolUseFailure"
            payload["error"] = result.error.message if result.error else result.content
            payload["is_interrupt"] = result.error is not None and result.error.category == "cancelled"
        outcome = await self._dispatcher.fire(
            event,
            payload,
            run_id=str(context.run_id) if context.run_id else None,
            agent_name=context.agent_name,
            permission_mode=_mode(context),
        )
        return PostToolDecision(
            block_reason=outcome.block_reason if outcome.blocked else None,
            additional_context=outcome.additional_context,
            stop_reason=None if outcome.continue_ else outcome.stop_reason,
            system_message=_messages(outcome),
            updated_output=outcome.updated_output,
        )


def _suggestion(rule: str) -> JsonValue:
    """Claude Code's `permission_suggestions` entry for the rule "allow always" would add (`Bash(git *)`)."""
    name, paren, rest = rule.partition("(")
    entry: dict[str, JsonValue] = {"toolName": hook_tool_name(name.strip())}
    if paren and rest.endswith(")"):
        entry["ruleContent"] = rest[:-1]
    return {"type": "addRules", "rules": [entry], "behavior": "allow", "destination": "session"}

"""The failures the loop decides itself for a tool call, without the gate: a turn's limit, invalid arguments, the
agent-switch limit, a tool this run's --disallowed-tools takes away, an unknown tool. Each says what to do."""

from __future__ import annotations

from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.models import ModelToolCall
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.runtime.loop_state import SWITCH_TOOL, LoopState


def refusal(
    state: LoopState, call: ModelToolCall, request: ToolRequest, limit_error: ErrorInfo | None
) -> ToolResult | None:
    """The failure the loop decides itself, without the gate (None: the call goes to the gate)."""
    plan = state.plan
    if limit_error is not None:
        return ToolResult.failure(request, limit_error)
    if call.invalid_arguments is not None:
        return ToolResult.failure(
            request,
            ErrorInfo.of(
                "validation",
                "invalid_tool_arguments",
                f"the arguments for {call.name} could not be used: {call.invalid_arguments}. "
                "Call the tool again with a valid JSON object.",
            ),
        )
    if request.name == SWITCH_TOOL and state.switch_count >= plan.max_switches:
        return ToolResult.failure(
            request,
            ErrorInfo.of(
                "permission",
                "switch_limit",
                f"this run already switched agents {state.switch_count} time(s), the most agent "
                f"{plan.agent_name}'s policy allows (policy.max_switches: {plan.max_switches}); continue the "
                "task with the current agent",
            ),
        )
    if plan.tools.get(call.name) is None and call.name in plan.taken_by_run:
        return ToolResult.failure(
            request,
            ErrorInfo.of(
                "permission",
                "tool_denied",
                f"{call.name} call denied: this run's --disallowed-tools takes the tool {call.name!r} away. "
                "To allow it, run again without it in --disallowed-tools.",
            ),
        )
    if plan.tools.get(call.name) is None:
        available = name_list(sorted(plan.tools)) or "none"
        return ToolResult.failure(
            request,
            ErrorInfo.of(
                "tool",
                "unknown_tool",
                f"there is no tool named {call.name!r} for agent {plan.agent_name}; available tools: {available}",
            ),
        )
    return None


__all__ = ["refusal"]

"""Hooks: Claude Code-compatible lifecycle hooks (command, http, mcp_tool, prompt, agent and plugin Python
handlers), the dispatcher that runs and merges them, the tool-gate interceptor, and the session transcript (workspace
trust lives in `bearagent.trust`)."""

from bearagent.hooks.dispatcher import (
    DEFAULT_STOP_BLOCK_CAP,
    HandlerOutcome,
    HookDispatcher,
    HookOutcome,
    HookRecorder,
    HookSettings,
    matcher_matches,
)
from bearagent.hooks.hook_input import (
    build_hook_input,
    hook_tool_name,
    model_request_from_wire,
    model_request_to_wire,
    tool_response_from_result,
)
from bearagent.hooks.interceptor import HookToolInterceptor
from bearagent.hooks.python_handlers import python_hook_groups
from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction
from bearagent.hooks.transcript import TranscriptWriter, transcript_path_for

__all__ = [
    "DEFAULT_STOP_BLOCK_CAP",
    "AgentJudge",
    "HandlerOutcome",
    "HookDispatcher",
    "HookOutcome",
    "HookRecorder",
    "HookSettings",
    "HookToolInterceptor",
    "Judge",
    "PythonHookFunction",
    "TranscriptWriter",
    "build_hook_input",
    "hook_tool_name",
    "matcher_matches",
    "model_request_from_wire",
    "model_request_to_wire",
    "python_hook_groups",
    "tool_response_from_result",
    "transcript_path_for",
]

"""Hooks: Claude Code-compatible lifecycle hooks (command, http, mcp_tool, prompt, agent and plugin Python
handlers), the dispatcher that runs and merges them, the tool-gate interceptor, and the session transcript (workspace
trust lives in `bearagent.trust`).

Names are imported on first use (PEP 562): importing one module of the package (a run imports the dispatcher and
the bridge) does not load the handler runners, the hook input models or the interceptor a session without hooks
never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bearagent.hooks.dispatcher import (
        DEFAULT_STOP_BLOCK_CAP,
        HandlerOutcome,
        HookDispatcher,
        HookOutcome,
        HookRecorder,
        HookSettings,
    )
    from bearagent.hooks.hook_input import (
        build_hook_input,
        hook_tool_name,
        model_request_from_wire,
        model_request_to_wire,
        tool_response_from_result,
    )
    from bearagent.hooks.interceptor import HookToolInterceptor
    from bearagent.hooks.matching import matcher_matches
    from bearagent.hooks.python_handlers import python_hook_groups
    from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction
    from bearagent.hooks.transcript import TranscriptWriter, transcript_path_for

_EXPORTS: dict[str, str] = {
    "DEFAULT_STOP_BLOCK_CAP": "bearagent.hooks.dispatcher",
    "HandlerOutcome": "bearagent.hooks.dispatcher",
    "HookDispatcher": "bearagent.hooks.dispatcher",
    "HookOutcome": "bearagent.hooks.dispatcher",
    "HookRecorder": "bearagent.hooks.dispatcher",
    "HookSettings": "bearagent.hooks.dispatcher",
    "build_hook_input": "bearagent.hooks.hook_input",
    "hook_tool_name": "bearagent.hooks.hook_input",
    "model_request_from_wire": "bearagent.hooks.hook_input",
    "model_request_to_wire": "bearagent.hooks.hook_input",
    "tool_response_from_result": "bearagent.hooks.hook_input",
    "HookToolInterceptor": "bearagent.hooks.interceptor",
    "matcher_matches": "bearagent.hooks.matching",
    "python_hook_groups": "bearagent.hooks.python_handlers",
    "AgentJudge": "bearagent.hooks.runners",
    "Judge": "bearagent.hooks.runners",
    "PythonHookFunction": "bearagent.hooks.runners",
    "TranscriptWriter": "bearagent.hooks.transcript",
    "transcript_path_for": "bearagent.hooks.transcript",
}

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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bearagent.hooks' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

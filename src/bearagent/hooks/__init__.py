"""Hooks: Claude Code-compatible lifecycle hooks (command, http, prompt, agent and plugin Python handlers), the
dispatcher that runs and merges them, the tool-gate interceptor, the session transcript, and workspace trust."""

from bearagent.hooks.dispatcher import (
    DEFAULT_STOP_BLOCK_CAP,
    HandlerOutcome,
    HookDispatcher,
    HookOutcome,
    HookRecorder,
    HookSettings,
    matcher_matches,
)
from bearagent.hooks.interceptor import HookToolInterceptor
from bearagent.hooks.protocol import (
    build_hook_input,
    model_request_from_wire,
    model_request_to_wire,
    tool_response_from_result,
)
from bearagent.hooks.python_handlers import python_hook_groups
from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction
from bearagent.hooks.transcript import TranscriptWriter, transcript_path_for
from bearagent.hooks.trust import (
    TrustStore,
    TrustSurface,
    is_trusted,
    require_trust,
    revoke,
    trust,
    trust_status,
    trust_store_path,
    trust_workspace,
)

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
    "TrustStore",
    "TrustSurface",
    "build_hook_input",
    "is_trusted",
    "matcher_matches",
    "model_request_from_wire",
    "model_request_to_wire",
    "python_hook_groups",
    "require_trust",
    "revoke",
    "tool_response_from_result",
    "transcript_path_for",
    "trust",
    "trust_status",
    "trust_store_path",
    "trust_workspace",
]

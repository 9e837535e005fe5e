"""The plugin-author namespace: everything a BearAgent plugin needs, and the only module (with `bearagent`) a plugin
should import from. Anything not exported here or from `bearagent` is private and may change without notice;
`tests/contract/snapshots/public_api.json` pins these names and their signatures.

    from bearagent.plugin import BaseTool, ProviderRegistration, StreamingProvider, hookimpl

- Hooks: `hookimpl`, the registration types (`ProviderRegistration`, `ProviderFactory`, `PythonHookHandler`,
  `HookInput`, `HookOutput`, `EventSink`, `RunExporter`, `RunExport`) and the `register` callbacks' types
  (`RegisterModel`, `RegisterTool`, `RegisterDir`, `RegisterHookHandler`, `RegisterMcpServer`, `RegisterCommand`,
  `RegisterEventSink`, `RegisterRunExporter`).
- Tools: `Tool`, `ToolSpec`, `ToolResult`, `ToolContext`, `Artifact`, `SideEffect`; the kit: `BaseTool`,
  `tool_error`, `open_workspace_file` / `WorkspaceFile`; the `WebSearch` port: `WebSearchBackend`, `SearchHit`.
- Model providers: `ModelProvider`, `ModelRequest`, the model events (`ModelEvent` = `TextDelta` |
  `ModelToolCall` | `ModelCompleted`), `StopReason`, `ToolDescriptor`, `Message` and its parts, `TokenUsage`,
  `ModelEntry`; the kit for streaming SDK/HTTP adapters: `StreamingProvider`, `ModelCall`, `ProviderSettings`,
  `provider_settings`, `ProviderFailure`, `ProviderStreamError`.
- Also: `McpServerSpec`, `Event`, `BearAgentError`, `ErrorInfo`, `ErrorCategory`, `JsonValue`, `JsonMapping`,
  `thaw_json_mapping`, `IdGenerator`, `ToolCallId`, and `PluginHost` (to register a plugin in-process, in tests).

Names are imported on first use, so `from bearagent.plugin import hookimpl` stays as cheap as `import pluggy`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bearagent.domain._base import JsonMapping, JsonValue, thaw_json_mapping
    from bearagent.domain.budgets import TokenUsage
    from bearagent.domain.errors import BearAgentError, ErrorCategory, ErrorInfo
    from bearagent.domain.events import Event
    from bearagent.domain.ids import IdGenerator, ToolCallId
    from bearagent.domain.messages import Message, TextPart, ToolCallPart, ToolResultPart
    from bearagent.domain.models import (
        ModelCompleted,
        ModelEvent,
        ModelRequest,
        ModelToolCall,
        StopReason,
        TextDelta,
        ToolDescriptor,
    )
    from bearagent.domain.specs import McpServerSpec, ModelEntry
    from bearagent.domain.tools import Artifact, SideEffect, ToolResult, ToolSpec
    from bearagent.plugins.contributions import (
        EventSink,
        HookInput,
        HookOutput,
        ProviderFactory,
        ProviderRegistration,
        PythonHookHandler,
        RegisterCommand,
        RegisterDir,
        RegisterEventSink,
        RegisterHookHandler,
        RegisterMcpServer,
        RegisterModel,
        RegisterRunExporter,
        RegisterTool,
        RunExport,
        RunExporter,
    )
    from bearagent.plugins.manager import PluginHost
    from bearagent.plugins.markers import hookimpl
    from bearagent.ports import ModelProvider, Tool, ToolContext
    from bearagent.providers._base import ProviderSettings
    from bearagent.providers.errors import ProviderFailure, ProviderStreamError
    from bearagent.providers.factory import provider_settings
    from bearagent.providers.kit import ModelCall, StreamingProvider
    from bearagent.tools.base import tool_error
    from bearagent.tools.kit import BaseTool, WorkspaceFile, open_workspace_file
    from bearagent.tools.search_hit import SearchHit, WebSearchBackend

_EXPORTS: dict[str, str] = {
    # hooks and registration
    "hookimpl": "bearagent.plugins.markers",
    "EventSink": "bearagent.plugins.contributions",
    "HookInput": "bearagent.plugins.contributions",
    "HookOutput": "bearagent.plugins.contributions",
    "ProviderFactory": "bearagent.plugins.contributions",
    "ProviderRegistration": "bearagent.plugins.contributions",
    "PythonHookHandler": "bearagent.plugins.contributions",
    "RegisterCommand": "bearagent.plugins.contributions",
    "RegisterDir": "bearagent.plugins.contributions",
    "RegisterEventSink": "bearagent.plugins.contributions",
    "RegisterRunExporter": "bearagent.plugins.contributions",
    "RunExport": "bearagent.plugins.contributions",
    "RunExporter": "bearagent.plugins.contributions",
    "RegisterHookHandler": "bearagent.plugins.contributions",
    "RegisterMcpServer": "bearagent.plugins.contributions",
    "RegisterModel": "bearagent.plugins.contributions",
    "RegisterTool": "bearagent.plugins.contributions",
    "PluginHost": "bearagent.plugins.manager",
    # tools
    "Tool": "bearagent.ports",
    "ToolContext": "bearagent.ports",
    "Artifact": "bearagent.domain.tools",
    "SideEffect": "bearagent.domain.tools",
    "ToolResult": "bearagent.domain.tools",
    "ToolSpec": "bearagent.domain.tools",
    "BaseTool": "bearagent.tools.kit",
    "WorkspaceFile": "bearagent.tools.kit",
    "open_workspace_file": "bearagent.tools.kit",
    "tool_error": "bearagent.tools.base",
    "SearchHit": "bearagent.tools.search_hit",
    "WebSearchBackend": "bearagent.tools.search_hit",
    # model providers
    "ModelProvider": "bearagent.ports",
    "ModelCompleted": "bearagent.domain.models",
    "ModelEvent": "bearagent.domain.models",
    "ModelRequest": "bearagent.domain.models",
    "ModelToolCall": "bearagent.domain.models",
    "StopReason": "bearagent.domain.models",
    "TextDelta": "bearagent.domain.models",
    "ToolDescriptor": "bearagent.domain.models",
    "Message": "bearagent.domain.messages",
    "TextPart": "bearagent.domain.messages",
    "ToolCallPart": "bearagent.domain.messages",
    "ToolResultPart": "bearagent.domain.messages",
    "TokenUsage": "bearagent.domain.budgets",
    "ModelEntry": "bearagent.domain.specs",
    "McpServerSpec": "bearagent.domain.specs",
    "ModelCall": "bearagent.providers.kit",
    "StreamingProvider": "bearagent.providers.kit",
    "ProviderSettings": "bearagent.providers._base",
    "provider_settings": "bearagent.providers.factory",
    "ProviderFailure": "bearagent.providers.errors",
    "ProviderStreamError": "bearagent.providers.errors",
    # shared
    "Event": "bearagent.domain.events",
    "BearAgentError": "bearagent.domain.errors",
    "ErrorCategory": "bearagent.domain.errors",
    "ErrorInfo": "bearagent.domain.errors",
    "IdGenerator": "bearagent.domain.ids",
    "ToolCallId": "bearagent.domain.ids",
    "JsonMapping": "bearagent.domain._base",
    "JsonValue": "bearagent.domain._base",
    "thaw_json_mapping": "bearagent.domain._base",
}

__all__ = [
    "Artifact",
    "BaseTool",
    "BearAgentError",
    "ErrorCategory",
    "ErrorInfo",
    "Event",
    "EventSink",
    "HookInput",
    "HookOutput",
    "IdGenerator",
    "JsonMapping",
    "JsonValue",
    "McpServerSpec",
    "Message",
    "ModelCall",
    "ModelCompleted",
    "ModelEntry",
    "ModelEvent",
    "ModelProvider",
    "ModelRequest",
    "ModelToolCall",
    "PluginHost",
    "ProviderFactory",
    "ProviderFailure",
    "ProviderRegistration",
    "ProviderSettings",
    "ProviderStreamError",
    "PythonHookHandler",
    "RegisterCommand",
    "RegisterDir",
    "RegisterEventSink",
    "RegisterHookHandler",
    "RegisterMcpServer",
    "RegisterModel",
    "RegisterRunExporter",
    "RegisterTool",
    "RunExport",
    "RunExporter",
    "SearchHit",
    "SideEffect",
    "StopReason",
    "StreamingProvider",
    "TextDelta",
    "TextPart",
    "TokenUsage",
    "Tool",
    "ToolCallId",
    "ToolCallPart",
    "ToolContext",
    "ToolDescriptor",
    "ToolResult",
    "ToolResultPart",
    "ToolSpec",
    "WebSearchBackend",
    "WorkspaceFile",
    "hookimpl",
    "open_workspace_file",
    "provider_settings",
    "thaw_json_mapping",
    "tool_error",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bearagent.plugin' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

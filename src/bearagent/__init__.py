"""BearAgent: a local-first, plugin-extensible agent runtime.

The user namespace (embedding BearAgent in Python, see docs/python-api.md); plugin authors import from
`bearagent.plugin`. Anything not exported here or from `bearagent.plugin` is private and may change without notice;
`tests/contract/snapshots/public_api.json` pins these names and their signatures.

- Running: `open_workspace`, `Workspace`, `RunResult`, `RunObserver` (live callbacks for `Workspace.run`),
  `AskRequest` / `AskAnswer` / `Asker` (approving `ask` tool calls), `PluginHost` (in-process plugins).
- The live stream (`Workspace.stream`, `bearagent run --stream`): `StreamEvent` (the union) and `StreamEventModel`
  (their base), `RunStartedEvent`, `StepEvent`, `TokenEvent`, `ToolCallEvent`, `ToolResultEvent`, `FinalEvent`,
  `RunSucceededEvent`, `RunFailedEvent`, `StreamError`, `AgentSwitchedEvent`, `SubagentStartedEvent`,
  `SubagentFinishedEvent`, `ApprovalRequestedEvent`, `ApprovalResolvedEvent`, and `parse_stream_event` /
  `parse_stream_event_json` for JSON-lines readers.
- The log: `Event`, `RunProjection`, `ActivityProjection`, `RunStatus`; usage: `BudgetUsage`, `BudgetLimits`,
  `TokenUsage`.
- Replay (`Workspace.replay`, docs/replay.md): `RunReplay` (a re-driven run: its `StepVerdict`s, each with its
  `FieldChange`s) and `DryReplay` (`dry=True`), both with the `LogCheck` (its `LogProblem`s) and the `RunSteps` they
  read (`ModelStep`, `ToolStep`, `FailedAttempt`, `RecordedToolCall`).
- Errors: `BearAgentError`, `ErrorInfo`, `ErrorCategory`.
- `hookimpl` (the plugin marker, also in `bearagent.plugin`) and `__version__`.

Names are imported on first use (PEP 562), so `import bearagent` and `bearagent --help` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bearagent.api import Workspace, open_workspace
    from bearagent.domain.budgets import BudgetLimits, BudgetUsage, TokenUsage
    from bearagent.domain.errors import BearAgentError, ErrorCategory, ErrorInfo
    from bearagent.domain.events import Event
    from bearagent.domain.run_events import RecordedToolCall
    from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus
    from bearagent.domain.stream import (
        AgentSwitchedEvent,
        ApprovalRequestedEvent,
        ApprovalResolvedEvent,
        FinalEvent,
        RunFailedEvent,
        RunStartedEvent,
        RunSucceededEvent,
        StepEvent,
        StreamError,
        StreamEvent,
        StreamEventModel,
        SubagentFinishedEvent,
        SubagentStartedEvent,
        TokenEvent,
        ToolCallEvent,
        ToolResultEvent,
        parse_stream_event,
        parse_stream_event_json,
    )
    from bearagent.plugins.manager import PluginHost
    from bearagent.plugins.markers import hookimpl
    from bearagent.runtime.log_check import LogCheck, LogProblem
    from bearagent.runtime.observer import RunObserver
    from bearagent.runtime.run_alignment import FieldChange
    from bearagent.runtime.run_steps import FailedAttempt, ModelStep, RunSteps, ToolStep
    from bearagent.service.replay import DryReplay, RunReplay, StepVerdict
    from bearagent.service.runner import RunResult
    from bearagent.tools.gate import AskAnswer, Asker, AskRequest

from bearagent._version import __version__ as __version__

_STREAM = "bearagent.domain.stream"
_EXPORTS: dict[str, str] = {
    "hookimpl": "bearagent.plugins.markers",
    "open_workspace": "bearagent.api",
    "Workspace": "bearagent.api",
    "RunResult": "bearagent.service.runner",
    "RunObserver": "bearagent.runtime.observer",
    "AskAnswer": "bearagent.tools.gate",
    "AskRequest": "bearagent.tools.gate",
    "Asker": "bearagent.tools.gate",
    "PluginHost": "bearagent.plugins.manager",
    "StreamEvent": _STREAM,
    "StreamEventModel": _STREAM,
    "RunStartedEvent": _STREAM,
    "StepEvent": _STREAM,
    "TokenEvent": _STREAM,
    "ToolCallEvent": _STREAM,
    "ToolResultEvent": _STREAM,
    "FinalEvent": _STREAM,
    "RunSucceededEvent": _STREAM,
    "RunFailedEvent": _STREAM,
    "StreamError": _STREAM,
    "AgentSwitchedEvent": _STREAM,
    "SubagentStartedEvent": _STREAM,
    "SubagentFinishedEvent": _STREAM,
    "ApprovalRequestedEvent": _STREAM,
    "ApprovalResolvedEvent": _STREAM,
    "parse_stream_event": _STREAM,
    "parse_stream_event_json": _STREAM,
    "Event": "bearagent.domain.events",
    "RunProjection": "bearagent.domain.state",
    "ActivityProjection": "bearagent.domain.state",
    "RunStatus": "bearagent.domain.state",
    "BudgetUsage": "bearagent.domain.budgets",
    "BudgetLimits": "bearagent.domain.budgets",
    "TokenUsage": "bearagent.domain.budgets",
    "BearAgentError": "bearagent.domain.errors",
    "ErrorCategory": "bearagent.domain.errors",
    "ErrorInfo": "bearagent.domain.errors",
    "RunReplay": "bearagent.service.replay",
    "DryReplay": "bearagent.service.replay",
    "StepVerdict": "bearagent.service.replay",
    "LogCheck": "bearagent.runtime.log_check",
    "LogProblem": "bearagent.runtime.log_check",
    "FieldChange": "bearagent.runtime.run_alignment",
    "RunSteps": "bearagent.runtime.run_steps",
    "ModelStep": "bearagent.runtime.run_steps",
    "ToolStep": "bearagent.runtime.run_steps",
    "FailedAttempt": "bearagent.runtime.run_steps",
    "RecordedToolCall": "bearagent.domain.run_events",
}

__all__ = [
    "ActivityProjection",
    "AgentSwitchedEvent",
    "ApprovalRequestedEvent",
    "ApprovalResolvedEvent",
    "AskAnswer",
    "AskRequest",
    "Asker",
    "BearAgentError",
    "BudgetLimits",
    "BudgetUsage",
    "DryReplay",
    "ErrorCategory",
    "ErrorInfo",
    "Event",
    "FailedAttempt",
    "FieldChange",
    "FinalEvent",
    "LogCheck",
    "LogProblem",
    "ModelStep",
    "PluginHost",
    "RecordedToolCall",
    "RunFailedEvent",
    "RunObserver",
    "RunProjection",
    "RunReplay",
    "RunResult",
    "RunStartedEvent",
    "RunStatus",
    "RunSteps",
    "RunSucceededEvent",
    "StepEvent",
    "StepVerdict",
    "StreamError",
    "StreamEvent",
    "StreamEventModel",
    "SubagentFinishedEvent",
    "SubagentStartedEvent",
    "TokenEvent",
    "TokenUsage",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolStep",
    "Workspace",
    "__version__",
    "hookimpl",
    "open_workspace",
    "parse_stream_event",
    "parse_stream_event_json",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bearagent' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

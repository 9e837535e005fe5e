"""What a plugin can hand to BearAgent through a `register` callback. Pure data; no plugin machinery here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import ALL_HOOK_CAPABILITIES, HookCapability, HookEventName, McpServerSpec, ModelEntry

if TYPE_CHECKING:
    import click

    from bearagent.domain.events import Event
    from bearagent.ports import ModelProvider, Tool

HookInput: TypeAlias = Mapping[str, JsonValue]
HookOutput: TypeAlias = Mapping[str, JsonValue] | None
PythonHookCallable: TypeAlias = Callable[[HookInput], "HookOutput | Awaitable[HookOutput]"]
EventSink: TypeAlias = Callable[["Event"], None]


class ProviderFactory(Protocol):
    """Builds a `ModelProvider` for one model entry (`env` = the process environment, for `api_key_env`;
    `base_dir` = the directory of the config file that declared the entry). A factory that also declares an `ids`
    parameter (`ids: IdGenerator | None = None`) receives the run's id generator, for its tool-call ids. Raise
    `BearAgentError` (category `configuration`) naming the entry for a bad entry: `provider_settings` does."""

    def __call__(self, entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider: ...


@dataclass(frozen=True, slots=True)
class PythonHookHandler:
    """A hook handler implemented in Python by a plugin.

    - `event`: one of SPEC §9's event names (`PreToolUse`, ...).
    - `matcher`: as in config hooks (None, "", "*" = everything; `A|B`; a regex tested against the tool name).
    - `callback(hook_input)`: sync or async; receives the same JSON object a command hook reads on stdin and returns
      the Claude Code-style output object (`{"hookSpecificOutput": {"permissionDecision": "deny", ...}}`,
      `{"decision": "block", "reason": ...}`) or None for "no opinion". Raising counts as a handler failure.
    - `name`: shown in `bearagent plugins list` and in hook events (`<plugin>:<name>`).
    - `capabilities`: what its output may do (`block`, `rewrite`, `context`); output beyond them is refused.
    - `on_failure`: `allow` (fail open, the default) or `block` (a security gate that fails closed).
    - `timeout_s`: how long the runtime waits for it.
    """

    event: HookEventName
    callback: PythonHookCallable
    name: str
    matcher: str | None = None
    capabilities: frozenset[HookCapability] = ALL_HOOK_CAPABILITIES
    on_failure: Literal["allow", "block"] = "allow"
    timeout_s: float = 30.0
    plugin: str = ""


class RunExport(Protocol):
    """Exports one stored run of the workspace at `workspace_root` (`run_id` is a full id, already resolved; the
    run's subagent runs are the exporter's to follow) and returns a one-line report (`exported 8 span(s)`). `env`
    is the process environment. Raise `BearAgentError` for a problem the user can fix (its message and hint are
    shown)."""

    def __call__(self, workspace_root: Path, run_id: str, env: Mapping[str, str]) -> str: ...


@dataclass(frozen=True, slots=True)
class RunExporter:
    """A format or destination of `bearagent runs export RUN --format NAME` a plugin adds (`otlp`: the run's spans
    to a tracing backend). `name` is lowercase letters, digits and dashes and cannot be a built-in format
    (`atif`, `markdown`, `jsonl`); `description` is shown by `plugins list`. `plugin` is filled in by BearAgent."""

    name: str
    export: RunExport
    description: str = ""
    plugin: str = ""


@dataclass(frozen=True, slots=True)
class ProviderRegistration:
    """A model provider a plugin adds: `id` is what `provider:` names in a model entry; `factory(entry, env=...,
    base_dir=...)` builds a `ModelProvider` for one entry (see `ProviderFactory`); `description` is shown by
    `bearagent plugins list`. `plugin` is filled in by BearAgent."""

    id: str
    factory: ProviderFactory
    description: str = ""
    plugin: str = ""


@dataclass
class PluginContributions:
    """Everything the loaded plugins registered, attributed to a plugin name."""

    providers: list[ProviderRegistration] = field(default_factory=lambda: [])
    models: list[tuple[str, ModelEntry]] = field(default_factory=lambda: [])
    tools: list[tuple[str, Tool]] = field(default_factory=lambda: [])
    agent_dirs: list[tuple[str, str]] = field(default_factory=lambda: [])
    skill_dirs: list[tuple[str, str]] = field(default_factory=lambda: [])
    hook_handlers: list[PythonHookHandler] = field(default_factory=lambda: [])
    mcp_servers: list[tuple[str, McpServerSpec]] = field(default_factory=lambda: [])
    commands: list[tuple[str, click.Command]] = field(default_factory=lambda: [])
    event_sinks: list[tuple[str, EventSink]] = field(default_factory=lambda: [])
    run_exporters: list[RunExporter] = field(default_factory=lambda: [])


# The `register` callbacks the contribution hooks receive (for annotating a plugin's hook implementations).
RegisterModel: TypeAlias = Callable[[ProviderRegistration | ModelEntry], None]
RegisterTool: TypeAlias = Callable[["Tool"], None]
RegisterDir: TypeAlias = Callable[[Path], None]
"""`register_agent_dirs` / `register_skill_dirs` (a `str` path is accepted too)."""
RegisterHookHandler: TypeAlias = Callable[[PythonHookHandler], None]
RegisterMcpServer: TypeAlias = Callable[[McpServerSpec], None]
RegisterCommand: TypeAlias = Callable[["click.Command"], None]
RegisterEventSink: TypeAlias = Callable[[EventSink], None]
RegisterRunExporter: TypeAlias = Callable[[RunExporter], None]

"""The plugin API: every hook a BearAgent plugin may implement (pluggy, project name "bearagent").

Write a plugin module with functions decorated by `bearagent.hookimpl` whose names match the specs below, and
declare it as an entry point in the `bearagent` group:

    [project.entry-points.bearagent]
    my_plugin = "my_plugin"

Contribution hooks receive a `register` callback and call it once per contribution (the llm/datasette style).
Decision hooks are `firstresult`: the first plugin that returns something other than None decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from bearagent.domain._base import JsonValue
from bearagent.plugins.contributions import (
    RegisterCommand,
    RegisterDir,
    RegisterEventSink,
    RegisterHookHandler,
    RegisterMcpServer,
    RegisterModel,
    RegisterRunExporter,
    RegisterTool,
)
from bearagent.plugins.markers import hookimpl, hookspec

__all__ = ["hookimpl", "hookspec"]


@hookspec
def register_models(register: RegisterModel) -> None:
    """Add model providers and/or model entries.

    `register(ProviderRegistration(id="echo", factory=make_echo))` makes `provider: echo` valid in `models:`;
    `factory(entry, *, env, base_dir)` returns a `ModelProvider` for one entry (`bearagent.plugin.ProviderFactory`;
    `bearagent.plugin.StreamingProvider` is the kit for streaming APIs). The built-in providers come through this
    hook too (the `builtin` plugin); their ids cannot be taken. `register(ModelEntry(name="x", provider=...))` adds
    the entry `platform/x` (plugin entries are always platform level; user config shadows them by name).
    """


@hookspec
def register_tools(register: RegisterTool) -> None:
    """Add tools (objects implementing `bearagent.plugin.Tool`; `bearagent.plugin.BaseTool` is the short way). A
    name already taken by a native tool or another plugin is refused with a diagnostic. Agents get plugin tools
    with `tools: ["*"]` or by naming them. The native tools come through this hook too (the `builtin` plugin,
    called when the tool set is first needed)."""


@hookspec
def register_agent_dirs(register: RegisterDir) -> None:
    """Add directories of `agents/*.md` files shipped in the plugin (plugin level: below user, above built-ins)."""


@hookspec
def register_skill_dirs(register: RegisterDir) -> None:
    """Add directories holding skill folders (`<dir>/<name>/SKILL.md`) shipped in the plugin."""


@hookspec
def register_hook_handlers(register: RegisterHookHandler) -> None:
    """Add Python hook handlers (see `PythonHookHandler`): called with the hook input object, returning the Claude
    Code-style output object or None. They run after the config hooks of the same event."""


@hookspec
def register_mcp_servers(register: RegisterMcpServer) -> None:
    """Add MCP server entries (platform level; workspace `mcp_servers` and `.mcp.json` shadow them by name)."""


@hookspec
def register_commands(register: RegisterCommand) -> None:
    """Add `bearagent` CLI commands (click commands or groups). A name clashing with a built-in command is refused."""


@hookspec
def register_event_sinks(register: RegisterEventSink) -> None:
    """Add callables that receive every event appended to a run log (after it is committed). A sink that raises is
    reported and does not affect the run."""


@hookspec
def register_run_exporters(register: RegisterRunExporter) -> None:
    """Add formats or destinations of `bearagent runs export RUN --format NAME` (`RunExporter(name, export,
    description)`; `--otlp` is short for `--format otlp`). A name taken by a built-in format or an earlier plugin is
    refused with a diagnostic."""


@hookspec(firstresult=True)
def web_search_provider() -> object | None:
    """Return the `WebSearch` backend (a `bearagent.plugin.WebSearchBackend`: async `search`). The first
    plugin that returns one wins, over the user's `web_search:` config; with neither, a WebSearch call fails naming
    the config key to set."""


@hookspec(firstresult=True)
def resolve_permission(
    tool_name: str, tool_input: Mapping[str, JsonValue], agent_name: str, workspace_root: Path
) -> Literal["allow", "ask", "deny"] | None:
    """Decide a tool call's permission before the config `permissions` rules are consulted (e.g. a company policy
    plugin). Return None to have no opinion; the first non-None answer wins. `deny` rules in config still win
    over an `allow` from a plugin."""


@hookspec(firstresult=True)
def trace_context(run_id: str, tool_call_id: str | None) -> Mapping[str, str] | None:
    """The W3C trace context (`traceparent`, optionally `tracestate` and `baggage`) of an outgoing call made for run
    `run_id` (and tool call `tool_call_id`, when the call serves one): BearAgent sends it in an MCP request's
    `params._meta`, an HTTP hook's headers and a command hook's environment (`TRACEPARENT`). Return None to send
    nothing; the first non-None answer wins. A malformed answer is dropped (`bearagent.domain.trace_context`)."""

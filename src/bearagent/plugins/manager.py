"""Finding, loading and isolating plugins. A plugin that fails to import or raises while registering is reported
by name (a diagnostic) and everything else keeps working.

The built-in plugin (`bearagent.plugins.builtin`: the built-in providers and native tools) is registered first in
every host, through the same hooks; it is not one of the installed plugins (`plugins`), is not narrowed by
`BEARAGENT_LOAD_PLUGINS`, and its `register_tools` runs on first use of the tool set (`tools()`), because building
the native tools imports their modules."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import pluggy

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import McpServerSpec, ModelEntry
from bearagent.plugins import hookspecs
from bearagent.plugins.builtin import BUILTIN_PLUGIN, BuiltinPlugin
from bearagent.plugins.contributions import (
    EventSink,
    PluginContributions,
    ProviderRegistration,
    PythonHookHandler,
    RunExporter,
)

if TYPE_CHECKING:
    import click

    from bearagent.ports import Tool

ENTRY_POINT_GROUP = "bearagent"
LOAD_ENV = "BEARAGENT_LOAD_PLUGINS"
CONTRIBUTION_HOOKS = (
    "register_models",
    "register_tools",
    "register_agent_dirs",
    "register_skill_dirs",
    "register_hook_handlers",
    "register_mcp_servers",
    "register_commands",
    "register_event_sinks",
    "register_run_exporters",
)
DECISION_HOOKS = ("web_search_provider", "resolve_permission", "trace_context")
BUILTIN_EXPORT_FORMATS = ("atif", "markdown", "jsonl")
"""`bearagent runs export`'s own formats (`cli/run_export.py`); a plugin's run exporter cannot take these names."""
EXPORTER_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


@dataclass
class PluginInfo:
    name: str
    version: str | None = None
    distribution: str | None = None
    status: Literal["loaded", "failed"] = "loaded"
    error: str | None = None
    registered: dict[str, list[str]] = field(default_factory=lambda: {})


class PluginHost:
    """The pluggy manager plus what each plugin registered. Build with `PluginHost.from_entry_points(env)` or
    `PluginHost()` and `register(obj, name)` for in-process plugins (tests, embedding). Either way the built-in
    plugin is already registered (`builtin`, not listed in `plugins`)."""

    def __init__(self) -> None:
        from bearagent._version import __version__

        self.pm = pluggy.PluginManager("bearagent")
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        """The installed (or in-process registered) plugins, by name; the built-in plugin is `builtin`."""
        self.diagnostics: list[Diagnostic] = []
        self.builtin = PluginInfo(BUILTIN_PLUGIN, __version__, "bearagent")
        self.builtin_diagnostics: list[Diagnostic] = []
        """Problems found while building the built-in tools (a `web_search_provider` of the wrong type)."""
        self._contributions: PluginContributions | None = None
        self._tools: list[tuple[str, Tool]] | None = None
        self.pm.register(BuiltinPlugin(self.web_search_provider, self.builtin_diagnostics.append), name=BUILTIN_PLUGIN)

    @classmethod
    def from_entry_points(cls, env: Mapping[str, str]) -> PluginHost:
        host = cls()
        wanted = parse_load_filter(env)
        if wanted is not None and not wanted:  # BEARAGENT_LOAD_PLUGINS="": none, so no scan of every installed
            return host  # distribution's entry points (~5 ms a process, issue 37)
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist
            dist_name = dist.metadata["Name"] if dist is not None else None
            if wanted is not None and ep.name not in wanted and (dist_name or "") not in wanted:
                continue
            version = dist.version if dist is not None else None
            try:
                plugin = ep.load()
            except Exception as exc:
                host._fail(ep.name, version, dist_name, f"failed to import: {type(exc).__name__}: {exc}", "import")
                continue
            host.register(plugin, ep.name, version=version, distribution=dist_name)
        return host

    def register(
        self, plugin: object, name: str, *, version: str | None = None, distribution: str | None = None
    ) -> None:
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # pluggy.PluginValidationError, duplicate names, ...
            self._fail(name, version, distribution, f"was refused: {exc}", "register")
            return
        unknown = [
            hook
            for hook in dir(self.pm.hook)
            if not hook.startswith("_")
            and not getattr(self.pm.hook, hook).has_spec()
            and any(impl.plugin_name == name for impl in getattr(self.pm.hook, hook).get_hookimpls())
        ]
        if unknown:
            self.pm.unregister(name=name)
            from bearagent.config.files import suggestion

            names = ", ".join(f"{hook!r}{suggestion(hook, CONTRIBUTION_HOOKS + DECISION_HOOKS)}" for hook in unknown)
            self._fail(name, version, distribution, f"was refused: it implements unknown hook(s) {names}", "register")
            return
        self.plugins[name] = PluginInfo(name, version, distribution)
        self._contributions = None
        self._tools = None

    def _fail(self, name: str, version: str | None, dist: str | None, error: str, stage: str) -> None:
        self.plugins[name] = PluginInfo(name, version, dist, status="failed", error=error)
        self.diagnostics.append(
            Diagnostic(
                severity="error",
                code=f"plugin.{stage}_failed",
                message=f"plugin {name!r} {error}; it is disabled and everything else keeps working",
                source=f"plugin:{name}",
                subject=name,
                fix=f"upgrade or reinstall the plugin, or skip it: export {LOAD_ENV}=<other plugins> (empty for none)",
            )
        )

    def contributions(self) -> PluginContributions:
        """Call every contribution hook of every plugin once (cached), the built-in plugin first; a plugin raising
        inside a hook is reported and its contributions from that hook are dropped. The built-in tools are not
        here: see `tools()`."""
        if self._contributions is not None:
            return self._contributions
        out = PluginContributions()
        for hook_name in CONTRIBUTION_HOOKS:
            caller = getattr(self.pm.hook, hook_name)
            for impl in sorted(caller.get_hookimpls(), key=lambda impl: impl.plugin_name != BUILTIN_PLUGIN):
                plugin = impl.plugin_name
                if plugin == BUILTIN_PLUGIN and hook_name == "register_tools":
                    continue  # on first use of the tool set (tools()), not when a workspace loads
                info = self.plugins.get(plugin)
                if info is not None and info.status == "failed" and plugin != BUILTIN_PLUGIN:
                    continue  # (a failed plugin that called itself `builtin` does not disable the real one)
                staged: list[object] = []
                try:
                    impl.function(register=staged.append)
                except Exception as exc:
                    self._fail(
                        plugin,
                        self.plugins[plugin].version if plugin in self.plugins else None,
                        None,
                        f"raised in {hook_name}: {type(exc).__name__}: {exc}",
                        "hook",
                    )
                    continue
                self._accept(out, hook_name, plugin, staged)
        self._contributions = out
        return out

    def tools(self) -> list[tuple[str, Tool]]:
        """Every tool registered through `register_tools`, as (plugin name, tool): the built-in plugin's first
        (its hook runs here, once), then the other plugins' in load order."""
        if self._tools is None:
            contributed = self.contributions()
            builtin = PluginContributions()
            for impl in self.pm.hook.register_tools.get_hookimpls():
                if impl.plugin_name == BUILTIN_PLUGIN:
                    staged: list[object] = []
                    impl.function(register=staged.append)
                    self._accept(builtin, "register_tools", BUILTIN_PLUGIN, staged)
            self._tools = [*builtin.tools, *contributed.tools]
        return self._tools

    def _accept(self, out: PluginContributions, hook: str, plugin: str, staged: list[object]) -> None:
        info = self.builtin if plugin == BUILTIN_PLUGIN else self.plugins.setdefault(plugin, PluginInfo(plugin))
        bucket = info.registered.setdefault(hook.removeprefix("register_"), [])
        for item in staged:
            label = self._file(out, hook, plugin, item)
            if label == "":
                continue  # refused with its own diagnostic
            if label is None:
                self.diagnostics.append(
                    Diagnostic(
                        severity="error",
                        code="plugin.bad_contribution",
                        message=f"plugin {plugin!r} passed a {type(item).__name__} to {hook}, which expects something else; it was ignored",
                        source=f"plugin:{plugin}",
                        subject=plugin,
                        fix="see docs/plugins.md for the type each register callback takes",
                    )
                )
            else:
                bucket.append(label)

    def _file(self, out: PluginContributions, hook: str, plugin: str, item: object) -> str | None:
        if hook == "register_models":
            if isinstance(item, ProviderRegistration):
                out.providers.append(ProviderRegistration(item.id, item.factory, item.description, plugin))
                return f"provider {item.id}"
            if isinstance(item, ModelEntry):
                out.models.append(
                    (plugin, item.model_copy(update={"level": "platform", "source": item.source or f"plugin:{plugin}"}))
                )
                return f"model platform/{item.name}"
            return None
        if hook == "register_tools":
            from bearagent.ports import Tool

            if isinstance(item, Tool):
                out.tools.append((plugin, item))
                return item.spec.name
            return None
        if hook in ("register_agent_dirs", "register_skill_dirs"):
            if isinstance(item, (str, Path)):
                target = out.agent_dirs if hook == "register_agent_dirs" else out.skill_dirs
                target.append((plugin, str(item)))
                return str(item)
            return None
        if hook == "register_hook_handlers":
            if isinstance(item, PythonHookHandler):
                handler = PythonHookHandler(
                    event=item.event,
                    callback=item.callback,
                    name=item.name,
                    matcher=item.matcher,
                    capabilities=item.capabilities,
                    on_failure=item.on_failure,
                    timeout_s=item.timeout_s,
                    plugin=plugin,
                )
                out.hook_handlers.append(handler)
                return f"{item.event}:{item.name}"
            return None
        if hook == "register_mcp_servers":
            if isinstance(item, McpServerSpec):
                out.mcp_servers.append(
                    (plugin, item.model_copy(update={"level": "platform", "source": item.source or f"plugin:{plugin}"}))
                )
                return item.name
            return None
        if hook == "register_commands":
            import click

            if isinstance(item, click.Command):
                out.commands.append((plugin, item))
                return item.name or "?"
            return None
        if hook == "register_event_sinks":
            if callable(item):
                out.event_sinks.append((plugin, cast(EventSink, item)))
                return getattr(item, "__name__", type(item).__name__)
            return None
        if hook == "register_run_exporters":
            if isinstance(item, RunExporter) and callable(item.export):
                taken = next((known.plugin for known in out.run_exporters if known.name == item.name), None)
                if not EXPORTER_NAME.fullmatch(item.name) or item.name in BUILTIN_EXPORT_FORMATS or taken:
                    why = f"is taken by plugin {taken!r}" if taken else "is a built-in format or not [a-z][a-z0-9-]*"
                    self.diagnostics.append(
                        Diagnostic(
                            severity="error",
                            code="plugin.bad_contribution",
                            message=f"plugin {plugin!r} registered a run exporter named {item.name[:40]!r}, which {why}; "
                            "it was ignored",
                            source=f"plugin:{plugin}",
                            subject=plugin,
                            fix="rename the exporter (lowercase letters, digits, dashes; not atif/markdown/jsonl)",
                        )
                    )
                    return ""
                out.run_exporters.append(RunExporter(item.name, item.export, item.description, plugin))
                return f"export {item.name}"
            return None
        return None

    # --- decision hooks -------------------------------------------------------------------------------------
    def web_search_provider(self) -> object | None:
        return cast(Callable[[], object | None], self.pm.hook.web_search_provider)()

    def resolve_permission(
        self, tool_name: str, tool_input: Mapping[str, object], agent_name: str, workspace_root: Path
    ) -> str | None:
        caller = cast(Callable[..., "str | None"], self.pm.hook.resolve_permission)
        return caller(tool_name=tool_name, tool_input=tool_input, agent_name=agent_name, workspace_root=workspace_root)

    def trace_context(self, run_id: str | None, tool_call_id: str | None) -> Mapping[str, str]:
        """What to send with an outgoing call of `run_id` for tracing (checked W3C keys; {} without a tracing
        plugin, outside a run, or when the plugin failed: a trace is never worth a failed call)."""
        if run_id is None or not self.pm.hook.trace_context.get_hookimpls():
            return {}
        from bearagent.domain.trace_context import checked

        try:
            answer = self.pm.hook.trace_context(run_id=run_id, tool_call_id=tool_call_id)
        except Exception:
            return {}
        return checked(answer)


def parse_load_filter(env: Mapping[str, str]) -> frozenset[str] | None:
    """`BEARAGENT_LOAD_PLUGINS`: unset = all plugins; empty = none; else a comma list of entry-point or distribution
    names."""
    raw = env.get(LOAD_ENV)
    if raw is None:
        return None
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def plugin_commands(host: PluginHost, taken: set[str]) -> dict[str, click.Command]:
    """CLI commands registered by plugins, minus those clashing with built-in names (reported as diagnostics)."""
    out: dict[str, click.Command] = {}
    for plugin, command in host.contributions().commands:
        name = command.name or ""
        if name in taken or name in out:
            host.diagnostics.append(
                Diagnostic(
                    severity="error",
                    code="plugin.command_collision",
                    message=f"plugin {plugin!r} registers command {name!r}, which already exists; it was ignored",
                    source=f"plugin:{plugin}",
                    subject=name,
                    fix=f"rename the command in plugin {plugin!r}",
                )
            )
            continue
        out[name] = command
    return out

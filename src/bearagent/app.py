"""Wiring for one workspace: config files, every registry, plugins and project instructions. This is the single
place that knows the concrete registry classes; the CLI and the runtime call `load_workspace` and use the
`LoadedWorkspace` it returns."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.builtin import builtin_agents_dir, builtin_skills_dir
from bearagent.config.claude_settings import load_claude_settings, settings_env
from bearagent.config.instructions import load_instructions
from bearagent.config.model import BearConfig, ConfigFile, load_config_file, merge_config
from bearagent.config.safe_read import check_workspace_file
from bearagent.config.workspace import (
    CONFIG_FILE,
    RANK_COMPAT_CLAUDE,
    WORKSPACE_DIR,
    Source,
    action_sources,
    agent_sources,
    builtin_source,
    command_sources,
    discover_workspace,
    plugin_source,
    skill_sources,
    user_config_dir,
)
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import HookMatcherSpec, McpServerSpec, ModelEntry
from bearagent.plugins.builtin import BUILTIN_PLUGIN
from bearagent.plugins.contributions import ProviderFactory
from bearagent.plugins.manager import PluginHost
from bearagent.registries.actions import ActionRegistry, load_actions
from bearagent.registries.agents import AgentRegistry, agent_files, load_agents
from bearagent.registries.commands import command_model_diagnostics
from bearagent.registries.hooks import HookRegistry, parse_hooks
from bearagent.registries.mcp import McpRegistry, build_mcp_registry, load_mcp_json, parse_mcp_servers
from bearagent.registries.models import BUILTIN_PROVIDERS, ModelRegistry, build_model_registry, parse_model_entries
from bearagent.registries.skills import SkillRegistry, load_skills

if TYPE_CHECKING:
    from bearagent.domain.tools import ToolSpec
    from bearagent.registries.tools import NativeToolRegistry
    from bearagent.runtime.projection import Capabilities, InvocationProjection


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """`AGENTS.md` (else `CLAUDE.md`) at the workspace root, its `@path` imports appended (`imports` names them);
    added to every primary agent's context."""

    path: Path
    text: str
    imports: tuple[str, ...] = ()


@dataclass
class LoadedWorkspace:
    root: Path
    user_dir: Path
    env: Mapping[str, str]
    config: BearConfig
    config_files: list[ConfigFile]
    agents: AgentRegistry
    models: ModelRegistry
    skills: SkillRegistry
    actions: ActionRegistry
    mcp: McpRegistry
    hooks: HookRegistry
    plugins: PluginHost
    instructions: ProjectInstructions | None
    load_diagnostics: list[Diagnostic] = field(default_factory=lambda: [])
    settings_env: Mapping[str, str] = field(default_factory=lambda: {})
    """`env` of `.claude/settings*.json`: added to hook commands' and MCP servers' environment (after trust, as
    every item of those files), never to Bash's (see docs/claude-code.md#env)."""
    _tools: NativeToolRegistry | None = None

    @property
    def state_dir(self) -> Path:
        return self.root / WORKSPACE_DIR

    @property
    def tools(self) -> NativeToolRegistry:
        """The tools every plugin registered, the built-in plugin's as native ones (built on first use: `agents
        list` never imports the tool modules)."""
        if self._tools is None:
            from bearagent.registries.tools import NativeToolRegistry

            registered = self.plugins.tools()
            natives = [tool for plugin, tool in registered if plugin == BUILTIN_PLUGIN]
            others = [(plugin, tool) for plugin, tool in registered if plugin != BUILTIN_PLUGIN]
            self._tools = NativeToolRegistry(natives, others, self.plugins.builtin_diagnostics)
        return self._tools

    def child_env(self) -> dict[str, str]:
        """The environment of hook commands and MCP servers: BearAgent's own, with the Claude Code settings' `env`
        laid over it (only ever used after the trust check, since those entries are on the trust surface)."""
        return {**self.env, **self.settings_env}

    def provider_factories(self) -> dict[str, ProviderFactory]:
        """Provider id -> factory as registered through `register_models` (the built-in plugin's and the other
        plugins'; a plugin's attempt at a built-in id is left out), for `create_provider(registry=...)`."""
        return {
            p.id: p.factory
            for p in self.plugins.contributions().providers
            if p.plugin == BUILTIN_PLUGIN or p.id not in BUILTIN_PROVIDERS
        }

    def capabilities(self) -> Capabilities:
        from bearagent.runtime.projection import AvailableTool, Capabilities

        tools = self.tools
        return Capabilities(
            tools={e.name: AvailableTool(e.tool, e.origin) for e in tools.entries()},
            default_tools=frozenset(tools.native_names()),
            skills={s.name: s for s in self.skills.all()},
            actions={a.name: a for a in self.actions.all()},
            agents={a.name: a for a in self.agents.all()},
            mcp_servers=self.mcp.names(),
            workspace_kind=self.config.kind,
        )

    def project(
        self,
        agent_name: str | None = None,
        *,
        mcp_tools: Sequence[tuple[str, ToolSpec]] | None = None,
        parent_model: ModelEntry | None = None,
        require_model: bool = True,
    ) -> InvocationProjection:
        """The invocation projection of `agent_name` (default: `default_agent`). Raises `BearAgentError` for an
        unknown agent, an unresolvable model (when `require_model`) or a tool-name collision."""
        from bearagent.runtime.projection import project_invocation

        agent = self.agents.require(agent_name or self.config.default_agent)
        return project_invocation(
            agent,
            self.capabilities(),
            self.models,
            default_model=self.config.default_model,
            parent_model=parent_model,
            mcp_tools=mcp_tools,
            require_model=require_model,
        )

    def diagnostics(self, *, include_tools: bool = True) -> list[Diagnostic]:
        """Every diagnostic: config files, plugins, each registry, and (with `include_tools`) tools."""
        out = [
            *self.load_diagnostics,
            *self.plugins.diagnostics,
            *self.models.diagnostics,
            *self.agents.diagnostics,
            *self.skills.diagnostics,
            *self.actions.diagnostics,
            *self.mcp.diagnostics,
            *self.hooks.diagnostics,
        ]
        if include_tools:
            out.extend(self.tools.diagnostics)
        seen: set[Diagnostic] = set()
        unique: list[Diagnostic] = []
        for d in out:
            if d not in seen:
                seen.add(d)
                unique.append(d)
        return unique

    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics())


def _instructions(root: Path, diags: list[Diagnostic]) -> ProjectInstructions | None:
    """AGENTS.md, else CLAUDE.md, with its `@path` imports (`config/instructions.py`), read with the file tools'
    path safety: one that is a symlink out of the workspace (`AGENTS.md -> ~/.ssh/id_rsa`) is an error diagnostic
    and never reaches a model request; so is an import that leaves the workspace."""
    found = load_instructions(root, diags)
    return ProjectInstructions(found.path, found.text, found.imports) if found is not None else None


def load_workspace(
    root: Path | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    plugins: PluginHost | None = None,
) -> LoadedWorkspace:
    """Load everything for one workspace. `root` is `-w` (None = discover from `cwd`); `env` defaults to the process
    environment; `plugins` defaults to the installed entry points filtered by `BEARAGENT_LOAD_PLUGINS`. Never raises
    for a broken file: every problem is a diagnostic."""
    environ: Mapping[str, str] = dict(os.environ) if env is None else env
    ws_root = discover_workspace(cwd or Path.cwd(), root)
    user_dir = user_config_dir(environ)
    host = plugins if plugins is not None else PluginHost.from_entry_points(environ)
    contrib = host.contributions()
    diags: list[Diagnostic] = []

    user_cf = load_config_file(user_dir / CONFIG_FILE, "platform", diags)
    ws_config = ws_root / WORKSPACE_DIR / CONFIG_FILE
    ws_cf = (  # never through a symlink out of the workspace (config/safe_read.py)
        load_config_file(ws_config, "workspace", diags)
        if check_workspace_file(ws_root, ws_config, diags, what=f"{WORKSPACE_DIR}/{CONFIG_FILE}")
        else None
    )
    files = [cf for cf in (user_cf, ws_cf) if cf is not None]
    compat = merge_config(files).compat
    # Claude Code's .claude/settings.json and settings.local.json: config files of the workspace level, below
    # .bearagent/config.yaml (config/claude_settings.py)
    hook_diags: list[Diagnostic] = []
    claude_files = load_claude_settings(ws_root, diags, hook_diags) if compat else []
    files = [cf for cf in (user_cf, *claude_files, ws_cf) if cf is not None]
    config = merge_config(files)

    plugin_names = sorted({p for p, _ in contrib.agent_dirs} | {p for p, _ in contrib.skill_dirs})
    order = {name: i for i, name in enumerate(plugin_names)}
    for plugin, directory in (*contrib.agent_dirs, *contrib.skill_dirs):
        if not Path(directory).is_dir():
            diags.append(
                Diagnostic(
                    severity="warning",
                    code="plugin.missing_dir",
                    message=f"plugin {plugin!r} registered the directory {directory}, which does not exist; nothing was loaded from it",
                    source=f"plugin:{plugin}",
                    subject=plugin,
                    fix=f"reinstall the plugin; if it persists, report it to the author of {plugin!r} (package data missing?)",
                )
            )

    # models
    model_diags: list[Diagnostic] = []
    providers: list[str] = []
    for reg in contrib.providers:
        if reg.id in BUILTIN_PROVIDERS and reg.plugin != BUILTIN_PLUGIN:
            model_diags.append(
                Diagnostic(
                    severity="error",
                    code="plugin.provider_shadowed",
                    message=f"plugin {reg.plugin!r} registers provider id {reg.id!r}, which is built in and cannot be replaced; it was ignored",
                    source=f"plugin:{reg.plugin}",
                    subject=reg.id,
                    fix=f"ask the author of {reg.plugin!r} to use another provider id",
                )
            )
        else:
            providers.append(reg.id)
    model_entries: list[tuple[ModelEntry, Source]] = []
    for cf, source in ((ws_cf, Source("workspace", "workspace", 10_000)), (user_cf, Source("user", "user", 20_000))):
        if cf is not None and cf.models:
            entries, d = parse_model_entries(
                cf.models, path=cf.path, level=source.level, doc=cf.doc, providers=providers
            )
            model_diags.extend(d)
            model_entries.extend((e, source) for e in entries)
    for plugin, entry in contrib.models:
        model_entries.append((entry, plugin_source(plugin, None, 0)))
    models = build_model_registry(model_entries, model_diags, providers)

    # agents
    agent_pairs = [(s, agent_files(s.directory)) for s in agent_sources(ws_root, user_dir, compat=compat)]
    for plugin, directory in contrib.agent_dirs:
        source = plugin_source(plugin, Path(directory), order[plugin])
        agent_pairs.append((source, agent_files(Path(directory))))
    builtin_agents = builtin_source(builtin_agents_dir())
    agent_pairs.append((builtin_agents, agent_files(builtin_agents.directory)))
    agents = load_agents(agent_pairs, ws_root, environ)

    # skills
    skill_srcs = skill_sources(ws_root, user_dir, compat=compat)
    extra = [(plugin_source(plugin, Path(d), order[plugin]), Path(d)) for plugin, d in contrib.skill_dirs]
    extra.append((builtin_source(builtin_skills_dir()), builtin_skills_dir()))
    skills = load_skills(skill_srcs, extra_dirs=extra)

    actions = load_actions(action_sources(ws_root, user_dir), command_sources(ws_root, user_dir, compat=compat))
    diags.extend(command_model_diagnostics(actions.all(), models))
    from bearagent.runtime.projection import alias_diagnostics

    diags.extend(alias_diagnostics(agents.all(), models))  # `model: sonnet` with no `sonnet` entry, at load

    # MCP servers
    mcp_diags: list[Diagnostic] = []
    mcp_entries: list[tuple[McpServerSpec, Source]] = []
    if ws_cf is not None and ws_cf.mcp_servers:
        src = Source("workspace", "workspace", 10_000)
        specs, d = parse_mcp_servers(ws_cf.mcp_servers, path=ws_cf.path, source=src, doc=ws_cf.doc)
        mcp_diags.extend(d)
        mcp_entries.extend((s, src) for s in specs)
    if compat:
        src = Source("compat:.mcp.json", "compat", RANK_COMPAT_CLAUDE, ws_root)
        mcp_entries.extend((s, src) for s in load_mcp_json(ws_root / ".mcp.json", src, mcp_diags))
    if user_cf is not None and user_cf.mcp_servers:
        src = Source("user", "user", 20_000)
        specs, d = parse_mcp_servers(user_cf.mcp_servers, path=user_cf.path, source=src, doc=user_cf.doc)
        mcp_diags.extend(d)
        mcp_entries.extend((s, src) for s in specs)
    for plugin, spec in contrib.mcp_servers:
        mcp_entries.append((spec, plugin_source(plugin, None, 0)))
    mcp = build_mcp_registry(mcp_entries, mcp_diags)

    # hooks (additive: workspace first, then the Claude Code settings, then user)
    matchers: list[HookMatcherSpec] = []
    for cf in (ws_cf, *reversed(claude_files), user_cf):
        if cf is not None and cf.hooks:
            if config.kind == "chat":
                hook_diags.append(
                    Diagnostic(
                        severity="warning",
                        code="hooks.ignored_in_chat",
                        message="hooks are ignored in a chat workspace (kind: chat)",
                        source=str(cf.path),
                        line=cf.line_of("hooks"),
                        fix="remove `hooks:` or set `kind: project`",
                    )
                )
                continue
            found, d = parse_hooks(cf.hooks, path=cf.path, level=cf.level, root=ws_root, env=environ, doc=cf.doc)
            matchers.extend(found)
            hook_diags.extend(d)
    hooks = HookRegistry(matchers, contrib.hook_handlers, hook_diags)

    if config.default_agent and agents.get(config.default_agent) is None:
        where = ws_cf or user_cf
        diags.append(
            Diagnostic(
                severity="error",
                code="config.unknown_default_agent",
                message=f"default_agent {config.default_agent!r} is not a known agent",
                source=str(where.path) if where else "",
                line=where.line_of("default_agent") if where else None,
                field="default_agent",
                fix=f"use one of: {', '.join(agents.names()) or 'none'}",
            )
        )
    if config.default_model and models.get(config.default_model) is None:
        where = ws_cf or user_cf
        diags.append(
            Diagnostic(
                severity="error",
                code="config.unknown_default_model",
                message=f"default_model {config.default_model!r} is not a configured model entry",
                source=str(where.path) if where else "",
                line=where.line_of("default_model") if where else None,
                field="default_model",
                fix=f"use one of: {', '.join(models.refs()) or 'none (add an entry under models:)'}",
            )
        )

    return LoadedWorkspace(
        root=ws_root,
        user_dir=user_dir,
        env=environ,
        config=config,
        config_files=files,
        agents=agents,
        models=models,
        skills=skills,
        actions=actions,
        mcp=mcp,
        hooks=hooks,
        plugins=host,
        instructions=_instructions(ws_root, diags),
        load_diagnostics=diags,
        settings_env=settings_env(claude_files),
    )

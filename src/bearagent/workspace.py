"""Wiring for one workspace: config files, every registry, plugins and project instructions. This is the single
place that knows the concrete registry classes; the CLI and the runtime call `load_workspace` and use the
`LoadedWorkspace` it returns.

Why it is over 400 lines: it is the one place that knows every registry class and how plugin, user and
workspace sources combine; splitting it would spread that single knowledge over several modules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bearagent.a2a.specs import A2AAgentSpec
from bearagent.builtin import builtin_agents_dir, builtin_skills_dir
from bearagent.config.config_files import ConfigFiles, load_config_files
from bearagent.config.execution import with_server_policy
from bearagent.config.instructions import load_instructions
from bearagent.config.model import BearConfig, ConfigFile, ExecutionPolicy
from bearagent.config.output_styles import OutputStyle, chosen_style, load_output_style, style_dirs
from bearagent.config.store_settings import StoreSettings, choose_store
from bearagent.config.workspace import (
    WORKSPACE_DIR,
    Source,
    action_sources,
    agent_sources,
    claude_plugin_source,
    command_sources,
    discover_workspace,
    plugin_dir_sources,
    skill_sources,
    user_config_dir,
)
from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.specs import Level, ModelEntry
from bearagent.plugins.builtin import BUILTIN_PLUGIN
from bearagent.plugins.claude_plugins import ActivePlugin, PluginError, active_plugins, plugin_hooks, plugin_mcp_servers
from bearagent.plugins.contributions import ProviderFactory
from bearagent.plugins.manager import PluginHost
from bearagent.registries.actions import ActionRegistry, load_actions
from bearagent.registries.agents import AgentRegistry, agent_files, load_agents
from bearagent.registries.commands import command_model_diagnostics
from bearagent.registries.hooks import HookRegistry, load_hooks
from bearagent.registries.mcp import McpRegistry, load_mcp_servers
from bearagent.registries.models import ModelRegistry, accepted_providers, load_models
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
    sources: tuple[str, ...] = ()
    """The memory files read: `~/.claude/CLAUDE.md`, the project file, `CLAUDE.local.md` (those there)."""


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
    claude_plugins: tuple[ActivePlugin, ...] = ()
    """The Claude Code plugins enabled here (`plugins/claude_plugins.py`)."""
    status_line: tuple[str, str] | None = None
    """`(command, settings file)`: Claude Code's `statusLine` command (`cli/status_command.py`)."""
    available_models: tuple[tuple[str, ...], str] | None = None
    """`(names, settings file)`: Claude Code's `availableModels`, the models a `--model` / `/model` may pick; None:
    any entry."""
    fallback_model: str | None = None
    """Claude Code's `fallbackModel` (the highest settings file that sets one), as a model entry's ref: a run whose
    model is overloaded or unavailable switches to it (`runtime/model_calls.py`)."""
    api_key_helper: tuple[str, str] | None = None
    """`(command, settings file)`: `apiKeyHelper` of the highest Claude Code settings file that sets one: the Anthropic key of an `anthropic`
    entry whose key variable is unset (`app/key_helper.py`)."""
    output_style: OutputStyle | None = None
    """The output style in force (`outputStyle`; None: the default), added to the top-level primary agent's prompt."""
    a2a_agents: tuple[A2AAgentSpec, ...] = ()
    """`a2a_agents:` of the config files (the workspace's entry wins over the user's of the same name): each is a tool
    `a2a__<name>` that delegates to that remote A2A agent (`a2a/tool.py`)."""
    _tools: NativeToolRegistry | None = None
    _capabilities: tuple[tuple[object, ...], Capabilities] | None = None

    @property
    def state_dir(self) -> Path:
        """Where this workspace's store, transcripts and config state live: `<ws>/.bearagent/` for a project workspace;
        for a chat workspace (no history in the workspace) a directory under the user's BearAgent home keyed by the
        workspace's path."""
        if self.config.kind == "chat":
            import hashlib

            key = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:16]
            return self.user_dir / "chat-state" / key
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

    def use_tools(self, tools: NativeToolRegistry) -> None:
        """Serve `tools` instead of the registered ones (a face's own version of a tool: `bearagent acp` reads
        through the editor, `acp/client_fs.py`). Call it before a runtime is made of this workspace."""
        self._tools = tools

    def child_env(self) -> dict[str, str]:
        """The environment of hook commands and MCP servers: BearAgent's own, with the Claude Code settings' `env`
        laid over it (only ever used after the trust check, since those entries are on the trust surface)."""
        return {**self.env, **self.settings_env}

    def provider_factories(self) -> dict[str, ProviderFactory]:
        """Provider id -> factory as registered through `register_models` (the built-in plugin's and the other
        plugins'; a plugin's attempt at a built-in id is left out), for `create_provider(registry=...)`."""
        accepted, _ = accepted_providers(self.plugins.contributions().providers, builtin_plugin=BUILTIN_PLUGIN)
        return {p.id: p.factory for p in accepted}

    def capabilities(self) -> Capabilities:
        """Everything an agent of this workspace could be granted: built once for the registries it is made of
        (every `project` reads it; `bearagent doctor` projects every agent, and rebuilding its maps of every skill,
        action and agent for each made the command quadratic in the number of definitions), and again when one of
        them is replaced (`use_tools`, or an MCP registry with an editor's servers added: `acp/agent.py`)."""
        parts = (self.tools, self.mcp, self.skills, self.actions, self.agents, self.a2a_agents, self.config)
        cached = self._capabilities
        if cached is None or any(old is not new for old, new in zip(cached[0], parts, strict=True)):
            cached = self._capabilities = (parts, self._build_capabilities())
        return cached[1]

    def _build_capabilities(self) -> Capabilities:
        from bearagent.runtime.projection import AvailableTool, Capabilities

        tools = self.tools
        available = {e.name: AvailableTool(e.tool, e.origin) for e in tools.entries()}
        remote: set[str] = set()
        if self.a2a_agents:
            from bearagent.a2a.tool import RemoteAgentTool

            for spec in self.a2a_agents:
                if spec.tool_name not in available:
                    available[spec.tool_name] = AvailableTool(RemoteAgentTool(spec, self.env), f"a2a:{spec.name}")
                    remote.add(spec.tool_name)
        return Capabilities(
            tools=available,
            default_tools=frozenset(tools.native_names()) | remote,
            skills={s.name: s for s in self.skills.all()},
            actions={a.name: a for a in self.actions.all()},
            agents={a.name: a for a in self.agents.all()},
            mcp_servers=self.mcp.names(),
            workspace_kind=self.config.kind,
            execution_policy=self.config.execution_policy,
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


def _instructions(root: Path, diags: list[Diagnostic], env: Mapping[str, str]) -> ProjectInstructions | None:
    """AGENTS.md, else CLAUDE.md, with its `@path` imports (`config/instructions.py`), read with the file tools'
    path safety: one that is a symlink out of the workspace (`AGENTS.md -> ~/.ssh/id_rsa`) is an error diagnostic
    and never reaches a model request; so is an import that leaves the workspace."""
    found = load_instructions(root, diags, env=env)
    if found is None:
        return None
    return ProjectInstructions(found.path, found.text, found.imports, found.sources)


def load_workspace(
    root: Path | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    plugins: PluginHost | None = None,
    store: StoreSettings | None = None,
    execution_policy: ExecutionPolicy | None = None,
) -> LoadedWorkspace:
    """Load everything for one workspace. `root` is `-w` (None = discover from `cwd`); `env` defaults to the process
        environment; `plugins` defaults to the installed entry points filtered by `BEARAGENT_LOAD_PLUGINS`; `store` is the
        `store:` of the server config serving the workspace (it outranks the user config's; `config.store` is the one
        that applies: `config/store_settings.choose_store`); `execution_policy` is the server config's for the workspace
    (`none` tightens: `config/execution.py`). Never raises for a broken file: every problem is a
        diagnostic.

        Only composition: the order of the config files is `config/config_files.py`, every source and its rank
        `config/workspace.py`, and each registry loads itself from the files and the plugins' contributions."""
    environ: Mapping[str, str] = dict(os.environ) if env is None else env
    ws_root = discover_workspace(cwd or Path.cwd(), root)
    user_dir = user_config_dir(environ)
    host = plugins if plugins is not None else PluginHost.from_entry_points(environ)
    contrib = host.contributions()
    diags: list[Diagnostic] = []

    files = load_config_files(ws_root, user_dir, diags)
    config, compat = files.config, files.compat
    config = config.model_copy(update={"store": choose_store(config.store, environ, server=store)})
    plugin_dirs = plugin_dir_sources(contrib.agent_dirs, contrib.skill_dirs, diags)
    settings_data = [cf.doc.data for cf in files.claude if cf.doc is not None]
    claude = _ClaudePluginParts.of(active_plugins(user_dir, ws_root, settings_data, diags), diags)

    models = load_models(files, contrib, builtin_plugin=BUILTIN_PLUGIN, env=environ, default_model=config.default_model)
    agent_srcs = agent_sources(
        ws_root,
        user_dir,
        compat=compat,
        plugins=(*plugin_dirs.agents, *claude.agents),
        builtin_dir=builtin_agents_dir(),
    )
    agents = load_agents([(s, agent_files(s.directory)) for s in agent_srcs], ws_root, environ)
    skills = load_skills(
        skill_sources(
            ws_root,
            user_dir,
            compat=compat,
            plugins=(*plugin_dirs.skills, *claude.skills),
            builtin_dir=builtin_skills_dir(),
        )
    )
    actions = load_actions(
        action_sources(ws_root, user_dir), command_sources(ws_root, user_dir, compat=compat, plugins=claude.commands)
    )
    diags.extend(command_model_diagnostics(actions.all(), models))
    from bearagent.runtime.agent_model import alias_diagnostics

    diags.extend(alias_diagnostics(agents.all(), models))  # `model: sonnet` with no `sonnet` entry, at load
    mcp = load_mcp_servers(files, ws_root, contrib, claude.mcp)
    a2a_agents = _a2a_agents(files, diags)
    hooks = load_hooks(files, contrib.hook_handlers, root=ws_root, env=environ, plugin_hooks=claude.hooks)
    # after the registries: a server's `none` stops hooks and MCP servers from running (`config/execution.py`) but
    # leaves what is loaded, so the trust surface is the one `bearagent trust` saw
    config = with_server_policy(config, execution_policy)
    config = _settings_model(files, models, config, diags)
    diags.extend(_default_diagnostics(config, files.declaring(), agents, models))

    return LoadedWorkspace(
        root=ws_root,
        user_dir=user_dir,
        env=environ,
        config=config,
        config_files=files.lowest_first(),
        agents=agents,
        models=models,
        skills=skills,
        actions=actions,
        mcp=mcp,
        hooks=hooks,
        plugins=host,
        a2a_agents=a2a_agents,
        instructions=_instructions(ws_root, diags, environ),
        load_diagnostics=diags,
        settings_env=files.settings_env(),
        claude_plugins=claude.active,
        api_key_helper=next(
            (
                (str(cf.settings["api_key_helper"]), str(cf.path))
                for cf in reversed(files.claude)
                if "api_key_helper" in cf.settings
            ),
            None,
        ),
        available_models=_available_models(files),
        fallback_model=_fallback_model(files, models, diags),
        status_line=next(
            (
                (str(cf.settings["status_line"]), str(cf.path))
                for cf in reversed(files.claude)
                if "status_line" in cf.settings
            ),
            None,
        ),
        output_style=load_output_style(
            chosen_style(files.claude), [*style_dirs(ws_root, user_dir, compat=compat), *claude.output_styles], diags
        ),
    )


def _a2a_agents(files: ConfigFiles, diags: list[Diagnostic]) -> tuple[A2AAgentSpec, ...]:
    """`a2a_agents:` of the workspace's config.yaml, then the user's (a name the workspace uses already is skipped)."""
    from bearagent.a2a.specs import parse_a2a_agents

    found: dict[str, A2AAgentSpec] = {}
    for cf in (files.workspace, files.user):
        if cf is None or not cf.a2a_agents:
            continue
        specs, problems = parse_a2a_agents(cf.a2a_agents, path=cf.path, level=cf.level, line_of=cf.line_of)
        diags.extend(problems)
        for spec in specs:
            found.setdefault(spec.name, spec)
    return tuple(found.values())


def _settings_model(
    files: ConfigFiles, models: ModelRegistry, config: BearConfig, diags: list[Diagnostic]
) -> BearConfig:
    """Claude Code's `model` (the highest settings file that sets one) as `default_model`, unless the workspace's
    config.yaml sets `default_model` (it outranks the settings files). It names a model entry, or the `model:` of
    one (`claude-sonnet-4-5`); anything else is a warning and the default stays."""
    if files.workspace is not None and "default_model" in files.workspace.settings:
        return config
    chosen = next(
        ((str(cf.settings["claude_model"]), cf) for cf in reversed(files.claude) if "claude_model" in cf.settings), None
    )
    if chosen is None:
        return config
    name, cf = chosen
    entry = _named_model(models, cf, "model", name, "the default model runs", diags)
    if entry is None:
        return config
    return config.model_copy(update={"default_model": entry.ref})


def _fallback_model(files: ConfigFiles, models: ModelRegistry, diags: list[Diagnostic]) -> str | None:
    """`fallbackModel` of the highest settings file that sets one, as the ref of the entry it names (an entry's
    name or its `model:`); anything else is a warning and no fallback."""
    cf = next((cf for cf in reversed(files.claude) if "fallback_model" in cf.settings), None)
    if cf is None:
        return None
    entry = _named_model(
        models, cf, "fallbackModel", str(cf.settings["fallback_model"]), "runs have no fallback model", diags
    )
    return entry.ref if entry is not None else None


def _named_model(
    models: ModelRegistry, cf: ConfigFile, key: str, name: str, otherwise: str, diags: list[Diagnostic]
) -> ModelEntry | None:
    """The model entry a settings file's `key` names (an entry's name or its `model:`); anything else is a warning
    that says what happens `otherwise`, and None."""
    entry = models.get(name) or next((e for e in models.all() if e.model == name), None)
    if entry is None:
        diags.append(
            Diagnostic(
                severity="warning",
                code="config.unknown_settings_model",
                message=f"{key} {name!r} in {cf.path.name} is not a model entry (nor an entry's model); {otherwise}",
                source=str(cf.path),
                line=cf.line_of(key),
                field=key,
                fix=f"use one of: {name_list(models.refs()) or 'none'}, or add a `models:` entry named {name!r}",
            )
        )
    return entry


def _available_models(files: ConfigFiles) -> tuple[tuple[str, ...], str] | None:
    """`availableModels` of the settings files (both files' names add up), with the file that set it first."""
    found = [cf for cf in files.claude if "available_models" in cf.settings]
    if not found:
        return None
    names: list[str] = []
    for cf in found:
        names.extend(n for n in cast(tuple[str, ...], cf.settings["available_models"]) if n not in names)
    return tuple(names), str(found[-1].path)


@dataclass(frozen=True, slots=True)
class _ClaudePluginParts:
    """What the enabled Claude Code plugins add to each registry."""

    active: tuple[ActivePlugin, ...]
    agents: tuple[Source, ...]
    skills: tuple[Source, ...]
    commands: tuple[Source, ...]
    hooks: tuple[tuple[Path, Mapping[str, object], Level], ...]
    mcp: tuple[tuple[Path, Mapping[str, object], Source], ...]
    output_styles: tuple[Path, ...] = ()

    @classmethod
    def of(cls, active: Sequence[ActivePlugin], diags: list[Diagnostic]) -> _ClaudePluginParts:
        agents: list[Source] = []
        skills: list[Source] = []
        commands: list[Source] = []
        hooks: list[tuple[Path, Mapping[str, object], Level]] = []
        mcp: list[tuple[Path, Mapping[str, object], Source]] = []
        kept: list[ActivePlugin] = []
        styles: list[Path] = []
        for order, plugin in enumerate(active):
            m = plugin.manifest
            ws = plugin.level == "workspace"
            try:
                plugin_hook_files = plugin_hooks(m, plugin.data_dir)
                servers = plugin_mcp_servers(m, plugin.data_dir)
            except PluginError as exc:
                diags.append(
                    Diagnostic(
                        severity="error",
                        code="plugin.invalid",
                        message=f"Claude Code plugin {plugin.id!r}: {exc.message}",
                        source=str(m.root),
                        subject=m.name,
                        fix=exc.fix or "fix the plugin's file, or disable it: bearagent plugins disable " + m.name,
                    )
                )
                continue
            kept.append(plugin)
            agents.extend(claude_plugin_source(m.name, d, order, workspace=ws) for d in m.agents)
            skills.extend(claude_plugin_source(m.name, d, order, workspace=ws) for d in m.skills)
            commands.extend(claude_plugin_source(m.name, d, order, workspace=ws) for d in m.commands)
            hooks.extend((path, raw, plugin.level) for path, raw in plugin_hook_files)
            source = claude_plugin_source(m.name, m.root, order, workspace=ws)
            mcp.extend((path, raw, source) for path, raw in servers)
            styles.extend(m.output_styles)  # below the workspace's and the user's own style folders
        return cls(tuple(kept), tuple(agents), tuple(skills), tuple(commands), tuple(hooks), tuple(mcp), tuple(styles))


def _default_diagnostics(
    config: BearConfig, where: ConfigFile | None, agents: AgentRegistry, models: ModelRegistry
) -> list[Diagnostic]:
    """`default_agent` and `default_model` must name a loaded agent and a configured model entry."""
    out: list[Diagnostic] = []
    if config.default_agent and agents.get(config.default_agent) is None:
        out.append(
            Diagnostic(
                severity="error",
                code="config.unknown_default_agent",
                message=f"default_agent {config.default_agent!r} is not a known agent",
                source=str(where.path) if where else "",
                line=where.line_of("default_agent") if where else None,
                field="default_agent",
                fix=f"use one of: {name_list(agents.names()) or 'none'}",
            )
        )
    if config.default_model and models.get(config.default_model) is None:
        out.append(
            Diagnostic(
                severity="error",
                code="config.unknown_default_model",
                message=f"default_model {config.default_model!r} is not a configured model entry",
                source=str(where.path) if where else "",
                line=where.line_of("default_model") if where else None,
                field="default_model",
                fix=f"use one of: {name_list(models.refs()) or 'none (add an entry under models:)'}",
            )
        )
    return out

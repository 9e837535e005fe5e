"""Invocation projection: for one agent at run start, turn the separate registries into the one list of tool
descriptors the model sees, plus a map projected-name -> (source kind, internal name, executor).

Only this module unifies capabilities, and only for one run. A tool name the model returns that is not in the map
is a failed tool call (the runtime's job), never a lookup in some other registry.

Rules (docs/config.md#tools): the agent's `tools`, `disallowed_tools` and `mcp` lists are resolved once into a
`ToolGrant` (domain/grant.py), which the gate's policy uses too: `disallowed_tools` is removed first, then `tools`
applies (`*` = every native and plugin tool; omitted = the default set, i.e. the native tools; `Bash(git *)` grants
Bash and pre-approves those calls at the gate). Skills become the single `Skill` tool (its `name` an enum of the
allowed skills; absent when none). Each allowed action is a tool `action__<name>`. `subagents` adds `Task`
(`subagent_type` enum; omitted on a primary agent = every other agent of mode subagent or all, as in Claude Code; its
description lists each with its description so the model can choose), `switch` adds `SwitchAgent` (`agent` enum). MCP tools are projected as
`mcp__<server>__<tool>`. A chat workspace projects no tools.

The pieces it composes: the model an agent runs with (`agent_model.py`), the runtime tools' descriptors and the
Task listing (`runtime_tools.py`), provider-safe, unique names (`tool_names.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.errors import BearAgentError
from bearagent.domain.grant import ToolGrant
from bearagent.domain.models import ToolDescriptor
from bearagent.domain.specs import ActionSpec, AgentSpec, ModelEntry, SkillSpec
from bearagent.domain.tools import ToolSource, ToolSpec
from bearagent.ports import Tool
from bearagent.runtime.agent_model import ModelLookup, resolve_agent_model
from bearagent.runtime.agent_refs import agent_warning, agents_for, did_you_mean, mcp_servers_for
from bearagent.runtime.runtime_tools import (
    RUNTIME_TOOL_NAMES,
    SKILL_TOOL,
    SWITCH_TOOL,
    TASK_LISTING_CHARS,
    TASK_TOOL,
    agent_listing,
    default_subagents,
    skill_spec,
    switch_spec,
    task_entry_names,
    task_spec,
)
from bearagent.runtime.tool_names import action_tool_name, check_collisions, mcp_tool_name, provider_safe_name


@dataclass(frozen=True, slots=True)
class AvailableTool:
    tool: Tool
    origin: str  # "native" or "plugin:<name>"


@dataclass(frozen=True, slots=True)
class Capabilities:
    """Everything an agent could be granted in this workspace (built by `app.LoadedWorkspace`)."""

    tools: Mapping[str, AvailableTool]
    default_tools: frozenset[str]
    skills: Mapping[str, SkillSpec]
    actions: Mapping[str, ActionSpec]
    agents: Mapping[str, AgentSpec]
    mcp_servers: Sequence[str]
    workspace_kind: Literal["project", "chat"] = "project"
    execution_policy: Literal["local", "none"] = "local"
    """`none` (a chat workspace, or one marked so: `config/execution.py`): no tool is projected."""
    invocable_skills: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The skills the model may load (not `disable-model-invocation`), sorted: what an agent without a `skills` list
    is offered, computed once rather than for every agent projected."""

    def __post_init__(self) -> None:
        invocable = tuple(name for name in sorted(self.skills) if self.skills[name].model_invocable)
        object.__setattr__(self, "invocable_skills", invocable)


@dataclass(frozen=True, slots=True)
class ProjectedTool:
    """One tool as offered to the model. `tool` is the executor; None for runtime tools (Skill, Task, SwitchAgent,
    actions) until the runtime binds one with `InvocationProjection.bind`."""

    name: str
    source: ToolSource
    internal_name: str
    origin: str
    spec: ToolSpec
    tool: Tool | None = None

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(name=self.name, description=self.spec.description, input_schema=self.spec.input_schema)


@dataclass(frozen=True)
class InvocationProjection:
    agent: AgentSpec
    model: ModelEntry | None
    tools: tuple[ProjectedTool, ...]
    skills: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    subagents: tuple[str, ...] = ()
    switch_targets: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    grant: ToolGrant = field(default_factory=ToolGrant)
    """The agent's resolved `tools`/`disallowed_tools`/`mcp` lists; the gate's policy enforces the same value."""
    _index: dict[str, ProjectedTool] = field(default_factory=lambda: {}, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update({t.name: t for t in self.tools})

    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        return tuple(t.descriptor for t in self.tools)

    def lookup(self, projected_name: str) -> ProjectedTool | None:
        """Exact lookup of a name the model returned; None means a failed tool call."""
        return self._index.get(projected_name)

    def unbound(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools if t.tool is None)

    def bind(self, executors: Mapping[str, Tool]) -> InvocationProjection:
        """A copy where each projected name in `executors` gets that executor (runtime tools, actions)."""
        unknown = sorted(set(executors) - set(self._index))
        if unknown:
            raise ValueError(f"cannot bind tools that are not projected: {', '.join(unknown)}")
        tools = tuple(replace(t, tool=executors[t.name]) if t.name in executors else t for t in self.tools)
        return InvocationProjection(
            self.agent,
            self.model,
            tools,
            self.skills,
            self.actions,
            self.subagents,
            self.switch_targets,
            self.mcp_servers,
            self.diagnostics,
            self.grant,
        )

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")


def grant_for(agent: AgentSpec) -> ToolGrant:
    """The agent's `tools`, `disallowed_tools` and `mcp` lists resolved into the one value projection and gate use."""
    return ToolGrant.resolve(agent.tools, agent.disallowed_tools, mcp=agent.mcp)


def project_invocation(
    agent: AgentSpec,
    caps: Capabilities,
    models: ModelLookup,
    *,
    default_model: str | None,
    parent_model: ModelEntry | None = None,
    mcp_tools: Iterable[tuple[str, ToolSpec]] | None = None,
    require_model: bool = True,
) -> InvocationProjection:
    """Project `agent`'s capabilities into tool descriptors. `mcp_tools` are `(server, spec)` pairs from the MCP
    connection manager (None = not connected yet). Raises `BearAgentError` on a name collision between sources (both
    origins named) and, when `require_model`, on a model that does not resolve."""
    diags: list[Diagnostic] = []
    model: ModelEntry | None = None
    try:
        model, model_diags = resolve_agent_model(agent, models, default_model=default_model, parent_model=parent_model)
        diags.extend(model_diags)
    except BearAgentError as exc:
        if require_model:
            raise
        diags.append(
            agent_warning(
                agent, "agent.model_unresolved", "model", exc.info.message, exc.hint or "fix the model ref", "error"
            )
        )
    if caps.workspace_kind == "chat" or caps.execution_policy == "none":
        chat = caps.workspace_kind == "chat"
        diags.append(
            Diagnostic(
                severity="info",
                code="projection.chat" if chat else "projection.no_execution",
                message="chat workspace: no tools are projected"
                if chat
                else "execution_policy none: no tools are projected",
                subject=agent.name,
            )
        )
        return InvocationProjection(agent, model, (), diagnostics=tuple(diags), grant=grant_for(agent))

    grant = grant_for(agent)
    for problem in grant.problems:
        diags.append(
            agent_warning(
                agent,
                "agent.invalid_tool_entry",
                problem.key,
                f"{problem.key} entry {problem.entry!r} is not 'Tool' or 'Tool(specifier)'",
                "write a tool name, optionally with a specifier in parentheses, e.g. 'Bash(git *)'",
                "error",
            )
        )
    out = _granted_tools(agent, caps, grant, diags)
    skill_names = _skills(agent, caps, grant, diags)
    if skill_names:
        out.append(ProjectedTool(SKILL_TOOL, "skill", SKILL_TOOL, "runtime", skill_spec(skill_names)))
    action_names = _actions(agent, caps, grant, diags, out)
    subagents = _subagents(agent, caps, grant, diags)
    if subagents and grant.permits(TASK_TOOL):
        out.append(_task_tool(agent, caps, subagents, diags))
    targets = agents_for(
        agent,
        agent.switch,
        caps.agents,
        "switch",
        lambda a: a.is_primary,
        "a primary agent (mode: primary or all)",
        diags,
    )
    if targets and grant.permits(SWITCH_TOOL):
        spec = switch_spec({n: caps.agents[n].description for n in targets})
        out.append(ProjectedTool(SWITCH_TOOL, "runtime", SWITCH_TOOL, "runtime", spec))
    allowed_servers = mcp_servers_for(agent, caps.mcp_servers, diags)
    out.extend(_mcp_tools(grant, mcp_tools or ()))

    check_collisions(agent.name, out)
    return InvocationProjection(
        agent,
        model,
        tuple(out),
        skills=tuple(skill_names),
        actions=tuple(action_names),
        subagents=tuple(subagents),
        switch_targets=tuple(targets),
        mcp_servers=tuple(sorted(allowed_servers)),
        diagnostics=tuple(diags),
        grant=grant,
    )


def _granted_tools(
    agent: AgentSpec, caps: Capabilities, grant: ToolGrant, diags: list[Diagnostic]
) -> list[ProjectedTool]:
    """The native and plugin tools the grant names (omitted: the default set; `*`: every one)."""
    if grant.listed is None:
        wanted = sorted(caps.default_tools)
    elif grant.everything:
        wanted = sorted(caps.tools)
    else:
        wanted = list(grant.listed)
        unknown = [n for n in wanted if n not in caps.tools and n not in RUNTIME_TOOL_NAMES]
        for name in unknown:
            diags.append(
                agent_warning(
                    agent,
                    "agent.unknown_tool",
                    "tools",
                    f"tool {name!r} is not available{did_you_mean(name, caps.tools)}; it is skipped",
                    "fix the name, or install the plugin that provides it",
                )
            )
        if agent.tools and not grant.mcp_entries and all(n in unknown for n in wanted):
            diags.append(
                agent_warning(
                    agent,
                    "agent.no_tools_resolved",
                    "tools",
                    "none of the names in `tools` is an available tool",
                    f"available: {name_list(sorted(caps.tools))}",
                    "error",
                )
            )
    out: list[ProjectedTool] = []
    for name in wanted:
        available = caps.tools.get(name)
        if available is None or not grant.permits(name):
            continue
        source: ToolSource = "native" if available.origin == "native" else "plugin"
        out.append(
            ProjectedTool(provider_safe_name(name), source, name, available.origin, available.tool.spec, available.tool)
        )
    return out


def _skills(agent: AgentSpec, caps: Capabilities, grant: ToolGrant, diags: list[Diagnostic]) -> list[str]:
    """The skills the one `Skill` tool offers (none when the grant removes `Skill`)."""
    skill_names: list[str] = []
    if grant.permits(SKILL_TOOL):
        if agent.skills is None:
            return list(caps.invocable_skills)
        for name in dict.fromkeys(agent.skills):
            if name in caps.skills:
                if caps.skills[name].model_invocable:  # `disable-model-invocation`: only `/name` loads it
                    skill_names.append(name)
            else:
                diags.append(
                    agent_warning(
                        agent,
                        "agent.unknown_skill",
                        "skills",
                        f"skill {name!r} does not exist{did_you_mean(name, caps.skills)}; it is skipped",
                        "`bearagent skills list` shows the skills",
                    )
                )
    return skill_names


def _actions(
    agent: AgentSpec, caps: Capabilities, grant: ToolGrant, diags: list[Diagnostic], out: list[ProjectedTool]
) -> list[str]:
    """One `action__<name>` tool each for the agent's actions (appended to `out`); returns their names."""
    action_names: list[str] = []
    for name in dict.fromkeys(agent.actions or ()):
        action = caps.actions.get(name)
        if action is None:
            diags.append(
                agent_warning(
                    agent,
                    "agent.unknown_action",
                    "actions",
                    f"action {name!r} does not exist{did_you_mean(name, caps.actions)}; it is skipped",
                    "`bearagent actions list` shows the actions",
                )
            )
            continue
        projected = action_tool_name(name)
        if not grant.permits(projected) or grant.is_removed(name):
            continue
        action_names.append(name)
        spec = ToolSpec(
            name=projected, description=action.description, input_schema=action.inputs, side_effect="execute"
        )
        out.append(ProjectedTool(projected, "action", name, f"action {action.source or name}", spec))
    return action_names


def _subagents(agent: AgentSpec, caps: Capabilities, grant: ToolGrant, diags: list[Diagnostic]) -> list[str]:
    """The agents `Task` may delegate to: `subagents`, else `Agent(a, b)` entries of `tools`, else the default."""
    if agent.subagents is None:
        named = task_entry_names(agent)
        if not named:
            return default_subagents(agent, caps.agents, grant)
        names: Sequence[str] = named  # Claude Code's `tools: Agent(a, b)`: delegation to those agents only
        key = "tools"
    else:
        names, key = agent.subagents, "subagents"
    return agents_for(
        agent, names, caps.agents, key, lambda a: a.is_subagent, "a subagent (mode: subagent or all)", diags
    )


def _task_tool(
    agent: AgentSpec, caps: Capabilities, subagents: Sequence[str], diags: list[Diagnostic]
) -> ProjectedTool:
    listing, cut = agent_listing([caps.agents[n] for n in subagents])
    if cut:
        diags.append(
            Diagnostic(
                severity="info",
                code="projection.task_listing_cut",
                message=f"agent {agent.name!r}: the Task tool lists {len(cut)} agent(s) without their "
                f"description (the listing is limited to {TASK_LISTING_CHARS:,} characters): {name_list(cut)}",
                source=agent.source,
                subject=agent.name,
                fix="shorten the descriptions of the agents, or narrow the agent's `subagents:` list",
            )
        )
    return ProjectedTool(TASK_TOOL, "runtime", TASK_TOOL, "runtime", task_spec(subagents, listing))


def _mcp_tools(grant: ToolGrant, mcp_tools: Iterable[tuple[str, ToolSpec]]) -> list[ProjectedTool]:
    out: list[ProjectedTool] = []
    for server, mcp_spec in mcp_tools:
        projected = mcp_tool_name(server, mcp_spec.name)
        # the gate checks the projected name, so both must pass (they differ only for unusual server names)
        if not grant.permits_mcp(server, mcp_spec.name) or not grant.permits(projected):
            continue
        out.append(
            ProjectedTool(
                projected,
                "mcp",
                f"{server}.{mcp_spec.name}",
                f"mcp server {server}",
                mcp_spec.model_copy(update={"name": projected}),
            )
        )
    return out

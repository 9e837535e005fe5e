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
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from bearagent.domain._base import JsonValue
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.grant import ToolGrant
from bearagent.domain.models import ToolDescriptor
from bearagent.domain.specs import ActionSpec, AgentSpec, ModelEntry, SkillSpec
from bearagent.domain.tools import ToolSource, ToolSpec
from bearagent.ports import Tool

PROVIDER_SAFE_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CLAUDE_MODEL_ALIASES = frozenset({"sonnet", "opus", "haiku", "fable"})
SKILL_TOOL = "Skill"
TASK_TOOL = "Task"
SWITCH_TOOL = "SwitchAgent"
ACTION_PREFIX = "action__"


class ModelLookup(Protocol):
    """What the projection needs of the model registry (`ModelRegistry` satisfies it)."""

    def get(self, ref: str) -> ModelEntry | None: ...

    def resolve(self, ref: str, *, where: str = ...) -> ModelEntry: ...

    def all(self) -> list[ModelEntry]: ...


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


def provider_safe_name(name: str) -> str:
    """`name` with every character outside `[A-Za-z0-9_-]` replaced by `_`, shortened to 64 with a hash suffix."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "_"
    if len(safe) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        safe = f"{safe[:55]}_{digest}"
    return safe


def model_alias_message(ref: str) -> str:
    """The one wording of `agent.model_alias_inherited` (load time and projection agree, so the run-start summary
    and `doctor` fold the same warning of many files into one line)."""
    return (
        f"model {ref!r} is a Claude Code alias and no model entry is named {ref!r}; the agent inherits the default "
        "model"
    )


def alias_diagnostics(agents: Iterable[AgentSpec], models: ModelLookup) -> list[Diagnostic]:
    """`agent.model_alias_inherited` for each agent whose `model` is an unresolved Claude alias (at load time)."""
    out: list[Diagnostic] = []
    for agent in agents:
        ref = agent.model
        if ref is not None and ref in CLAUDE_MODEL_ALIASES and models.get(ref) is None:
            out.append(_alias_diagnostic(agent, ref))
    return out


def _alias_diagnostic(agent: AgentSpec, ref: str) -> Diagnostic:
    return Diagnostic(
        severity="warning",
        code="agent.model_alias_inherited",
        message=model_alias_message(ref),
        source=agent.source,
        field="model",
        subject=agent.name,
        fix=f"add a `{ref}:` entry under `models:` in config.yaml, or write a model ref",
    )


def resolve_agent_model(
    agent: AgentSpec, models: ModelLookup, *, default_model: str | None, parent_model: ModelEntry | None = None
) -> tuple[ModelEntry, list[Diagnostic]]:
    """The model entry an agent runs with. Order: the agent's `model` (a Claude alias resolves to an entry of that
    name, else inherits with a warning) > the parent run's model (`inherit` for subagents) > `default_model` > the
    only configured entry. Raises a configuration error naming the agent and the close matches."""
    diags: list[Diagnostic] = []
    ref = agent.model
    if ref is not None and ref in CLAUDE_MODEL_ALIASES and models.get(ref) is None:
        diags.append(_alias_diagnostic(agent, ref))
        ref = None
    if ref is not None:
        return models.resolve(ref, where=f"agent {agent.name!r} ({agent.source or 'built-in'}): model"), diags
    if parent_model is not None:
        return parent_model, diags
    if default_model:
        return models.resolve(default_model, where="config.yaml: default_model"), diags
    entries = models.all()
    if len(entries) == 1:
        return entries[0], diags
    raise BearAgentError(
        ErrorInfo.of(
            "configuration", "no_model", f"agent {agent.name!r} has no model and config.yaml sets no default_model"
        ),
        hint="set `default_model: <entry>` in .bearagent/config.yaml (or `model:` in the agent file)"
        + (
            f"; entries: {', '.join(e.ref for e in entries)}"
            if entries
            else "; `bearagent init` scaffolds a working config"
        ),
    )


def _suggest(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _warn(
    agent: AgentSpec, code: str, key: str, message: str, fix: str, severity: Literal["warning", "error"] = "warning"
) -> Diagnostic:
    return Diagnostic(
        severity=severity,
        code=code,
        message=f"agent {agent.name!r}: {message}",
        source=agent.source,
        field=key,
        subject=agent.name,
        fix=fix,
    )


def _object_schema(properties: Mapping[str, JsonValue], required: Sequence[str]) -> dict[str, JsonValue]:
    return {"type": "object", "properties": dict(properties), "required": list(required), "additionalProperties": False}


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
            _warn(agent, "agent.model_unresolved", "model", exc.info.message, exc.hint or "fix the model ref", "error")
        )
    if caps.workspace_kind == "chat":
        diags.append(
            Diagnostic(
                severity="info",
                code="projection.chat",
                message="chat workspace: no tools are projected",
                subject=agent.name,
            )
        )
        return InvocationProjection(agent, model, (), diagnostics=tuple(diags), grant=grant_for(agent))

    out: list[ProjectedTool] = []
    grant = grant_for(agent)
    for problem in grant.problems:
        diags.append(
            _warn(
                agent,
                "agent.invalid_tool_entry",
                problem.key,
                f"{problem.key} entry {problem.entry!r} is not 'Tool' or 'Tool(specifier)'",
                "write a tool name, optionally with a specifier in parentheses, e.g. 'Bash(git *)'",
                "error",
            )
        )
    runtime_names = {SKILL_TOOL, TASK_TOOL, SWITCH_TOOL, "Agent"}  # Agent: Claude Code's current name of Task

    # native + plugin tools
    if grant.listed is None:
        wanted = sorted(caps.default_tools)
    elif grant.everything:
        wanted = sorted(caps.tools)
    else:
        wanted = list(grant.listed)
        unknown = [n for n in wanted if n not in caps.tools and n not in runtime_names]
        for name in unknown:
            diags.append(
                _warn(
                    agent,
                    "agent.unknown_tool",
                    "tools",
                    f"tool {name!r} is not available{_suggest(name, caps.tools)}; it is skipped",
                    "fix the name, or install the plugin that provides it",
                )
            )
        if agent.tools and not grant.mcp_entries and all(n in unknown for n in wanted):
            diags.append(
                _warn(
                    agent,
                    "agent.no_tools_resolved",
                    "tools",
                    "none of the names in `tools` is an available tool",
                    f"available: {', '.join(sorted(caps.tools))}",
                    "error",
                )
            )
    for name in wanted:
        available = caps.tools.get(name)
        if available is None or not grant.permits(name):
            continue
        source: ToolSource = "native" if available.origin == "native" else "plugin"
        out.append(
            ProjectedTool(provider_safe_name(name), source, name, available.origin, available.tool.spec, available.tool)
        )

    # skills -> one Skill tool
    skill_names: list[str] = []
    if grant.permits(SKILL_TOOL):
        candidates = sorted(caps.skills) if agent.skills is None else list(dict.fromkeys(agent.skills))
        for name in candidates:
            if name in caps.skills:
                skill_names.append(name)
            else:
                diags.append(
                    _warn(
                        agent,
                        "agent.unknown_skill",
                        "skills",
                        f"skill {name!r} does not exist{_suggest(name, caps.skills)}; it is skipped",
                        "`bearagent skills list` shows the skills",
                    )
                )
    if skill_names:
        schema = _object_schema(
            {
                "name": {"type": "string", "enum": list(skill_names), "description": "the skill to load"},
                "file": {
                    "type": "string",
                    "description": "optional: one of the skill's bundled files (as listed), to read its content",
                },
            },
            ["name"],
        )
        spec = ToolSpec(
            name=SKILL_TOOL,
            description="Load a skill: returns its instructions and the list of its bundled files. Call it again with "
            "`file` to read a bundled file. Use it when a task matches a skill in the catalog.",
            input_schema=schema,
        )
        out.append(ProjectedTool(SKILL_TOOL, "skill", SKILL_TOOL, "runtime", spec))

    # actions -> one tool each
    action_names: list[str] = []
    for name in dict.fromkeys(agent.actions or ()):
        action = caps.actions.get(name)
        if action is None:
            diags.append(
                _warn(
                    agent,
                    "agent.unknown_action",
                    "actions",
                    f"action {name!r} does not exist{_suggest(name, caps.actions)}; it is skipped",
                    "`bearagent actions list` shows the actions",
                )
            )
            continue
        projected = provider_safe_name(ACTION_PREFIX + name)
        if not grant.permits(projected) or grant.is_removed(name):
            continue
        action_names.append(name)
        spec = ToolSpec(
            name=projected, description=action.description, input_schema=action.inputs, side_effect="execute"
        )
        out.append(ProjectedTool(projected, "action", name, f"action {action.source or name}", spec))

    # subagents -> Task
    if agent.subagents is None:
        subagents = default_subagents(agent, caps, grant)
        named = _task_entry_names(agent)
        if named:  # Claude Code's `tools: Agent(a, b)`: delegation to those agents only
            subagents = _agents_for(
                agent, named, caps, "tools", lambda a: a.is_subagent, "a subagent (mode: subagent or all)", diags
            )
    else:
        subagents = _agents_for(
            agent,
            agent.subagents,
            caps,
            "subagents",
            lambda a: a.is_subagent,
            "a subagent (mode: subagent or all)",
            diags,
        )
    if subagents and grant.permits(TASK_TOOL):
        listing, cut = agent_listing([caps.agents[n] for n in subagents])
        if cut:
            diags.append(
                Diagnostic(
                    severity="info",
                    code="projection.task_listing_cut",
                    message=f"agent {agent.name!r}: the Task tool lists {len(cut)} agent(s) without their "
                    f"description (the listing is limited to {TASK_LISTING_CHARS:,} characters): {', '.join(cut)}",
                    source=agent.source,
                    subject=agent.name,
                    fix="shorten the descriptions of the agents, or narrow the agent's `subagents:` list",
                )
            )
        schema = _object_schema(
            {
                "subagent_type": {
                    "type": "string",
                    "enum": list(subagents),
                    "description": "which agent runs the task",
                },
                "prompt": {"type": "string", "description": "the complete task for the subagent"},
                "description": {"type": "string", "description": "a short (3-5 word) label of the task"},
            },
            ["subagent_type", "prompt"],
        )
        spec = ToolSpec(
            name=TASK_TOOL,
            description="Delegate a task to a subagent, which runs it in a fresh context and returns its final "
            "answer. Choose the agent whose description fits the task; use it proactively when a description says "
            f"so.\nAvailable agents:\n{listing}",
            input_schema=schema,
            side_effect="execute",
        )
        out.append(ProjectedTool(TASK_TOOL, "runtime", TASK_TOOL, "runtime", spec))

    # switch -> SwitchAgent
    targets = _agents_for(
        agent, agent.switch, caps, "switch", lambda a: a.is_primary, "a primary agent (mode: primary or all)", diags
    )
    if targets and grant.permits(SWITCH_TOOL):
        listing = "\n".join(f"- {n}: {caps.agents[n].description}" for n in targets)
        schema = _object_schema(
            {
                "agent": {"type": "string", "enum": list(targets)},
                "reason": {"type": "string", "description": "why the switch"},
            },
            ["agent"],
        )
        spec = ToolSpec(
            name=SWITCH_TOOL,
            description=f"Hand this session over to another primary agent.\nAvailable agents:\n{listing}",
            input_schema=schema,
        )
        out.append(ProjectedTool(SWITCH_TOOL, "runtime", SWITCH_TOOL, "runtime", spec))

    # MCP
    allowed_servers = _mcp_servers(agent, caps, diags)
    for server, mcp_spec in mcp_tools or ():
        projected = provider_safe_name(f"mcp__{server}__{mcp_spec.name}")
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

    _check_collisions(agent, out)
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


TASK_LISTING_CHARS = 10_000
"""The most the descriptions in the Task tool's agent listing may take (the model reads it on every call); agents
past it are listed by name, and past TASK_NAMES_CHARS only counted (the enum still names each)."""
TASK_NAMES_CHARS = 15_000
TASK_DESCRIPTION_CHARS = 600
"""The most one agent's description takes in that listing (a wizard-written one with examples runs to pages)."""


def default_subagents(agent: AgentSpec, caps: Capabilities, grant: ToolGrant) -> list[str]:
    """`subagents` omitted: a primary agent delegates to every other agent whose mode allows it (subagent or all),
    as Claude Code's main agent does; a `mode: subagent` agent to none. An explicit `tools` list is a restriction
    (as in Claude Code): then only when it names `Task` or `Agent` (or is `*`)."""
    if not agent.is_primary:
        return []
    if grant.restricts_tools and not {"Task", "Agent"} & set(grant.listed or ()):
        return []
    return sorted(n for n, a in caps.agents.items() if n != agent.name and a.is_subagent)


_TASK_ENTRY = re.compile(r"^(?:Task|Agent)\((?P<names>[^()]*)\)$")


def _task_entry_names(agent: AgentSpec) -> list[str]:
    """The agent names of `Agent(a, b)` / `Task(a, b)` entries in `tools`."""
    names: list[str] = []
    for entry in agent.tools or ():
        match = _TASK_ENTRY.match(entry.strip())
        if match is not None:
            names.extend(n.strip() for n in match.group("names").split(",") if n.strip() and n.strip() != "*")
    return names


def agent_listing(agents: Sequence[AgentSpec]) -> tuple[str, list[str]]:
    """`- name: description` lines for the Task tool (whitespace collapsed, each description at most
    TASK_DESCRIPTION_CHARS); past TASK_LISTING_CHARS the rest are listed by name only. Returns (text, names cut)."""
    lines: list[str] = []
    cut: list[str] = []
    total = 0
    for index, target in enumerate(agents):
        text = " ".join(target.description.split())
        if len(text) > TASK_DESCRIPTION_CHARS:
            text = text[: TASK_DESCRIPTION_CHARS - 1].rstrip() + "…"
        line = f"- {target.name}: {text}"
        if cut or total + len(line) > TASK_LISTING_CHARS:
            cut.append(target.name)
            line = f"- {target.name}"
        if total + len(line) > TASK_NAMES_CHARS:
            cut.extend(a.name for a in agents[index + 1 :])
            lines.append(f"- … and {len(agents) - index} more (every subagent_type value is an agent)")
            break
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines), cut


def grant_for(agent: AgentSpec) -> ToolGrant:
    """The agent's `tools`, `disallowed_tools` and `mcp` lists resolved into the one value projection and gate use."""
    return ToolGrant.resolve(agent.tools, agent.disallowed_tools, mcp=agent.mcp)


def _agents_for(
    agent: AgentSpec,
    names: Sequence[str],
    caps: Capabilities,
    key: str,
    check: Callable[[AgentSpec], bool],
    need: str,
    diags: list[Diagnostic],
) -> list[str]:
    found: list[str] = []
    for name in dict.fromkeys(names):
        target = caps.agents.get(name)
        if target is None:
            diags.append(
                _warn(
                    agent,
                    f"agent.unknown_{key}",
                    key,
                    f"{key} names {name!r}, which does not exist{_suggest(name, caps.agents)}; it is skipped",
                    "`bearagent agents list` shows the agents",
                )
            )
        elif not check(target):
            diags.append(
                _warn(
                    agent,
                    f"agent.invalid_{key}",
                    key,
                    f"{key} names {name!r}, which is not {need}; it is skipped",
                    f"set `mode:` in {target.source or name}",
                )
            )
        else:
            found.append(name)
    return found


def _mcp_servers(agent: AgentSpec, caps: Capabilities, diags: list[Diagnostic]) -> set[str]:
    """The configured servers the agent's `mcp` allowlist names (all when omitted); unknown names are warnings."""
    if agent.mcp is None:
        return set(caps.mcp_servers)
    servers: set[str] = set()
    for entry in agent.mcp:
        server = entry.partition(".")[0]
        if server not in caps.mcp_servers:
            diags.append(
                _warn(
                    agent,
                    "agent.unknown_mcp_server",
                    "mcp",
                    f"MCP server {server!r} is not configured{_suggest(server, caps.mcp_servers)}; it is skipped",
                    "declare it under `mcp_servers:` in config.yaml or in .mcp.json",
                )
            )
            continue
        servers.add(server)
    return servers


def _check_collisions(agent: AgentSpec, tools: Sequence[ProjectedTool]) -> None:
    seen: dict[str, ProjectedTool] = {}
    for tool in tools:
        if not PROVIDER_SAFE_RE.match(tool.name):  # pragma: no cover - provider_safe_name guarantees it
            raise AssertionError(tool.name)
        other = seen.get(tool.name)
        if other is not None:
            raise BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "tool_name_collision",
                    f"agent {agent.name!r}: tool name {tool.name!r} is projected twice: {other.source} {other.internal_name!r} "
                    f"from {other.origin} and {tool.source} {tool.internal_name!r} from {tool.origin}",
                    tool=tool.name,
                ),
                hint="rename one of them, or remove one from the agent's allowlists (`tools`, `disallowed_tools`, `mcp`)",
            )
        seen[tool.name] = tool

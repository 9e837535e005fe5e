"""The agent planner: from an agent, its invocation projection, a resolved model and the policy inputs to the run
plan the loop executes. A pure function (no files, no network, no store): everything that needs I/O (starting MCP
servers, building the provider, loading skills) is done by the caller and handed in, so a plan can be built and
unit-tested from values alone.

What it decides: which projected tools the agent really gets (a subagent never gets a tool its parent lacks; a
projected tool without an executor is left out), the tool gate (permission rules, the tool grant the projection
used, the permission mode in force, whether the shell is sandboxed, the interceptors and the asker), the system
prompt (agent prompt, environment, project instructions for a top-level primary agent, skill catalog, unavailable
MCP servers), and the model parameters (agent settings over the model entry's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Protocol

from bearagent.domain._base import JsonValue
from bearagent.domain.permission_modes import DEFAULT_PERMISSION_MODE, PermissionMode
from bearagent.domain.run_events import RunRequest
from bearagent.domain.specs import AgentSpec, ModelEntry, call_timeout_ms
from bearagent.ports import ModelProvider, Tool, ToolInterceptor
from bearagent.runtime.context import ContextBuilder, ContextParts
from bearagent.runtime.plan import AgentPlan, BoundTool, CompactionPlan
from bearagent.runtime.projection import InvocationProjection
from bearagent.tools.gate import Asker, ToolGate
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ExecutionPolicy, ToolPolicy, WorkspaceKind
from bearagent.tools.roots import additional_directories

DEFAULT_MAX_SWITCHES = 10


class GateMaker(Protocol):
    """How a plan's gate is built: `app/` hands one (`app.resources.Resources.gate`, the composition root builds
    every gate); the planner decides what goes in it. `ToolGate` itself fits (unit tests pass it)."""

    def __call__(
        self,
        tools: Mapping[str, Tool],
        *,
        policy: ToolPolicy | None = None,
        interceptor: ToolInterceptor | None = None,
        ask: Asker | None = None,
    ) -> ToolGate: ...


@dataclass(frozen=True, slots=True)
class RunChoices:
    """What one run's caller chose beyond the agent's files (`bearagent run --disallowed-tools`, `--system-prompt`,
    `--append-system-prompt`, `--add-dir`), for the run's top-level agent. Recorded in the run's sealed
    `RunRequest`, so a queued or resumed run is planned with the same choices and a log shipped in a repository
    cannot add any."""

    disallowed_tools: tuple[str, ...] = ()
    """Permission rules denied in this run, added to `permissions.deny` (a bare name takes the tool away)."""
    system_prompt: str | None = None
    """The agent's prompt for this run, instead of its file's body (the environment, project instructions and
    skills sections stay)."""
    append_system_prompt: str | None = None
    """Appended, as the last section, to the system prompt."""
    add_dirs: tuple[str, ...] = ()
    """Absolute directories added to `permissions.additional_directories` for this run."""

    @property
    def any(self) -> bool:
        return bool(self.disallowed_tools or self.system_prompt or self.append_system_prompt or self.add_dirs)

    @classmethod
    def of_request(cls, request: RunRequest) -> RunChoices:
        """The choices a run's sealed request recorded."""
        return cls(
            disallowed_tools=request.disallowed_tools,
            system_prompt=request.system_prompt,
            append_system_prompt=request.append_system_prompt,
            add_dirs=request.add_dirs,
        )

    def request_fields(self) -> dict[str, object]:
        """The `RunRequest` fields that record these choices."""
        return {
            "disallowed_tools": self.disallowed_tools,
            "system_prompt": self.system_prompt,
            "append_system_prompt": self.append_system_prompt,
            "add_dirs": self.add_dirs,
        }


@dataclass(frozen=True, slots=True)
class PolicyInputs:
    """What the gate's policy is made of, besides the agent's tool grant (which comes with the projection)."""

    rules: PermissionRules = field(default_factory=PermissionRules)
    mode: PermissionMode = DEFAULT_PERMISSION_MODE
    user_bypass: bool = False
    shell_sandboxed: bool = False
    unsandboxed_reason: str | None = None
    workspace_kind: WorkspaceKind = "project"
    execution_policy: ExecutionPolicy = "local"
    run_deny: tuple[str, ...] = ()
    """The run's `--disallowed-tools` rules (also in `rules`), so a denial by one names the flag."""


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """Everything `plan_agent` needs, already resolved. `executors` maps projected tool names to the object that
    runs them (native and plugin tools, runtime tools, action tools, MCP tools); `instructions` is `(text, source
    file name)` of AGENTS.md / CLAUDE.md."""

    agent: AgentSpec
    projection: InvocationProjection
    model: ModelEntry
    provider: ModelProvider
    root: Path
    today: date
    gates: GateMaker
    executors: Mapping[str, Tool] = field(default_factory=dict[str, Tool])
    policy: PolicyInputs = field(default_factory=PolicyInputs)
    parent_tools: frozenset[str] | None = None
    interceptor: ToolInterceptor | None = None
    ask: Asker | None = None
    depth: int = 0
    instructions: tuple[str, str] | None = None
    preloaded_skills: tuple[tuple[str, str], ...] = ()
    """`(name, instructions)` of the skills a Claude Code agent file preloads (`skills:`)."""
    output_style: tuple[str, str] | None = None
    """`(name, instructions)` of the output style in force: added like `instructions`, for a top-level primary."""
    skill_catalog: str | None = None
    unavailable_servers: Sequence[str] = ()
    git_lines: Sequence[str] = ()
    """The workspace repository's git facts (`sandbox/git_context.py`), for a top-level primary agent."""
    tool_settings: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    context: ContextBuilder = field(default_factory=ContextBuilder)
    max_output_continuations: int = 3
    compaction: CompactionPlan | None = None
    choices: RunChoices = field(default_factory=RunChoices)
    """The run's own choices (`RunChoices`); the caller passes them for the top-level agent only."""


def plan_agent(inputs: PlanInputs) -> AgentPlan:
    """The run plan for `inputs.agent` (see the module docstring)."""
    agent, projection, entry = inputs.agent, inputs.projection, inputs.model
    gate_tools: dict[str, Tool] = {}
    bound: dict[str, BoundTool] = {}
    taken = PermissionRules.parse(deny=inputs.choices.disallowed_tools) if inputs.choices.disallowed_tools else None
    taken_names: list[str] = []
    for projected in projection.tools:
        if inputs.parent_tools is not None and projected.name not in inputs.parent_tools:
            continue  # a subagent never gets a tool its parent does not have
        if taken is not None and taken.denies_whole_tool(projected.name):
            taken_names.append(projected.name)
            continue  # the run's --disallowed-tools names it bare: the tool is taken away, as in Claude Code
        tool = inputs.executors.get(projected.name) or projected.tool
        if tool is None:
            continue
        gate_tools[projected.name] = tool
        bound[projected.name] = BoundTool(
            projected_name=projected.name,
            internal_name=projected.name,
            source=projected.source,
            descriptor=projected.descriptor,
            spec_version=projected.spec.version,
        )
    p = inputs.policy
    policy = ToolPolicy(
        rules=p.rules,
        grant=projection.grant,  # the same tools/disallowed_tools/mcp resolution the projection used
        mode=p.mode,
        user_bypass=p.user_bypass,
        root=inputs.root,
        workspace_kind=p.workspace_kind,
        execution_policy=p.execution_policy,
        shell_sandboxed=p.shell_sandboxed,
        unsandboxed_reason=p.unsandboxed_reason,
        extra_roots=additional_directories(inputs.tool_settings),
        run_deny=p.run_deny,
    )
    gate = inputs.gates(gate_tools, policy=policy, interceptor=inputs.interceptor, ask=inputs.ask)
    instructions = inputs.instructions if agent.is_primary and inputs.depth == 0 else None
    parts = ContextParts(
        agent_name=agent.name,
        agent_prompt=inputs.choices.system_prompt if inputs.choices.system_prompt is not None else agent.prompt,
        workspace_root=inputs.root,
        today=inputs.today,
        output_style=inputs.output_style if agent.is_primary and inputs.depth == 0 else None,
        project_instructions=instructions[0] if instructions is not None else None,
        project_instructions_source=instructions[1] if instructions is not None else None,
        skill_catalog=inputs.skill_catalog if projection.skills else None,
        preloaded_skills=inputs.preloaded_skills,
        system_reminder=agent.system_reminder,
        additional_directories=additional_directories(inputs.tool_settings),
        unavailable_servers=list(inputs.unavailable_servers),
        git_lines=tuple(inputs.git_lines) if agent.is_primary and inputs.depth == 0 else (),
    )
    system_prompt = inputs.context.system_prompt(parts)
    if inputs.choices.append_system_prompt and inputs.choices.append_system_prompt.strip():
        system_prompt = f"{system_prompt}\n\n{inputs.choices.append_system_prompt.strip()}"
    return AgentPlan(
        agent_name=agent.name,
        system_prompt=system_prompt,
        model_ref=entry.ref,
        model_name=entry.model or entry.name,
        provider=inputs.provider,
        gate=gate,
        tools=bound,
        system_reminder=agent.system_reminder,
        price=entry.price,
        max_output_tokens=agent.max_output_tokens or entry.max_output_tokens,
        temperature=agent.temperature if agent.temperature is not None else entry.temperature,
        timeout_ms=call_timeout_ms(entry),
        permission_mode=str(p.mode),
        max_switches=agent.policy.max_switches if agent.policy.max_switches is not None else DEFAULT_MAX_SWITCHES,
        max_output_continuations=inputs.max_output_continuations,
        tool_settings=dict(inputs.tool_settings),
        context_window=entry.context_window,
        compaction=inputs.compaction,
        provider_id=entry.provider,
        taken_by_run=tuple(taken_names),
    )

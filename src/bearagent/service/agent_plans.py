"""Planning, the I/O half of the agent planner: from an agent's name in a running workspace to the `AgentPlan`
the loop runs (`planner.plan_agent` is the pure half).

It starts the MCP connections the agent's projection needs, resolves the model entry and its provider (one per
session), binds the runtime tools (Skill, Task, SwitchAgent, actions) to their executors, probes the shell sandbox,
gathers the policy inputs (config rules, remembered session rules, the permission mode in force) and the context
(instructions, skill catalog), and hands them to `plan_agent`. It also owns the budget arithmetic of a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BUDGET_FIELDS, BudgetLimits
from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.recent import remember
from bearagent.domain.specs import AgentSpec, ModelEntry, call_timeout_ms
from bearagent.domain.tools import ToolSpec
from bearagent.hooks.bridge import SessionHooks
from bearagent.plugins.permission import PluginPermissionInterceptor, has_impls
from bearagent.ports import Tool, ToolInterceptor
from bearagent.runtime.approvals import ApprovalBroker
from bearagent.runtime.compaction import DEFAULT_COMPACTION_THRESHOLD, DEFAULT_KEEP_RECENT_TURNS
from bearagent.runtime.context import ContextBuilder
from bearagent.runtime.plan import AgentPlan, CompactionPlan
from bearagent.runtime.projection import InvocationProjection
from bearagent.sandbox import probe as sandbox_probe
from bearagent.sandbox import request as sandbox_request
from bearagent.sandbox.git_context import git_facts
from bearagent.service.planner import PlanInputs, PolicyInputs, RunChoices, plan_agent
from bearagent.service.skill_grants import SkillGrants
from bearagent.tools.gate import Asker, ToolGate
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.runtime_tools import ActionTool, SkillContent, SkillTool, SwitchAgentTool, TaskTool
from bearagent.tools.spill import SPILL_DIR_SETTING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bearagent.sandbox.settings import SandboxSettings
    from bearagent.service.host import PlanHost


MAX_GIT_SESSIONS = 64


class AgentPlans:
    """Plans the agents of one workspace runtime (see the module docstring)."""

    def __init__(self, runtime: PlanHost) -> None:
        self._rt = runtime
        self.context = ContextBuilder()
        self._git: dict[str, tuple[str, ...]] = {}
        """The one context builder of the runtime's plans (system prompts, reminders, prompt hashes)."""

    def prompt_hash(self, system_prompt: str) -> str:
        """The hash a run's `RunCreated` records of its system prompt (a resumed run compares it)."""
        return self.context.prompt_hash(system_prompt)

    def require_agent(self, name: str) -> AgentSpec:
        """The agent named `name`; "no agent named X" is the registry's (`AgentRegistry.require`), said once."""
        return self._rt.loaded.agents.require(name)

    def check_model(self, agent_name: str, model_override: str | None) -> None:
        """Raise what planning `agent_name` would raise about its model (none, an unknown entry, a missing key),
        from the loaded files alone: no MCP server started, no provider built (a queued run is planned later)."""
        agent = self.require_agent(agent_name)
        self._model_entry(agent, self._rt.loaded.project(agent.name, mcp_tools=[]).model, model_override)

    async def _git_lines(self, session_key: str) -> tuple[str, ...]:
        """The git facts of the workspace, read once per session (as Claude Code reads them at its start) through
        the hardened runner, off the event loop; the last `MAX_GIT_SESSIONS` sessions are remembered."""
        cached = self._git.get(session_key)
        if cached is None:
            facts = await asyncio.to_thread(git_facts, self._rt.root)
            lines = tuple(facts.section_lines()) if facts is not None else ()
            cached = remember(self._git, session_key, lines, MAX_GIT_SESSIONS)
        return cached

    def _preloaded_skills(self, agent: AgentSpec) -> tuple[tuple[str, str], ...]:
        """Claude Code's agent `skills:` preloads the skills' instructions into the agent's context: for an agent
        file from `.claude/agents/` (BearAgent's own files read `skills:` as the `Skill` tool's allowlist only)."""
        if agent.skills is None or not agent.origin.startswith("compat:"):
            return ()
        found = (self._rt.loaded.skills.get(name) for name in dict.fromkeys(agent.skills))
        return tuple((skill.name, skill.body) for skill in found if skill is not None and skill.body.strip())

    def _model_entry(self, agent: AgentSpec, projected: ModelEntry | None, model_override: str | None) -> ModelEntry:
        entry = projected
        if model_override is not None:
            entry = self._rt.loaded.models.resolve(model_override, where="--model")
            allowed = self._rt.loaded.available_models
            if allowed is not None and not {model_override, entry.name, entry.ref, entry.model} & set(allowed[0]):
                raise BearAgentError(
                    ErrorInfo.of(
                        "configuration",
                        "model_not_available",
                        f"model {model_override!r} is not one of the availableModels of {allowed[1]}: "
                        f"{name_list(allowed[0]) or 'none'}",
                    ),
                    hint="pick one of those, or add it to availableModels",
                )
        if entry is None:
            raise BearAgentError(
                ErrorInfo.of("configuration", "no_model", f"agent {agent.name!r} has no model"),
                hint="set `default_model:` in .bearagent/config.yaml or `model:` in the agent file",
            )
        return self._rt.loaded.models.for_use(entry, self._rt.loaded.env)

    async def plan(
        self,
        agent_name: str,
        *,
        session_key: str,
        model_override: str | None = None,
        hooks: SessionHooks | None = None,
        parent_tools: frozenset[str] | None = None,
        parent_model: ModelEntry | None = None,
        depth: int = 0,
        extra_allow: Sequence[str] = (),
        ask: Asker | ApprovalBroker | None = None,
        choices: RunChoices | None = None,
    ) -> AgentPlan:
        """The plan of `agent_name`. `ask` answers the gate's `ask` (a top-level run's approval broker); child runs
        keep the runtime's attached asker (a subagent never suspends its parent). `choices`: the run's own
        (`RunChoices`, from its sealed request), for a top-level agent."""
        choices = choices or RunChoices()
        agent = self.require_agent(agent_name)
        manager = await self._rt.resources.mcp_manager()
        mcp_inputs: list[tuple[str, ToolSpec]] = []
        unavailable: list[str] = []
        if manager is not None:
            mcp_inputs = manager.projection_inputs()
            summary = manager.unavailable_summary()
            unavailable = [line.lstrip("- ") for line in summary.splitlines() if line.strip()]
        projection = self._rt.loaded.project(agent.name, mcp_tools=mcp_inputs, parent_model=parent_model)
        entry = self._model_entry(agent, projection.model, model_override)
        grants = SkillGrants(self._load_skill, self._skill_allowed_tools, self._rt.root)  # skill allowed-tools
        executors = self._runtime_executors(
            projection, session_key=session_key, depth=depth, model=entry, grants=grants
        )
        if manager is not None:
            for projected in projection.tools:
                if projected.source == "mcp":
                    server, _, remote = projected.internal_name.partition(".")
                    tool = manager.find_tool(server, remote)
                    if tool is not None:
                        executors[projected.name] = tool
        config = self._rt.loaded.config
        in_force = self._rt.mode_in_force(agent)
        shell = sandbox_probe.probe(config.sandbox)
        # a face's own Bash that runs elsewhere (`bearagent acp --client-terminal`: the editor's terminal) says why it
        # is outside the sandbox; the gate then treats every command as unsandboxed
        bash = next((e.tool for e in self._rt.loaded.tools.entries() if e.name == "Bash"), None)
        elsewhere = getattr(bash, "unsandboxed", None)
        hook_interceptor: ToolInterceptor | None = None
        if hooks is not None and hooks.enabled:  # the gate's hook side, loaded only for a session with hooks
            from bearagent.hooks.interceptor import HookToolInterceptor

            hook_interceptor = HookToolInterceptor(hooks.dispatcher)
        interceptor: ToolInterceptor | None = hook_interceptor
        if has_impls(self._rt.loaded.plugins, "resolve_permission"):
            interceptor = PluginPermissionInterceptor(self._rt.loaded.plugins, self._rt.root, hook_interceptor)
        skills = [self._rt.loaded.skills.get(name) for name in projection.skills]
        catalog = self._rt.loaded.skills.catalog(
            [s.name for s in skills if s is not None], budget_chars=config.skill_catalog_chars
        )
        instructions = self._rt.loaded.instructions
        search = config.web_search.model_dump(exclude_none=True)
        search_settings: dict[str, JsonValue] = {}
        search_key: str | None = None
        if search.get("provider") or search.get("api_key_env"):  # a search service is configured: its settings
            from bearagent.tools.search_backends import key_variable, web_search_settings  # (loaded only then)

            search_settings = web_search_settings(search, self._rt.loaded.env)
            search_key = key_variable(search)
        settings: dict[str, JsonValue] = {
            "allow_private_network": bool(config.web_fetch.allow_private_network),
            **search_settings,
            # a result over its tool's cap is kept whole beside the run's state (tools/spill.py)
            **({SPILL_DIR_SETTING: str(self._rt.loaded.state_dir)} if config.kind == "project" else {}),
            **sandbox_request.tool_settings(
                _with_dirs(config.sandbox, choices.add_dirs),
                config.shell_env,
                self._rt.loaded.env,
                [*(m.api_key_env for m in self._rt.loaded.models.all() if m.api_key_env), search_key or ""],
                # user-installed Claude Code plugins' bin/ (a workspace plugin's is not put on PATH)
                [p.manifest.root for p in self._rt.loaded.claude_plugins if p.level == "platform"],
            ),
        }
        plan = plan_agent(
            PlanInputs(
                agent=agent,
                projection=projection,
                model=entry,
                provider=self._rt.resources.provider(entry, session_key),
                root=self._rt.root,
                today=self._rt.clock.now().date(),
                gates=self._rt.resources.gate,
                executors=executors,
                policy=PolicyInputs(
                    rules=PermissionRules.parse(
                        allow=(*config.permissions.allow, *extra_allow),
                        ask=config.permissions.ask,
                        deny=(*config.permissions.deny, *choices.disallowed_tools),
                        root=self._rt.root,
                    ),
                    mode=in_force.mode,
                    user_bypass=in_force.user_bypass,
                    shell_sandboxed=shell.active and not isinstance(elsewhere, str),
                    unsandboxed_reason=elsewhere if isinstance(elsewhere, str) else shell.unconfined_reason(),
                    workspace_kind=config.kind,
                    execution_policy=config.execution_policy,
                    run_deny=choices.disallowed_tools,
                ),
                parent_tools=parent_tools,
                interceptor=interceptor,
                ask=ask if ask is not None else self._rt.ask,  # pyright: ignore[reportArgumentType]
                depth=depth,
                instructions=(instructions.text, instructions.path.name) if instructions is not None else None,
                output_style=(style.name, style.text) if (style := self._rt.loaded.output_style) is not None else None,
                skill_catalog=catalog.text,
                preloaded_skills=self._preloaded_skills(agent),
                unavailable_servers=unavailable,
                git_lines=await self._git_lines(session_key) if depth == 0 and agent.is_primary else (),
                tool_settings=settings,
                context=self.context,
                max_output_continuations=config.max_output_continuations,
                compaction=self._compaction(agent, entry, session_key),
                choices=choices,
            )
        )
        if isinstance(plan.gate, ToolGate):
            grants.bind(plan.gate.policy)
        if agent.memory is not None:
            from dataclasses import replace

            from bearagent.service.agent_memory import memory_section

            home = Path(self._rt.loaded.env.get("HOME") or Path.home())
            plan = replace(plan, system_prompt=f"{plan.system_prompt}\n\n{memory_section(agent, self._rt.root, home)}")
        return self._with_fallback(plan, agent, entry, session_key)

    def _with_fallback(self, plan: AgentPlan, agent: AgentSpec, entry: ModelEntry, session_key: str) -> AgentPlan:
        """The plan with its `fallback`: the same agent on Claude Code's `fallbackModel` (the agent's own, else the
        settings'), when that is another entry than the plan's own. An agent's name that is no entry fails the
        plan, naming the agent's field."""
        name = self._rt.loaded.fallback_model
        where = "fallbackModel"
        if agent.fallback_model is not None:
            name, where = agent.fallback_model, f"fallbackModel of agent {agent.name}"
        if name is None:
            return plan
        from dataclasses import replace

        resolved = self._rt.loaded.models.resolve(name, where=where)
        if resolved.ref == entry.ref:
            return plan
        other = self._rt.loaded.models.for_use(resolved, self._rt.loaded.env)
        fallback = replace(
            plan,
            model_ref=other.ref,
            model_name=other.model or other.name,
            provider=self._rt.resources.provider(other, session_key),
            price=other.price,
            max_output_tokens=agent.max_output_tokens or other.max_output_tokens,
            temperature=agent.temperature if agent.temperature is not None else other.temperature,
            timeout_ms=call_timeout_ms(other),
            context_window=other.context_window,
        )
        return replace(plan, fallback=fallback)

    def _compaction(self, agent: AgentSpec, entry: ModelEntry, session_key: str) -> CompactionPlan:
        """The agent's `policy.compaction` over config.yaml's `compaction:`; the summary model is
        `compaction.model` (resolved like any model ref: a bad name fails the run and names the field), else the
        agent's own."""
        settings = agent.policy.compaction.over(self._rt.loaded.config.compaction)
        summariser = entry
        if settings.model is not None:
            where = f"policy.compaction.model of agent {agent.name}" if agent.policy.compaction.model else None
            summariser = self._rt.loaded.models.resolve(
                settings.model, where=where or "compaction.model in config.yaml"
            )
            summariser = self._rt.loaded.models.for_use(summariser, self._rt.loaded.env)
        return CompactionPlan(
            model_ref=summariser.ref,
            model_name=summariser.model or summariser.name,
            provider=self._rt.resources.provider(summariser, session_key),
            enabled=settings.enabled if settings.enabled is not None else True,
            threshold=settings.threshold if settings.threshold is not None else DEFAULT_COMPACTION_THRESHOLD,
            keep_recent_turns=(
                settings.keep_recent_turns if settings.keep_recent_turns is not None else DEFAULT_KEEP_RECENT_TURNS
            ),
            price=summariser.price,
            max_output_tokens=summariser.max_output_tokens,
            timeout_ms=call_timeout_ms(summariser),
            context_window=summariser.context_window,
            provider_id=summariser.provider,
        )

    def _runtime_executors(
        self,
        projection: InvocationProjection,
        *,
        session_key: str,
        depth: int,
        model: ModelEntry,
        grants: SkillGrants | None = None,
    ) -> dict[str, Tool]:
        out: dict[str, Tool] = {}
        for projected in projection.tools:
            if projected.tool is not None and projected.source != "runtime" and projected.source != "action":
                continue
            if projected.internal_name == "Skill":
                out[projected.name] = SkillTool(projected.spec, grants.load if grants else self._load_skill)
            elif projected.internal_name == "Task":
                out[projected.name] = TaskTool(projected.spec, self._rt.children.task_runner(session_key, depth, model))
            elif projected.internal_name == "SwitchAgent":
                out[projected.name] = SwitchAgentTool(projected.spec)
            elif projected.source == "action":
                out[projected.name] = ActionTool(
                    projected.spec, projected.internal_name, self._rt.children.action_runner(session_key, depth, model)
                )
        return out

    def _skill_allowed_tools(self, name: str) -> tuple[str, ...]:
        skill = self._rt.loaded.skills.get(name)
        return skill.allowed_tools if skill is not None else ()

    def _load_skill(self, name: str) -> SkillContent:
        skill = self._rt.loaded.skills.get(name)
        if skill is None:
            raise BearAgentError(ErrorInfo.of("tool", "unknown_skill", f"there is no skill named {name!r}"))
        return SkillContent(name=skill.name, body=skill.body, directory=skill.directory, files=list(skill.files))

    # ---- budgets -----------------------------------------------------------------------------------------------

    def budgets_for(self, agent: AgentSpec, overrides: Mapping[str, int]) -> BudgetLimits:
        """config.yaml `budgets:` < command-line flags; then intersected with the agent's own policy."""
        values = self._rt.loaded.config.budgets.model_dump()  # already the defaults overlaid with config.yaml
        unknown = sorted(set(overrides) - set(BUDGET_FIELDS))
        if unknown:
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "unknown_budget", f"unknown budget field(s): {', '.join(unknown)}"),
                hint=f"budget fields are: {', '.join(BUDGET_FIELDS)}",
            )
        values.update(overrides)
        limits = BudgetLimits.model_validate(values)
        policy_values = limits.model_dump()
        policy_values.update({k: v for k, v in agent.policy.budgets.items() if k in BUDGET_FIELDS})
        if agent.policy.max_turns is not None:
            policy_values["max_model_iterations"] = agent.policy.max_turns
        return limits.intersect(BudgetLimits.model_validate(policy_values))


def _with_dirs(sandbox: SandboxSettings, add_dirs: Sequence[str]) -> SandboxSettings:
    """`sandbox` with a run's `--add-dir` directories added to the additional directories (the file tools' roots,
    the shell's writable directories)."""
    if not add_dirs:
        return sandbox
    merged = tuple(dict.fromkeys((*sandbox.additional_directories, *add_dirs)))
    return sandbox.model_copy(update={"additional_directories": merged})

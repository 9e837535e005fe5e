"""Run wiring: from a loaded workspace to running agents in sessions.

`app.py` loads a workspace (config, registries, plugins); this module is the other half of the wiring: it opens the
event store, resolves an agent into an `AgentPlan` (projection, model provider, tool gate with hooks and runtime
tools), runs it in a session with the `AgentLoop`, and spawns child runs for `Task` and action tools. It is the
only place besides `app.py` that knows concrete adapter classes; the CLI and the Python API (`bearagent.api`) are thin
layers over `WorkspaceRuntime`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent import preflight
from bearagent.app import LoadedWorkspace
from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BUDGET_FIELDS, BudgetLimits
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import IdGenerator, RunId, SessionId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.domain.run_events import (
    ChildRunFinishedV2,
    ChildRunStartedV1,
    ChildUsage,
    HookExecutedV1,
    TriggerType,
)
from bearagent.domain.specs import AgentSpec, ModelEntry
from bearagent.domain.state import TERMINAL_RUN_STATUSES, RunProjection
from bearagent.domain.tools import ToolSpec
from bearagent.planner import PlanInputs, PolicyInputs, plan_agent
from bearagent.resources import Resources, open_store, state_dir
from bearagent.run_types import RunOptions, RunResult
from bearagent.sessions import SessionService

if TYPE_CHECKING:
    from bearagent.mcp.manager import McpServerStatus
from bearagent.domain.run_events import ApprovalChoice
from bearagent.domain.state import SessionRecord
from bearagent.hooks.bridge import LoopHookAdapter, SessionHooks, assemble_hook_groups
from bearagent.hooks.dispatcher import HookDispatcher, HookSettings, firing_hook_event
from bearagent.hooks.interceptor import HookToolInterceptor
from bearagent.plugins.permission import PluginPermissionInterceptor, has_impls
from bearagent.ports import (
    Clock,
    SystemClock,
    Tool,
    ToolContext,
    ToolInterceptor,
)
from bearagent.registries.actions import render_action
from bearagent.registries.commands import command_model, render_command
from bearagent.runtime.approvals import ApprovalBroker
from bearagent.runtime.context import ContextBuilder
from bearagent.runtime.loop import AgentLoop, RunOutcome
from bearagent.runtime.observer import ChildRunObserver, NullObserver, RunObserver
from bearagent.runtime.plan import (
    AgentPlan,
    RunSpec,
)
from bearagent.runtime.projection import InvocationProjection
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_context import CurrentRun, current_run
from bearagent.runtime.run_writer import RunWriter
from bearagent.sandbox import probe as sandbox_probe
from bearagent.sandbox import request as sandbox_request
from bearagent.skill_grants import SkillGrants
from bearagent.store.sqlite import SqliteEventStore
from bearagent.tools.gate import Asker, ToolGate
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.runtime_tools import (
    ActionTool,
    ChildRunResult,
    SkillContent,
    SkillTool,
    SwitchAgentTool,
    TaskTool,
)
from bearagent.trust.modes import ModeInForce

MAX_SUBAGENT_DEPTH = 3


# ---- the runtime ---------------------------------------------------------------------------------------------


class WorkspaceRuntime:
    """Runs agents in one loaded workspace. Create with `WorkspaceRuntime(loaded)`; close with `aclose()`."""

    def __init__(
        self,
        loaded: LoadedWorkspace,
        *,
        store: SqliteEventStore | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        retry: RetryPolicy | None = None,
        ask: Asker | None = None,
        caller: str = "local",
        in_process_mcp: Mapping[str, object] | None = None,
        permission_mode: str | None = None,
    ) -> None:
        self.loaded = loaded
        self.clock: Clock = clock or SystemClock()
        self.ids: IdGenerator = ids or Uuid4IdGenerator()
        self.retry = retry or RetryPolicy()
        self.ask = ask
        self.caller = caller
        self.permission_mode_flag = permission_mode
        """A mode the user chose for this process (`--permission-mode`); it outranks every file."""
        self.resources = Resources(loaded, self.ids, store=store, in_process_mcp=in_process_mcp, clock=self.clock)
        self.sessions = SessionService(loaded, self.resources, self.clock, self.ids, caller)
        self._context = ContextBuilder()
        self._started_sessions: set[str] = set()
        self._session_facts: list[HookExecutedV1] = []

    # ---- collaborators -------------------------------------------------------------------------------------------

    @property
    def store(self) -> SqliteEventStore:
        return self.resources.store

    @property
    def writer(self) -> RunWriter:
        return self.resources.writer

    @property
    def root(self) -> Path:
        return self.loaded.root

    def check_guards(self) -> None:
        preflight.check_guards(self.loaded)

    def check_trust(self) -> None:
        preflight.check_trust(self.loaded)

    def check_hooks(self) -> None:
        preflight.check_hooks(self.loaded)

    def notices(self, agent_name: str | None = None) -> list[str]:
        return preflight.notices(self.loaded, agent_name, flag=self.permission_mode_flag)

    def mode_in_force(self, agent: AgentSpec) -> ModeInForce:
        return preflight.mode_for(self.loaded, agent, flag=self.permission_mode_flag)

    def mcp_status(self) -> list[McpServerStatus] | None:
        return self.resources.mcp_status()

    def resolve_session(self, ref: str | None, agent: str) -> tuple[SessionRecord, bool]:
        return self.sessions.resolve_session(ref, agent)

    def session_history(self, session_id: SessionId) -> list[Message]:
        return self.sessions.session_history(session_id)

    async def aclose(self) -> None:
        for session_id in list(self._started_sessions):
            await self._fire_session_hook("SessionEnd", session_id, {"reason": "other"})
        self._started_sessions.clear()
        await self.resources.aclose()

    # ---- planning ----------------------------------------------------------------------------------------------

    def _require_agent(self, name: str) -> AgentSpec:
        agent = self.loaded.agents.get(name)
        if agent is None:
            missing = self.loaded.agents.why_missing(name)  # a file of that name that was skipped, or a duplicate
            if missing is not None:
                raise missing
            available = ", ".join(a.name for a in self.loaded.agents.all()) or "none"
            raise BearAgentError(
                ErrorInfo.of("not_found", "agent", f"there is no agent named {name!r}"),
                hint=f"available agents: {available} (`bearagent agents list` shows where each comes from)",
            )
        return agent

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
    ) -> AgentPlan:
        """The plan of `agent_name`. `ask` answers the gate's `ask` (a top-level run's approval broker); child runs
        keep the runtime's attached asker (a subagent never suspends its parent)."""
        agent = self._require_agent(agent_name)
        manager = await self.resources.mcp_manager()
        mcp_inputs: list[tuple[str, ToolSpec]] = []
        unavailable: list[str] = []
        if manager is not None:
            mcp_inputs = manager.projection_inputs()
            summary = manager.unavailable_summary()
            unavailable = [line.lstrip("- ") for line in summary.splitlines() if line.strip()]
        projection = self.loaded.project(agent.name, mcp_tools=mcp_inputs, parent_model=parent_model)
        entry = projection.model
        if model_override is not None:
            entry = self.loaded.models.resolve(model_override, where="--model")
        if entry is None:
            raise BearAgentError(
                ErrorInfo.of("configuration", "no_model", f"agent {agent.name!r} has no model"),
                hint="set `default_model:` in .bearagent/config.yaml or `model:` in the agent file",
            )
        entry = self.loaded.models.for_use(entry, self.loaded.env)
        grants = SkillGrants(self._load_skill, self._skill_allowed_tools, self.root)  # skill allowed-tools
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
        config = self.loaded.config
        in_force = self.mode_in_force(agent)
        shell = sandbox_probe.probe(config.sandbox)
        hook_interceptor = HookToolInterceptor(hooks.dispatcher) if hooks is not None and hooks.enabled else None
        interceptor: ToolInterceptor | None = hook_interceptor
        if has_impls(self.loaded.plugins, "resolve_permission"):
            interceptor = PluginPermissionInterceptor(self.loaded.plugins, self.root, hook_interceptor)
        skills = [self.loaded.skills.get(name) for name in projection.skills]
        catalog = self.loaded.skills.catalog(
            [s.name for s in skills if s is not None], budget_chars=config.skill_catalog_chars
        )
        instructions = self.loaded.instructions
        settings: dict[str, JsonValue] = {
            "allow_private_network": bool(config.web_fetch.allow_private_network),
            **sandbox_request.tool_settings(
                config.sandbox,
                config.shell_env,
                self.loaded.env,
                [m.api_key_env for m in self.loaded.models.all() if m.api_key_env],
            ),
        }
        plan = plan_agent(
            PlanInputs(
                agent=agent,
                projection=projection,
                model=entry,
                provider=self.resources.provider(entry, session_key),
                root=self.root,
                today=self.clock.now().date(),
                executors=executors,
                policy=PolicyInputs(
                    rules=PermissionRules.parse(
                        allow=(*config.permissions.allow, *extra_allow),
                        ask=config.permissions.ask,
                        deny=config.permissions.deny,
                        root=self.root,
                    ),
                    mode=in_force.mode,
                    user_bypass=in_force.user_bypass,
                    shell_sandboxed=shell.active,
                    unsandboxed_reason=shell.unconfined_reason(),
                    workspace_kind=config.kind,
                ),
                parent_tools=parent_tools,
                interceptor=interceptor,
                ask=ask if ask is not None else self.ask,  # pyright: ignore[reportArgumentType]
                depth=depth,
                instructions=(instructions.text, instructions.path.name) if instructions is not None else None,
                skill_catalog=catalog.text,
                unavailable_servers=unavailable,
                tool_settings=settings,
                context=self._context,
            )
        )
        if isinstance(plan.gate, ToolGate):
            grants.bind(plan.gate.policy)
        return plan

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
                out[projected.name] = TaskTool(projected.spec, self._child_runner(session_key, depth, model))
            elif projected.internal_name == "SwitchAgent":
                out[projected.name] = SwitchAgentTool(projected.spec)
            elif projected.source == "action":
                out[projected.name] = ActionTool(
                    projected.spec, projected.internal_name, self._action_runner(session_key, depth, model)
                )
        return out

    def _skill_allowed_tools(self, name: str) -> tuple[str, ...]:
        skill = self.loaded.skills.get(name)
        return skill.allowed_tools if skill is not None else ()

    def _load_skill(self, name: str) -> SkillContent:
        skill = self.loaded.skills.get(name)
        if skill is None:
            raise BearAgentError(ErrorInfo.of("tool", "unknown_skill", f"there is no skill named {name!r}"))
        return SkillContent(name=skill.name, body=skill.body, directory=skill.directory, files=list(skill.files))

    # ---- budgets -----------------------------------------------------------------------------------------------

    def budgets_for(self, agent: AgentSpec, overrides: Mapping[str, int]) -> BudgetLimits:
        """config.yaml `budgets:` < command-line flags; then intersected with the agent's own policy."""
        values = self.loaded.config.budgets.model_dump()  # already the defaults overlaid with config.yaml
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

    # ---- hooks -------------------------------------------------------------------------------------------------

    def _session_hooks(self, session_id: str, permission_mode: str) -> SessionHooks:
        groups, functions = assemble_hook_groups(
            self.loaded.hooks.all(),
            self.loaded.agents.all(),
            self.loaded.hooks.python_handlers(),
            exclude_events=_suppressed_hook_events.get(),  # inside a judge run: its starting events stay quiet
        )
        enabled = self.loaded.config.kind != "chat" and bool(groups)
        settings = HookSettings(
            workspace_root=self.root,
            session_id=session_id,
            permission_mode=permission_mode,
            env=self.loaded.child_env(),
            sandbox=self.loaded.config.sandbox,
        )
        dispatcher = HookDispatcher(
            groups,
            python_handlers=functions,
            judge=self._judge,
            agent_judge=self._agent_judge,
            record=self._record_hook,
            transcript=self.sessions.transcript(session_id),
            settings=settings,
        )
        return SessionHooks(dispatcher=dispatcher, enabled=enabled)

    async def _record_hook(self, payload: HookExecutedV1) -> None:
        """Hook executions become facts of the run they happen in; a session-level hook (SessionStart, before any
        run) is kept and recorded at the start of the session's next run."""
        run = current_run.get()
        if run is None:
            self._session_facts.append(payload)
            return
        with contextlib.suppress(BearAgentError):
            await run.recorder.append(payload)

    async def _judge(self, prompt: str, model: str | None) -> str:
        """A `prompt` hook: the handler's model (else the default model) answers `{ok, reason}`, with no tools. Inside
        a run it is a child run of that run (in its log, charged to its budgets, no hooks of its own); a
        session-level hook (no run yet) makes one direct call."""
        ref = model or self.loaded.config.default_model or ""
        entry = self.loaded.models.for_use(self.loaded.models.resolve(ref, where="prompt hook"), self.loaded.env)
        provider = self.resources.provider(entry, f"judge:{self.ids.new(SessionId)}")
        parent = current_run.get()
        if parent is None:
            request = ModelRequest(model=entry.model or entry.name, messages=(Message.user(prompt),))
            chunks: list[str] = []
            async for event in provider.stream(request):
                if event.kind == "text_delta":
                    chunks.append(event.text)
            return "".join(chunks)
        _check_depth(parent.spec.depth + 1)
        plan = AgentPlan(
            agent_name=JUDGE_AGENT,
            system_prompt=JUDGE_SYSTEM_PROMPT,
            model_ref=entry.ref,
            model_name=entry.model or entry.name,
            provider=provider,
            gate=ToolGate({}),
            price=entry.price,
            timeout_ms=int(entry.timeout_s * 1000),
        )
        event = firing_hook_event.get() or "hook"
        result = await self._spawn_child(
            parent,
            plan,
            prompt,
            BudgetLimits(max_model_iterations=1, max_tool_calls=0),
            session_key=f"judge:{parent.recorder.run_id}",
            depth=parent.spec.depth + 1,
            trigger="hook",
            trigger_ref=f"{event} prompt hook",
            tool_call_id=None,
            hooks=None,
        )
        return result.final_text

    async def _agent_judge(self, prompt: str, agent_name: str | None) -> str:
        """An `agent` hook: a run of the named agent (default `explore`, read-only) answers `{ok, reason}`. Inside a
        run it is a child run of that run, charged to it; it never fires hooks of the event that started it (nor
        of any event an enclosing judge was started by), and it nests at most MAX_SUBAGENT_DEPTH deep."""
        event = firing_hook_event.get() or "hook"
        token = _suppressed_hook_events.set(_suppressed_hook_events.get() | {event})
        try:
            parent = current_run.get()
            if parent is None:
                options = RunOptions(
                    agent=agent_name or "explore", trigger_type="hook", trigger_ref=f"{event} agent hook"
                )
                return (await self.run(prompt, options)).final
            session_key = f"judge:{self.ids.new(SessionId)}"
            parent_model = self.loaded.models.get(parent.model_ref()) if parent.model_ref() else None
            result = await self._run_child(
                agent_name or "explore",
                prompt,
                None,
                session_key,
                parent.spec.depth,
                parent_model,
                "hook",
                f"{event} agent hook",
            )
            return result.final_text
        finally:
            _suppressed_hook_events.reset(token)

    async def _fire_session_hook(self, event: str, session_id: str, payload: Mapping[str, JsonValue]) -> None:
        agent = self.loaded.agents.get(self.loaded.config.default_agent)
        mode = str(self.mode_in_force(agent).mode) if agent is not None else "default"
        hooks = self._session_hooks(session_id, mode)
        if hooks.enabled:
            await hooks.dispatcher.fire(event, payload)  # pyright: ignore[reportArgumentType]

    # ---- running -----------------------------------------------------------------------------------------------

    async def run(
        self, prompt: str, options: RunOptions | None = None, observer: RunObserver | None = None
    ) -> RunResult:
        """Run `prompt` to a terminal state in a session (new by default) and return its final record."""
        options = options or RunOptions()
        if not prompt.strip():
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "empty_prompt", "the prompt is empty"),
                hint='pass the task as an argument: bearagent run "..." (or `-` to read it from stdin)',
            )
        self.check_guards()
        self.check_trust()
        self.check_hooks()
        await self.resources.recover()
        config = self.loaded.config
        agent_name = options.agent
        session: SessionRecord | None = None
        created = False
        if options.trigger_type in ("message",):
            # on a thread: creating a session writes, and a write may wait for another process's lock
            session, created = await asyncio.to_thread(
                self.resolve_session, options.session, options.agent or config.default_agent
            )
            agent_name = agent_name or session.active_agent_name or config.default_agent
        agent_name = agent_name or config.default_agent
        agent = self._require_agent(agent_name)
        if options.trigger_type == "message" and not agent.is_primary:
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "not_primary", f"agent {agent.name!r} is a subagent (mode: subagent)"),
                hint="run a primary agent (`bearagent agents list` shows the modes), or delegate to it with Task",
            )
        budgets = self.budgets_for(agent, options.budgets)
        session_key = str(session.session_id) if session is not None else f"detached:{self.ids.new(SessionId)}"
        history: list[Message] = []

        async def go() -> RunResult:
            nonlocal history
            hooks = self._session_hooks(session_key, str(self.mode_in_force(agent).mode))
            if session is not None:
                history = self.session_history(session.session_id)
                if session_key not in self._started_sessions and hooks.enabled:
                    await hooks.dispatcher.fire("SessionStart", {"source": "startup" if created else "resume"})
                self._started_sessions.add(session_key)
            remembered = session.allowed_rules if session is not None else ()
            fresh = await self.store.fetch_session(session.session_id) if session is not None else None
            if fresh is not None:
                remembered = fresh.allowed_rules
            ask = self.broker(session.session_id if session is not None else None, wait=options.wait_approvals)
            plan = await self.plan(
                agent.name,
                session_key=session_key,
                model_override=options.model,
                hooks=hooks,
                extra_allow=(*options.allowed_tools, *remembered),
                ask=ask,
            )
            if session is not None and not created:
                from bearagent.resuming import seek_provider

                await seek_provider(self, plan, session.session_id, None)  # the scripted model's place, from the log
            prelude, self._session_facts = tuple(self._session_facts), []
            spec = RunSpec(
                goal=prompt,
                workspace_root=self.root,
                budgets=budgets,
                session_id=session.session_id if session is not None else None,
                trigger_type=options.trigger_type,
                trigger_ref=options.trigger_ref,
                history=tuple(history),
                prelude=prelude,
                run_id=options.run_id,
            )

            async def planner(name: str) -> AgentPlan:
                return await self.plan(
                    name,
                    session_key=session_key,
                    model_override=options.model,
                    hooks=hooks,
                    extra_allow=(*options.allowed_tools, *remembered),
                    ask=ask,
                )

            loop = self.loop(
                hooks=LoopHookAdapter(hooks, self.sessions.transcript(session_key)) if hooks.enabled else None,
                observer=observer or NullObserver(),
            )
            outcome = await loop.run(spec, plan, planner)
            if session is not None:
                await self.store.save_session(
                    session.model_copy(
                        update={
                            "updated_at": self.clock.now(),
                            "active_agent_name": outcome.agent_name,
                            "title": session.title or prompt.strip().splitlines()[0][:200],
                        }
                    )
                )
            return self._result(outcome, session.session_id if session is not None else None)

        if session is None:
            return await go()
        async with self.store.session_lock(session.session_id, wait=options.wait_for_session):
            return await go()

    # the names `resuming.py` builds on
    def require_agent(self, name: str) -> AgentSpec:
        return self._require_agent(name)

    def session_hooks(self, session_id: str, permission_mode: str) -> SessionHooks:
        return self._session_hooks(session_id, permission_mode)

    def result_of(self, outcome: RunOutcome, session_id: SessionId | None) -> RunResult:
        return self._result(outcome, session_id)

    def prompt_hash(self, system_prompt: str) -> str:
        return self._context.prompt_hash(system_prompt)

    async def resume(self, run_id: RunId, observer: RunObserver | None = None) -> RunResult:
        """Continue an interrupted run (or a waiting run whose approval was answered) from its log."""
        from bearagent.resuming import resume_run

        return await resume_run(self, run_id, observer)

    def loop(self, *, hooks: LoopHookAdapter | None, observer: RunObserver) -> AgentLoop:
        """An agent loop over this runtime's store and writer; its runs are held (owner + heartbeat) by it."""
        return AgentLoop(
            store=self.store,
            writer=self.writer,
            clock=self.clock,
            ids=self.ids,
            retry=self.retry,
            hooks=hooks,
            observer=observer,
            owner=self.resources.lease.owner,
            hold=self.resources.lease.hold,
        )

    def broker(
        self,
        session_id: SessionId | None,
        *,
        wait: bool,
        preanswered: Mapping[ToolCallId, ApprovalChoice] | None = None,
    ) -> ApprovalBroker | None:
        """The approval broker of a top-level run: the terminal's asker when one is attached, else (with `wait`)
        suspension until someone answers; None (deny at once, as a non-interactive run always did) otherwise."""
        if self.ask is None and not wait and not preanswered:
            return None

        async def remember(rule: str) -> None:
            if session_id is not None:
                await self.store.allow_in_session(session_id, rule)

        return ApprovalBroker(
            owner=self.resources.lease.owner,
            attached=self.ask,  # pyright: ignore[reportArgumentType]
            wait=wait,
            answered_by=self.caller,
            preanswered=preanswered,
            remember=remember,
            new_id=lambda: str(self.ids.new(SessionId)).replace("-", "")[-12:],
        )

    def _result(self, outcome: RunOutcome, session_id: SessionId | None) -> RunResult:
        return RunResult(
            run_id=outcome.run_id,
            session_id=session_id,
            agent=outcome.agent_name,
            status=outcome.status,
            final=outcome.final_text,
            usage=outcome.usage,
            error=outcome.error,
        )

    async def run_action(
        self,
        name: str,
        inputs: Mapping[str, JsonValue],
        *,
        trigger_type: TriggerType = "manual_action",
        observer: RunObserver | None = None,
        budgets: Mapping[str, int] | None = None,
        model: str | None = None,
    ) -> RunResult:
        """Render action `name` with `inputs` and run it with the action's agent (a detached run). A custom
        command (`registries/commands.py`) takes its `arguments` input as typed; its `allowed-tools` are pre-approved
        for this run, and a `model` that names no model entry leaves the agent's model. `model` (`-m`) wins over
        both."""
        action = self.loaded.actions.require(name)
        if action.kind == "command":
            arguments = inputs.get("arguments", "")
            rendered = render_command(
                action, arguments if isinstance(arguments, str) else str(arguments), root=self.root
            )
            prompt = rendered.prompt
        else:
            prompt = render_action(action, inputs)
        options = RunOptions(
            agent=action.agent or self.loaded.config.default_agent,
            model=model or command_model(action, self.loaded.models),
            trigger_type=trigger_type,
            trigger_ref=action.name,
            budgets=dict(budgets or {}),
            allowed_tools=action.allowed_tools,
        )
        return await self.run(prompt, options, observer)

    async def _child_usage(self, child_id: RunId) -> ChildUsage:
        """What a finished child consumed (its own children included: their usage was charged to it)."""
        return _usage_of(await self.store.fetch_run(child_id))

    # ---- child runs --------------------------------------------------------------------------------------------

    def _child_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, str, ToolContext], Awaitable[ChildRunResult]]:
        async def run_child(agent_name: str, prompt: str, context: ToolContext) -> ChildRunResult:
            return await self._run_child(
                agent_name, prompt, context.tool_call_id, session_key, depth, model, "subagent", None
            )

        return run_child

    def _action_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, Mapping[str, JsonValue], ToolContext], Awaitable[ChildRunResult]]:
        async def run_action(name: str, inputs: Mapping[str, JsonValue], context: ToolContext) -> ChildRunResult:
            action = self.loaded.actions.get(name)
            if action is None:
                raise BearAgentError(ErrorInfo.of("tool", "unknown_action", f"there is no action named {name!r}"))
            if action.kind == "command":
                arguments = inputs.get("arguments", "")
                text = arguments if isinstance(arguments, str) else str(arguments)
                prompt = render_command(action, text, root=self.root).prompt
            else:
                prompt = render_action(action, inputs)
            agent_name = action.agent or (context.agent_name or self.loaded.config.default_agent)
            return await self._run_child(
                agent_name, prompt, context.tool_call_id, session_key, depth, model, "subagent", name
            )

        return run_action

    async def _run_child(
        self,
        agent_name: str,
        prompt: str,
        tool_call_id: ToolCallId | None,
        session_key: str,
        depth: int,
        parent_model: ModelEntry | None,
        trigger: TriggerType,
        trigger_ref: str | None,
    ) -> ChildRunResult:
        """A run of `agent_name` inside the current run (Task, action tools, agent hooks): its budget is what the
        parent has left, its tools a subset of the parent's, its usage charged to the parent when it ends."""
        parent = _parent_run()
        _check_depth(depth + 1)
        agent = self._require_agent(agent_name)
        hooks = self._session_hooks(session_key, str(self.mode_in_force(agent).mode))
        plan = await self.plan(
            agent.name,
            session_key=session_key,  # one provider per session: a scripted model's turns run on in order
            hooks=hooks,
            parent_tools=parent.tool_names() | {"Skill"},
            parent_model=parent_model,
            depth=depth + 1,
        )
        return await self._spawn_child(
            parent,
            plan,
            prompt,
            self.budgets_for(agent, {}),
            session_key=session_key,
            depth=depth + 1,
            trigger=trigger,
            trigger_ref=trigger_ref,
            tool_call_id=tool_call_id,
            hooks=hooks,
        )

    async def _spawn_child(
        self,
        parent: CurrentRun,
        plan: AgentPlan,
        prompt: str,
        own_budgets: BudgetLimits,
        *,
        session_key: str,
        depth: int,
        trigger: TriggerType,
        trigger_ref: str | None,
        tool_call_id: ToolCallId | None,
        hooks: SessionHooks | None,
    ) -> ChildRunResult:
        parent_projection = await self.store.fetch_run(parent.recorder.run_id)
        assert parent_projection is not None
        budgets = parent_projection.budget_limits.remaining(parent_projection.usage).intersect(own_budgets)
        child_id = self.ids.new(RunId)
        await parent.recorder.append(
            ChildRunStartedV1(child_run_id=child_id, agent_name=plan.agent_name, tool_call_id=tool_call_id)
        )
        parent.observer.subagent_started(child_id, parent.recorder.run_id, plan.agent_name)
        enabled = hooks is not None and hooks.enabled
        if hooks is not None and enabled:
            await hooks.dispatcher.fire(
                "SubagentStart",
                {"agent_id": str(child_id), "agent_type": plan.agent_name},
                run_id=str(parent.recorder.run_id),
                agent_name=plan.agent_name,
            )
        spec = RunSpec(
            goal=prompt,
            workspace_root=self.root,
            budgets=budgets,
            session_id=parent.spec.session_id,
            run_id=child_id,
            parent_run_id=parent.recorder.run_id,
            depth=depth,
            trigger_type=trigger,
            trigger_ref=trigger_ref,
        )
        loop = self.loop(
            hooks=LoopHookAdapter(hooks, self.sessions.transcript(session_key), stop_event="SubagentStop")
            if hooks is not None and enabled
            else None,
            observer=ChildRunObserver(parent.observer),
        )
        status = "failed"
        try:
            outcome = await loop.run(spec, plan)
            status = outcome.status
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        finally:
            final_status = status if status in TERMINAL_RUN_STATUSES else "failed"
            await parent.recorder.append(
                ChildRunFinishedV2(child_run_id=child_id, status=final_status, usage=await self._child_usage(child_id))  # pyright: ignore[reportArgumentType]
            )
            parent.observer.subagent_finished(child_id, parent.recorder.run_id, plan.agent_name, final_status)
        return ChildRunResult(
            run_id=str(child_id),
            status=outcome.status,
            final_text=outcome.final_text,
            error_message=outcome.error.message if outcome.error is not None else None,
        )


JUDGE_AGENT = "hook-judge"
JUDGE_SYSTEM_PROMPT = (
    "You evaluate a hook condition for an agent runtime. Read the hook input and answer only with a JSON object "
    '{"ok": true} or {"ok": false, "reason": "..."}.'
)
_suppressed_hook_events: ContextVar[frozenset[str]] = ContextVar(
    "bearagent_suppressed_hook_events", default=frozenset()
)
"""Hook events that must not fire in this context: the events whose agent hooks started the judge runs we are in."""


def _parent_run() -> CurrentRun:
    parent = current_run.get()
    if parent is None:
        raise BearAgentError(ErrorInfo.of("internal", "no_parent_run", "a child run needs a parent run"))
    return parent


def _check_depth(level: int) -> None:
    if level > MAX_SUBAGENT_DEPTH:
        raise BearAgentError(
            ErrorInfo.of(
                "permission",
                "subagent_depth",
                f"child runs (subagents, actions, hook judges) may nest at most {MAX_SUBAGENT_DEPTH} deep; this one "
                f"would be level {level}",
            )
        )


def _usage_of(projection: RunProjection | None) -> ChildUsage:
    if projection is None:
        return ChildUsage()
    u = projection.usage
    return ChildUsage(
        model_iterations=u.model_iterations,
        tool_calls=u.tool_calls,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cost_microusd=u.cost_microusd,
    )


__all__ = [
    "RunOptions",
    "RunResult",
    "WorkspaceRuntime",
    "open_store",
    "state_dir",
]

"""Child runs: `Task` subagents, action tools and the judges of `prompt` / `agent` hooks, each a run inside the
run that started it.

A child's budget is what its parent has left (intersected with its own), its tools a subset of the parent's, and
its usage is charged to the parent (`ChildRunFinished` v2) when it ends. A judge run never fires hooks of the event
that started it (nor of any event an enclosing judge was started by), and child runs nest at most
`MAX_SUBAGENT_DEPTH` deep.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId, SessionId, ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.domain.run_events import ChildRunFinishedV2, ChildRunStartedV1, ChildUsage, TriggerType
from bearagent.domain.specs import ModelEntry, ModelPrice, call_timeout_ms
from bearagent.domain.state import TERMINAL_RUN_STATUSES, RunProjection
from bearagent.hooks.bridge import LoopHookAdapter, SessionHooks
from bearagent.hooks.dispatcher import firing_hook_event
from bearagent.ports import ModelProvider, ToolContext
from bearagent.registries.actions import invoke_action
from bearagent.runtime.observer import ChildRunObserver
from bearagent.runtime.plan import AgentPlan
from bearagent.runtime.run_context import CurrentRun, current_run
from bearagent.service.run_specs import child_run
from bearagent.service.run_types import RunOptions
from bearagent.tools.gate import ToolGate
from bearagent.tools.runtime_tools import ChildRunResult

if TYPE_CHECKING:
    from bearagent.service.host import RunHost

MAX_SUBAGENT_DEPTH = 3


class ChildRuns:
    """The child runs of one workspace runtime (see the module docstring)."""

    def __init__(self, runtime: RunHost) -> None:
        self._rt = runtime

    async def judge(self, prompt: str, model: str | None) -> str:
        """A `prompt` hook: the handler's model (else the default model) answers `{ok, reason}`, with no tools. Inside
        a run it is a child run of that run (in its log, charged to its budgets, no hooks of its own); a
        session-level hook (no run yet) makes one direct call."""
        ref = model or self._rt.loaded.config.default_model or ""
        entry = self._rt.loaded.models.for_use(
            self._rt.loaded.models.resolve(ref, where="prompt hook"), self._rt.loaded.env
        )
        provider = self._rt.resources.provider(entry, f"judge:{self._rt.ids.new(SessionId)}")
        parent = current_run.get()
        if parent is None:
            request = ModelRequest(
                model=entry.model or entry.name,
                messages=(Message.user(prompt),),
                timeout_ms=call_timeout_ms(entry),
            )
            chunks: list[str] = []
            async for event in provider.stream(request):
                if event.kind == "text_delta":
                    chunks.append(event.text)
            return "".join(chunks)
        _check_depth(parent.spec.depth + 1)
        plan = judge_plan(
            entry.ref,
            entry.model or entry.name,
            provider,
            self._rt.resources.gate({}),
            price=entry.price,
            timeout_ms=call_timeout_ms(entry),
            provider_id=entry.provider,
        )
        event = firing_hook_event.get() or "hook"
        result = await self.spawn(
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

    async def agent_judge(self, prompt: str, agent_name: str | None) -> str:
        """An `agent` hook: a run of the named agent (default `explore`, read-only) answers `{ok, reason}`. Inside a
        run it is a child run of that run, charged to it; it never fires hooks of the event that started it (nor
        of any event an enclosing judge was started by), and it nests at most MAX_SUBAGENT_DEPTH deep."""
        event = firing_hook_event.get() or "hook"
        token = suppressed_hook_events.set(suppressed_hook_events.get() | {event})
        try:
            parent = current_run.get()
            if parent is None:
                options = RunOptions(
                    agent=agent_name or "explore", trigger_type="hook", trigger_ref=f"{event} agent hook"
                )
                return (await self._rt.run(prompt, options)).final
            session_key = f"judge:{self._rt.ids.new(SessionId)}"
            parent_model = self._rt.loaded.models.get(parent.model_ref()) if parent.model_ref() else None
            result = await self.run_child(
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
            suppressed_hook_events.reset(token)

    async def child_usage(self, child_id: RunId) -> ChildUsage:
        """What a finished child consumed (its own children included: their usage was charged to it)."""
        return _usage_of(await self._rt.store.fetch_run(child_id))

    # ---- child runs --------------------------------------------------------------------------------------------

    def task_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, str, ToolContext], Awaitable[ChildRunResult]]:
        async def run_child(agent_name: str, prompt: str, context: ToolContext) -> ChildRunResult:
            return await self.run_child(
                agent_name, prompt, context.tool_call_id, session_key, depth, model, "subagent", None
            )

        return run_child

    def action_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, Mapping[str, JsonValue], ToolContext], Awaitable[ChildRunResult]]:
        async def run_action(name: str, inputs: Mapping[str, JsonValue], context: ToolContext) -> ChildRunResult:
            action = self._rt.loaded.actions.get(name)
            if action is None:
                raise BearAgentError(ErrorInfo.of("tool", "unknown_action", f"there is no action named {name!r}"))
            # rendered by the one rule (`invoke_action`); a child run keeps its parent's model and tools
            prompt = invoke_action(action, inputs, root=self._rt.root, models=self._rt.loaded.models).prompt
            agent_name = action.agent or (context.agent_name or self._rt.loaded.config.default_agent)
            return await self.run_child(
                agent_name, prompt, context.tool_call_id, session_key, depth, model, "subagent", name
            )

        return run_action

    async def run_child(
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
        agent = self._rt.plans.require_agent(agent_name)
        hooks = self._rt.hook_wiring.hooks(session_key, str(self._rt.mode_in_force(agent).mode))
        plan = await self._rt.plans.plan(
            agent.name,
            session_key=session_key,  # one provider per session: a scripted model's turns run on in order
            hooks=hooks,
            parent_tools=parent.tool_names() | {"Skill"},
            parent_model=parent_model,
            depth=depth + 1,
        )
        return await self.spawn(
            parent,
            plan,
            prompt,
            self._rt.plans.budgets_for(agent, {}),
            session_key=session_key,
            depth=depth + 1,
            trigger=trigger,
            trigger_ref=trigger_ref,
            tool_call_id=tool_call_id,
            hooks=hooks,
        )

    async def spawn(
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
        parent_projection = await self._rt.store.fetch_run(parent.recorder.run_id)
        assert parent_projection is not None
        budgets = parent_projection.budget_limits.remaining(parent_projection.usage).intersect(own_budgets)
        child_id = self._rt.ids.new(RunId)
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
        spec = child_run(
            self._rt.root,
            goal=prompt,
            budgets=budgets,
            session_id=parent.spec.session_id,
            run_id=child_id,
            parent_run_id=parent.recorder.run_id,
            depth=depth,
            trigger_type=trigger,
            trigger_ref=trigger_ref,
        )
        loop = self._rt.loop(
            hooks=LoopHookAdapter(hooks, self._rt.sessions.transcript(session_key), stop_event="SubagentStop")
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
                ChildRunFinishedV2(child_run_id=child_id, status=final_status, usage=await self.child_usage(child_id))  # pyright: ignore[reportArgumentType]
            )
            parent.observer.subagent_finished(child_id, parent.recorder.run_id, plan.agent_name, final_status)
        return ChildRunResult(
            run_id=str(child_id),
            status=outcome.status,
            final_text=outcome.final_text,
            error_message=outcome.error.message if outcome.error is not None else None,
        )


def judge_plan(
    model_ref: str,
    model_name: str,
    provider: ModelProvider,
    gate: ToolGate,
    *,
    price: ModelPrice | None = None,
    timeout_ms: int | None = None,
    provider_id: str | None = None,
) -> AgentPlan:
    """The plan of a prompt hook's judge: no agent file, no tools (`gate`: an empty one), one model turn. The one
    owner of it: a live hook's judge (`ChildRuns.judge`) and a replayed one (`service/replay.py`)."""
    plan = AgentPlan(
        agent_name=JUDGE_AGENT,
        system_prompt=JUDGE_SYSTEM_PROMPT,
        model_ref=model_ref,
        model_name=model_name,
        provider=provider,
        gate=gate,
        price=price,
        provider_id=provider_id,
    )
    return plan if timeout_ms is None else dataclasses.replace(plan, timeout_ms=timeout_ms)


JUDGE_AGENT = "hook-judge"
JUDGE_SYSTEM_PROMPT = (
    "You evaluate a hook condition for an agent runtime. Read the hook input and answer only with a JSON object "
    '{"ok": true} or {"ok": false, "reason": "..."}.'
)
suppressed_hook_events: ContextVar[frozenset[str]] = ContextVar("bearagentsuppressed_hook_events", default=frozenset())
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

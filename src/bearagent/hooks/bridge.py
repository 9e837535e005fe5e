"""The bridge between the loop and the hook dispatcher: which hook groups a workspace has (one assembly for runs
and `bearagent hooks test`), and the loop's hook points mapped onto the Claude Code events."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.domain.specs import AgentSpec, HookMatcherSpec
from bearagent.hooks.dispatcher import HookDispatcher, HookOutcome
from bearagent.hooks.python_handlers import PluginHook, python_hook_groups
from bearagent.hooks.transcript import TranscriptWriter
from bearagent.runtime.plan import BatchedCall, CommandExpansion, ModelRequestDecision, PromptDecision, StopDecision

if TYPE_CHECKING:
    from bearagent.hooks.runners import PythonHookFunction


def assemble_hook_groups(
    config_groups: Iterable[HookMatcherSpec],
    agents: Iterable[AgentSpec],
    python_handlers: Iterable[PluginHook],
    *,
    exclude_events: frozenset[str] = frozenset(),
    workspace_agent_hooks: bool = True,
) -> tuple[list[HookMatcherSpec], dict[str, PythonHookFunction]]:
    """Every hook group of a workspace: config hooks, agent-scoped hooks (active only while that agent runs; an
    agent's Stop hooks also fire as SubagentStop when it runs as a subagent, as in Claude Code) and plugin Python
    handlers. `exclude_events` drops the events that must not fire (inside a hook's judge run);
    `workspace_agent_hooks=False` drops the hooks of the workspace's agent files (`disableAllHooks`)."""
    plugin_groups, functions = python_hook_groups(python_handlers)
    groups: list[HookMatcherSpec] = list(config_groups)
    for agent in agents:
        if not workspace_agent_hooks and agent.level == "workspace":
            continue
        for group in agent.hooks:
            scoped = group if group.agent is not None else group.model_copy(update={"agent": agent.name})
            groups.append(scoped)
            if scoped.event == "Stop":
                groups.append(scoped.model_copy(update={"event": "SubagentStop"}))
    groups.extend(plugin_groups)
    if exclude_events:
        groups = [g for g in groups if g.event not in exclude_events]
    return groups, functions


MAX_REWAKES = 8
"""`asyncRewake` wake-ups per run, like the cap on consecutive Stop blocks: a hook that always exits 2 cannot keep
a run going forever."""


@dataclass(frozen=True, slots=True)
class SessionHooks:
    dispatcher: HookDispatcher
    enabled: bool


class LoopHookAdapter:
    """Maps the loop's hook points onto the Claude Code events and keeps the session transcript up to date."""

    def __init__(self, hooks: SessionHooks, transcript: TranscriptWriter, *, stop_event: str = "Stop") -> None:
        self._dispatcher = hooks.dispatcher
        self._transcript = transcript
        self._stop_event = stop_event
        self._rewakes: dict[str, int] = {}

    async def user_prompt_submit(self, run_id: RunId, agent: str, prompt: str) -> PromptDecision:
        self._transcript.append_user_text(prompt, run_id=str(run_id), agent_name=agent)
        outcome = await self._dispatcher.fire(
            "UserPromptSubmit", {"prompt": prompt}, run_id=str(run_id), agent_name=agent
        )
        blocked = block_reason(outcome)
        if blocked is not None:  # a blocked prompt reaches no model: what waits for one keeps waiting
            return PromptDecision(block_reason=blocked)
        # what SessionStart and the session's finished `async` handlers said comes first, with this prompt
        contexts = [*self._dispatcher.take_context(), *filter(None, [outcome.additional_context])]
        return PromptDecision(block_reason=None, additional_context="\n\n".join(contexts) or None)

    async def user_prompt_expansion(self, run_id: RunId, agent: str, expansion: CommandExpansion) -> PromptDecision:
        payload: dict[str, JsonValue] = {
            "expansion_type": "slash_command",
            "command_name": expansion.command_name,
            "command_args": expansion.command_args,
            "command_source": expansion.command_source,
            "prompt": expansion.prompt,
        }
        outcome = await self._dispatcher.fire("UserPromptExpansion", payload, run_id=str(run_id), agent_name=agent)
        return PromptDecision(block_reason=block_reason(outcome), additional_context=outcome.additional_context)

    async def pre_model_request(self, run_id: RunId, agent: str, request: ModelRequest) -> ModelRequestDecision:
        outcome = await self._dispatcher.fire(
            "PreModelRequest",
            {"model_request": request.model_dump(mode="json")},
            run_id=str(run_id),
            agent_name=agent,
        )
        if outcome.updated_request is not None:
            merged = request.model_dump(mode="json")
            merged.update(outcome.updated_request)
            try:
                request = ModelRequest.model_validate(merged)
            except ValueError as exc:
                return ModelRequestDecision(
                    request=request, block_reason=f"a PreModelRequest hook returned an invalid request: {exc}"
                )
        return ModelRequestDecision(request=request, block_reason=block_reason(outcome))

    async def stop(self, run_id: RunId, agent: str, final_text: str, stop_hook_active: bool) -> StopDecision:
        await self._dispatcher.wait_background()  # the run's `async` handlers finish (and are logged) before it ends
        if final_text:
            self._transcript.append_message(Message.assistant(final_text), run_id=str(run_id), agent_name=agent)
        wakes = self._dispatcher.take_wakes(str(run_id))
        if wakes and self._rewakes.get(str(run_id), 0) < MAX_REWAKES:
            # an `asyncRewake` handler exited 2: the agent does not stop, it reads the handler's stderr and goes on
            # (Claude Code wakes the model with it); the Stop hooks fire when it stops again
            self._rewakes[str(run_id)] = self._rewakes.get(str(run_id), 0) + 1
            return StopDecision(block_reason="\n\n".join(f"An async hook reported: {w}" for w in wakes))
        payload: dict[str, JsonValue] = {"stop_hook_active": stop_hook_active, "last_assistant_message": final_text}
        if self._stop_event == "SubagentStop":
            payload.update({"agent_id": str(run_id), "agent_type": agent})
        outcome = await self._dispatcher.fire(
            self._stop_event,  # pyright: ignore[reportArgumentType]
            payload,
            run_id=str(run_id),
            agent_name=agent,
        )
        return StopDecision(block_reason=block_reason(outcome))

    async def post_tool_batch(self, run_id: RunId, agent: str, calls: Sequence[BatchedCall]) -> StopDecision:
        from bearagent.hooks.hook_input import hook_tool_name  # lazy: a run without hooks never loads it

        payload: dict[str, JsonValue] = {
            "tool_calls": [
                {
                    "tool_name": hook_tool_name(call.tool_name),
                    "tool_input": thaw_json_mapping(call.arguments),
                    "tool_use_id": call.tool_call_id,
                    "tool_response": call.content,
                }
                for call in calls
            ]
        }
        outcome = await self._dispatcher.fire("PostToolBatch", payload, run_id=str(run_id), agent_name=agent)
        return StopDecision(block_reason=block_reason(outcome))

    async def pre_compact(self, run_id: RunId, agent: str, trigger: str, custom_instructions: str) -> StopDecision:
        payload: dict[str, JsonValue] = {"trigger": trigger, "custom_instructions": custom_instructions}
        outcome = await self._dispatcher.fire("PreCompact", payload, run_id=str(run_id), agent_name=agent)
        return StopDecision(block_reason=block_reason(outcome))

    async def post_compact(self, run_id: RunId, agent: str, trigger: str, summary: str) -> None:
        payload: dict[str, JsonValue] = {"trigger": trigger, "compact_summary": summary}
        await self._dispatcher.fire("PostCompact", payload, run_id=str(run_id), agent_name=agent)

    async def stop_failure(self, run_id: RunId, agent: str, error: ErrorInfo, partial_text: str) -> None:
        from bearagent.hooks.hook_input import stop_failure_kind

        payload: dict[str, JsonValue] = {
            "error": stop_failure_kind(error.category, error.code),
            "error_details": f"{error.code}: {error.message}",
            "last_assistant_message": partial_text or error.message,
        }
        await self._dispatcher.fire("StopFailure", payload, run_id=str(run_id), agent_name=agent)

    async def notification(self, run_id: RunId, agent: str, message: str, notification_type: str) -> None:
        payload: dict[str, JsonValue] = {
            "message": message,
            "title": "BearAgent",
            "notification_type": notification_type,
        }
        await self._dispatcher.fire("Notification", payload, run_id=str(run_id), agent_name=agent)


def block_reason(outcome: HookOutcome) -> str | None:
    if not outcome.continue_:
        return outcome.stop_reason or "a hook stopped the run (continue: false)"
    if outcome.blocked:
        return outcome.block_reason or "blocked by a hook"
    return None

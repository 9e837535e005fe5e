"""What one run needs to know about its current agent, resolved before the loop starts (and again on a switch)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest, ToolDescriptor
from bearagent.domain.run_events import RunEventPayload, RunRequest, TriggerType
from bearagent.domain.specs import ActionSpec, ModelPrice
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import ModelProvider, ToolContext


class ToolCaller(Protocol):
    """The tool gate, as the loop sees it: every call goes through `call`, which never raises for tool failures."""

    async def call(self, request: ToolRequest, context: ToolContext) -> ToolResult: ...


@dataclass(frozen=True, slots=True)
class BoundTool:
    """One tool offered to the model: the name the model sees, the gate's internal name and where it came from."""

    projected_name: str
    internal_name: str
    source: str
    descriptor: ToolDescriptor
    spec_version: str = "1"


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """How a run's history is compacted (`compaction:` resolved for the agent; `runtime/compaction.py`): when, how
    much is kept verbatim, and the model that writes the summary (the agent's own unless `compaction.model`)."""

    model_ref: str
    model_name: str
    provider: ModelProvider
    enabled: bool = True
    threshold: float = 0.8
    keep_recent_turns: int = 2
    price: ModelPrice | None = None
    max_output_tokens: int | None = None
    timeout_ms: int = 120_000
    context_window: int | None = None
    """The summary model's window when its entry sets one (what of the transcript fits is cut to it)."""
    provider_id: str | None = None
    """The summary model entry's `provider` id, recorded in its calls' `ModelCallRequested` v4."""


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """The resolved agent for the loop: prompt, model and the projected tools with their gate."""

    agent_name: str
    system_prompt: str
    model_ref: str
    model_name: str
    provider: ModelProvider
    gate: ToolCaller
    tools: Mapping[str, BoundTool] = field(default_factory=dict[str, BoundTool])
    system_reminder: str | None = None
    price: ModelPrice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    timeout_ms: int = 120_000
    permission_mode: str = "default"
    max_switches: int = 10
    max_output_continuations: int = 3
    """How often an answer the output limit cut is continued (`model_turns.max_output_continuations`)."""
    tool_settings: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    context_window: int | None = None
    """The model entry's `context_window` (None: discovered from the server, else the default of the name)."""
    compaction: CompactionPlan | None = None
    """None: the history is never compacted (a plan built without one, e.g. a hook judge's)."""
    provider_id: str | None = None
    """The model entry's `provider` id (`openai`, `anthropic`, ...), recorded in each `ModelCallRequested` v4 so a
    reader of the log knows where the call went; None: unknown (a plan built outside the planner)."""
    taken_by_run: tuple[str, ...] = ()
    """Tools the run's caller took away by name (`run --disallowed-tools Bash`): a call of one names that flag."""
    fallback: AgentPlan | None = None
    """The same plan on the fallback model (Claude Code's `fallbackModel`): the loop switches to it when this
    plan's model is overloaded or unavailable (`model_calls.falls_back`). None: no fallback."""

    @property
    def descriptors(self) -> tuple[ToolDescriptor, ...]:
        return tuple(tool.descriptor for tool in self.tools.values())

    def side_effect(self, name: str) -> str:
        """What calling tool `name` (as the model names it) may do: `read_only`, `write`, `execute`, `network`. MCP
        tools, tools that start child runs (`Task`, actions: the child may write) and tools the plan does not know
        count as `unknown` (never safe to run twice)."""
        bound = self.tools.get(name)
        if bound is None or bound.source in ("mcp", "action") or bound.internal_name == "Task":
            return "unknown"
        tools = cast(Mapping[str, object], getattr(self.gate, "tools", {}))
        spec = getattr(tools.get(bound.internal_name), "spec", None)
        side_effect = getattr(spec, "side_effect", None)
        return side_effect if isinstance(side_effect, str) else "unknown"

    @property
    def tool_spec_versions(self) -> dict[str, str]:
        return {tool.internal_name: tool.spec_version for tool in self.tools.values()}


@dataclass(frozen=True, slots=True)
class CommandExpansion:
    """A typed slash command (`/name args`, `bearagent action run name args`) whose body became the run's goal:
    what Claude Code's UserPromptExpansion hook reads."""

    command_name: str
    command_args: str
    command_source: str
    """`project` (a workspace file) or `user` (the user's config dir, a plugin, a built-in)."""
    prompt: str
    """The command as typed: `/name args`."""

    @classmethod
    def of(cls, action: ActionSpec, arguments: str) -> CommandExpansion:
        source = "project" if action.level == "workspace" else "user"
        typed = f"/{action.name} {arguments}".rstrip()
        return cls(command_name=action.name, command_args=arguments, command_source=source, prompt=typed)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """The caller's side of a run: the goal and where it belongs."""

    goal: str
    workspace_root: Path
    budgets: BudgetLimits
    session_id: SessionId | None = None
    run_id: RunId | None = None
    parent_run_id: RunId | None = None
    depth: int = 0
    trigger_type: TriggerType = "message"
    trigger_ref: str | None = None
    history: Sequence[Message] = ()
    prelude: Sequence[RunEventPayload] = ()
    """Facts that happened before the run existed (SessionStart hook executions), recorded after RunStarted."""
    request: RunRequest = field(default_factory=RunRequest)
    """Who asked and the per-run choices (RunCreated v3)."""
    expansion: CommandExpansion | None = None
    """The slash command the goal was expanded from (UserPromptExpansion hooks fire before UserPromptSubmit)."""
    conversation_calls: int | None = None
    """Model calls the conversation's provider was sent before this run, from the log (`ModelRequest.
    conversation_calls`, told to the provider on the run's first call); None: a new conversation."""


STOP_BLOCK_CAP = 8
"""How many times in a row Stop hooks may keep an agent from stopping before it stops anyway (the loop enforces
it; the hook dispatcher records when it overrides the hooks)."""

# An agent switch re-plans the run for the new agent.
Planner = Callable[[str], Awaitable[AgentPlan]]


@dataclass(frozen=True, slots=True)
class PromptDecision:
    block_reason: str | None = None
    additional_context: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequestDecision:
    request: ModelRequest
    block_reason: str | None = None


@dataclass(frozen=True, slots=True)
class StopDecision:
    block_reason: str | None = None


@dataclass(frozen=True, slots=True)
class BatchedCall:
    """One call of a parallel batch as PostToolBatch reports it: the result text is what the model sees."""

    tool_name: str
    arguments: Mapping[str, JsonValue]
    tool_call_id: str
    content: str


@runtime_checkable
class ExpansionHooks(Protocol):
    """Hook adapters that fire UserPromptExpansion (a run started from a slash command); the loop's other adapters
    (a replay's) need not."""

    async def user_prompt_expansion(self, run_id: RunId, agent: str, expansion: CommandExpansion) -> PromptDecision:
        """Before UserPromptSubmit: a block refuses the command; context is added to the prompt."""
        ...


class LoopHooks(Protocol):
    """The hook points of the loop (PreToolUse/PostToolUse live in the tool gate)."""

    async def user_prompt_submit(self, run_id: RunId, agent: str, prompt: str) -> PromptDecision: ...

    async def pre_model_request(self, run_id: RunId, agent: str, request: ModelRequest) -> ModelRequestDecision: ...

    async def stop(self, run_id: RunId, agent: str, final_text: str, stop_hook_active: bool) -> StopDecision: ...

    async def post_tool_batch(self, run_id: RunId, agent: str, calls: Sequence[BatchedCall]) -> StopDecision:
        """After a parallel batch of tool calls; a block ends the run before the next model call."""
        ...

    async def pre_compact(self, run_id: RunId, agent: str, trigger: str, custom_instructions: str) -> StopDecision:
        """Before a compaction (`trigger` manual/auto); a block keeps the history as it is."""
        ...

    async def post_compact(self, run_id: RunId, agent: str, trigger: str, summary: str) -> None:
        """After a compaction (observation only)."""
        ...

    async def stop_failure(self, run_id: RunId, agent: str, error: ErrorInfo, partial_text: str) -> None:
        """A run ends failed (observation only)."""
        ...

    async def notification(self, run_id: RunId, agent: str, message: str, notification_type: str) -> None:
        """The run waits for someone (an approval): observation only."""
        ...

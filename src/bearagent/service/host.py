"""What the run service's parts need of it, each named as a narrow protocol (issue 30).

`runner.WorkspaceRuntime` composes the parts (`agent_plans`, `children`, `session_hooks`, `resuming`, `compacting`)
and each part is handed the runtime, but typed by what it reads here, not by `WorkspaceRuntime`: so no part imports
the runner (the runner imports them), a reader sees what a part depends on, and a test can pass a smaller host.
`RunResources` is what `app/` opens for a workspace (`app.resources.Resources`): the runtime is given one and never
builds an adapter, a loop or a gate itself (`tests/contract/test_composition_root.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import IdGenerator, RunId, SessionId, ToolCallId
from bearagent.domain.run_events import ApprovalChoice
from bearagent.domain.specs import AgentSpec, ModelEntry
from bearagent.hooks.bridge import LoopHookAdapter, SessionHooks
from bearagent.ports import Asker, Clock, ModelProvider, Tool, ToolContext, ToolInterceptor, WorkspaceStore
from bearagent.runtime.approvals import ApprovalBroker
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, LoopHooks
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.leases import LeaseKeeper
from bearagent.service.run_types import RunOptions, RunResult
from bearagent.service.sessions import SessionService
from bearagent.tools.gate import ToolGate
from bearagent.tools.policy import ToolPolicy
from bearagent.tools.runtime_tools import ChildRunResult
from bearagent.trust.modes import ModeInForce
from bearagent.trust.seals import Sealer
from bearagent.workspace import LoadedWorkspace

if TYPE_CHECKING:
    from bearagent.mcp.elicitation import Elicitor, PersonAsker
    from bearagent.mcp.manager import McpConnectionManager, McpServerStatus
    from bearagent.service.planner import RunChoices


class RunResources(Protocol):
    """What a workspace's run service holds open, opened by `app/` (`app.resources.Resources`): the store and its
    one writer, the providers (one per session key and model entry), the MCP connections, the lease keeper."""

    @property
    def store(self) -> WorkspaceStore: ...
    @property
    def writer(self) -> RunWriter: ...
    @property
    def lease(self) -> LeaseKeeper: ...
    @property
    def has_provider_override(self) -> bool: ...
    async def recover(self) -> list[RunId]: ...
    def provider(self, entry: ModelEntry, session_key: str) -> ModelProvider: ...
    def override_providers(self, make: Callable[[ModelEntry, str], ModelProvider] | None) -> None: ...
    def mcp_status(self) -> list[McpServerStatus] | None: ...
    async def mcp_manager(self) -> McpConnectionManager | None: ...
    def loop(self, *, retry: RetryPolicy, hooks: LoopHooks | None, observer: RunObserver) -> AgentLoop: ...
    def gate(
        self,
        tools: Mapping[str, Tool],
        *,
        policy: ToolPolicy | None = None,
        interceptor: ToolInterceptor | None = None,
        ask: Asker | None = None,
    ) -> ToolGate: ...
    async def aclose(self) -> None: ...


class ChildRunners(Protocol):
    """Child runs as the planner binds them to the runtime tools, and as hooks ask their judges (`children.py`)."""

    def task_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, str, ToolContext], Awaitable[ChildRunResult]]: ...
    def action_runner(
        self, session_key: str, depth: int, model: ModelEntry
    ) -> Callable[[str, Mapping[str, JsonValue], ToolContext], Awaitable[ChildRunResult]]: ...
    async def judge(self, prompt: str, model: str | None) -> str: ...
    async def agent_judge(self, prompt: str, agent_name: str | None) -> str: ...


class AgentPlanner(Protocol):
    """The runtime's planner (`agent_plans.AgentPlans`), as the parts that run a loop call it."""

    def require_agent(self, name: str) -> AgentSpec: ...
    def budgets_for(self, agent: AgentSpec, overrides: Mapping[str, int]) -> BudgetLimits: ...
    def prompt_hash(self, system_prompt: str) -> str: ...
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
    ) -> AgentPlan: ...


class HookWiring(Protocol):
    """The runtime's session hook wiring (`session_hooks.SessionHookWiring`): a session's hook dispatcher."""

    def hooks(self, session_id: str, permission_mode: str) -> SessionHooks: ...
    def elicitor(self, hooks: SessionHooks, *, wait: bool = False) -> Elicitor | None: ...


class WorkspaceHost(Protocol):
    """The loaded workspace and the permission mode in force for one of its agents."""

    @property
    def loaded(self) -> LoadedWorkspace: ...
    @property
    def root(self) -> Path: ...
    def mode_in_force(self, agent: AgentSpec) -> ModeInForce: ...


class PlanHost(WorkspaceHost, Protocol):
    """What `agent_plans.AgentPlans` reads: the providers and MCP tools, the child runners it binds, the asker."""

    @property
    def ask(self) -> Asker | None: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def children(self) -> ChildRunners: ...
    @property
    def resources(self) -> RunResources: ...


class HookHost(WorkspaceHost, Protocol):
    """What `session_hooks.SessionHookWiring` reads: the judges, the transcripts, the pending session facts, and
    who answers MCP servers' questions when no hook does."""

    @property
    def answer_elicitation(self) -> PersonAsker | None: ...
    @property
    def ids(self) -> IdGenerator: ...

    @property
    def children(self) -> ChildRunners: ...
    @property
    def sessions(self) -> SessionService: ...
    @property
    def store(self) -> WorkspaceStore: ...


class RunHost(WorkspaceHost, Protocol):
    """What a part that runs a loop of its own reads (`children`: a child run; `compacting`: `/compact`): the
    admission checks, an agent's plan and budgets, a loop over the store and writer, the session's hooks."""

    @property
    def clock(self) -> Clock: ...
    @property
    def ids(self) -> IdGenerator: ...
    @property
    def store(self) -> WorkspaceStore: ...
    @property
    def resources(self) -> RunResources: ...
    @property
    def sessions(self) -> SessionService: ...
    @property
    def plans(self) -> AgentPlanner: ...
    @property
    def hook_wiring(self) -> HookWiring: ...
    def admit(self, *, hooks: bool = True) -> None: ...
    async def admit_and_recover(self) -> None: ...
    def loop(self, *, hooks: LoopHookAdapter | None, observer: RunObserver) -> AgentLoop: ...
    async def run(
        self, prompt: str, options: RunOptions | None = None, observer: RunObserver | None = None
    ) -> RunResult: ...


class ResumeHost(RunHost, Protocol):
    """What `resuming.py` reads besides a run's: the writer, the seals over answers, the approval broker."""

    @property
    def writer(self) -> RunWriter: ...
    @property
    def seals(self) -> Sealer: ...
    def broker(
        self,
        session_id: SessionId | None,
        *,
        wait: bool,
        preanswered: Mapping[ToolCallId, ApprovalChoice] | None = None,
        caller: str = "local",
    ) -> ApprovalBroker | None: ...
    async def session_rules(self, session_id: SessionId) -> tuple[str, ...]: ...
    def seal_answer(self, run_id: str, approval_id: str, decision: str) -> str: ...

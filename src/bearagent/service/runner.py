"""The workspace runtime: the thin face that starts, continues and cancels runs over its collaborators.

`workspace.py` loads a workspace; a `WorkspaceRuntime` composes what running needs, each in a module of its own:
the resources `app/` opens (`host.RunResources`: store, writer, providers, MCP, leases), `sessions.py` (resolve, history, transcripts),
`admission.py` (guards, trust, hooks, the permission mode), `agent_plans.py` (an agent's name -> `AgentPlan`),
`children.py` (subagents, action tools, hook judges), `session_hooks.py` (a session's hooks and their facts),
`resuming.py` (resume, approvals answered later) and the approval broker (`runtime/approvals.py`). What is left
here: a run from prompt to outcome in a session (lock, history, plan, loop, session record), actions, and the
loop and broker every run gets. The CLI, the server and the Python API (`bearagent.api`) are thin layers over it.

Why it is still over 400 lines: a run from prompt to outcome (prepare, record or queue, execute under the session
lock, the session record afterwards) is one sequence whose steps share the prepared run, and the runtime is also the
narrow hosts (`host.py`) its parts are given, which costs a line or two per delegated name; every part with a rule
of its own has left for its module.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonObject, JsonValue
from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import IdGenerator, RunId, SessionId, ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import RunEventPayload, TriggerType
from bearagent.domain.specs import AgentSpec
from bearagent.mcp.elicitation import PersonAsker, current_elicitor
from bearagent.service import admission, run_specs
from bearagent.service.agent_plans import AgentPlans
from bearagent.service.children import JUDGE_AGENT, JUDGE_SYSTEM_PROMPT, MAX_SUBAGENT_DEPTH, ChildRuns
from bearagent.service.host import RunResources
from bearagent.service.run_types import RunOptions, RunResult, result_of, run_metadata
from bearagent.service.session_hooks import SessionHookWiring
from bearagent.service.sessions import SessionService, session_key
from bearagent.trust.run_seals import check_created
from bearagent.trust.seals import Sealer
from bearagent.workspace import LoadedWorkspace

if TYPE_CHECKING:
    pass
from bearagent.domain.run_events import ApprovalChoice
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.hooks.bridge import LoopHookAdapter
from bearagent.ports import Clock, WorkspaceStore
from bearagent.registries.actions import invoke_action
from bearagent.runtime.approvals import ApprovalBroker
from bearagent.runtime.loop import HAND_BACK, AgentLoop
from bearagent.runtime.observer import NullObserver, RunObserver
from bearagent.runtime.plan import (
    AgentPlan,
    CommandExpansion,
    RunSpec,
)
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_writer import RunWriter
from bearagent.tools.gate import Asker
from bearagent.trust.modes import ModeInForce

MAX_SESSION_AGENT_RUNS = 50
"""How many of a session's newest runs are looked at for the sealed record that names its agent."""


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A run checked and placed (its session, agent and budgets), not yet recorded."""

    prompt: str
    options: RunOptions
    session: SessionRecord | None
    created: bool
    agent: AgentSpec
    budgets: BudgetLimits
    session_key: str


# ---- the runtime ---------------------------------------------------------------------------------------------


class WorkspaceRuntime:
    """Runs agents in one loaded workspace over the resources `app/` opened for it. Open one with
    `bearagent.app.runtime.open_runtime(loaded)` (the one composition root); close it with `aclose()`."""

    def __init__(
        self,
        loaded: LoadedWorkspace,
        resources: RunResources,
        *,
        clock: Clock,
        ids: IdGenerator,
        retry: RetryPolicy | None = None,
        ask: Asker | None = None,
        permission_mode: str | None = None,
    ) -> None:
        self.loaded = loaded
        self.clock: Clock = clock
        self.ids: IdGenerator = ids
        self.retry = retry or RetryPolicy()
        self.ask = ask
        self.answer_elicitation: PersonAsker | None = None
        """Puts an MCP server's question to a person when no Elicitation hook answers (the interactive session)."""
        self.permission_mode_flag = permission_mode
        """A mode the user chose for this process (`--permission-mode`); it outranks every file."""
        self.resources = resources
        self.sessions = SessionService(loaded, self.resources, self.clock, self.ids)
        self.children = ChildRuns(self)
        self.plans = AgentPlans(self)
        """Planning (`agent_plans.py`): callers call the part (`runtime.plans.plan`, `.require_agent`, ...)."""
        self.hook_wiring = SessionHookWiring(self)
        self.seals = Sealer(loaded.user_dir)
        """Seals the answers kept in the (workspace's, untrusted) log: approvals and "allow always" rules."""

    # ---- collaborators -------------------------------------------------------------------------------------------

    @property
    def store(self) -> WorkspaceStore:
        return self.resources.store

    @property
    def writer(self) -> RunWriter:
        return self.resources.writer

    @property
    def root(self) -> Path:
        return self.loaded.root

    def admit(self, *, hooks: bool = True) -> None:
        """Refuse a workspace that may not run (`service/admission.admit`: guards, trust, hooks)."""
        admission.admit(self.loaded, hooks=hooks)

    async def create_session(
        self, agent: str | None, *, caller: str, title: str | None = None, auth_context: JsonObject | None = None
    ) -> SessionRecord:
        """A new session recorded before any run (HTTP `POST .../sessions`, A2A's new context): the workspace is
        admitted (guards, trust: no hook runs yet), its agent chosen and checked (`SessionService.new_record`)."""
        self.admit(hooks=False)
        return await self.sessions.create(agent, caller=caller, title=title, auth_context=auth_context)

    async def admit_and_recover(self) -> None:
        """Before a run is started or continued: admission, then the recovery scan (a dead owner's run is marked
        interrupted before anything reads the session's runs)."""
        self.admit()
        await self.resources.recover()

    def notices(self, agent_name: str | None = None) -> list[str]:
        return admission.notices(self.loaded, agent_name, flag=self.permission_mode_flag)

    def mode_in_force(self, agent: AgentSpec) -> ModeInForce:
        return admission.mode_for(self.loaded, agent, flag=self.permission_mode_flag)

    async def aclose(self) -> None:
        """SessionEnd hooks and the sessions' shells, then what the runtime holds open; the second even when the
        first fails."""
        from bearagent.service.closing import close_all

        await close_all([self.hook_wiring.close, self.resources.aclose])

    # ---- running -----------------------------------------------------------------------------------------------

    async def run(
        self, prompt: str, options: RunOptions | None = None, observer: RunObserver | None = None
    ) -> RunResult:
        """Run `prompt` to a terminal state in a session (new by default) and return its final record."""
        prepared = await self._prepare(prompt, options or RunOptions())
        return await self._execute(prepared, observer, None)

    async def enqueue(self, prompt: str, options: RunOptions | None = None) -> RunProjection:
        """Record a run of `prompt` without executing it (`queued`, RunCreated v4 `planned: false` only) and return its
        record; a worker (`worker.py`) plans and starts it, after the earlier runs of its session, and records its
        plan then (RunStarted v3). Nothing is started to accept it (no MCP server, no provider: docs/store.md).
        Configuration errors (untrusted workspace, unknown agent or model, a missing key, …) raise here, before
        anything is recorded."""
        prepared = await self._prepare(prompt, options or RunOptions())
        self.plans.check_model(prepared.agent.name, prepared.options.model)
        loop = self.loop(hooks=None, observer=NullObserver())
        recorder = await loop.create_unplanned(self._spec(prepared, (), ()), prepared.agent.name)
        assert recorder.projection is not None
        return recorder.projection

    async def start_queued(
        self,
        run_id: RunId,
        observer: RunObserver | None = None,
        *,
        caller: str = "local",
        seen: RunProjection | None = None,
    ) -> RunResult:
        """Execute the queued run `run_id` (recorded by `enqueue`, perhaps in another process) to a terminal state,
        if it is its session's next (`queue.py`). It is claimed under its session's lock (the run's own for a run
        without a session), so of two processes only one starts it: the other gets `SessionBusy`, or a `conflict`
        error (`not_queued`, `not_next`) once it holds the lock. Cancelled before its RunStarted, it is recorded
        cancelled (no worker takes it again), unless a stopping worker hands it back (`HAND_BACK`): then it stays
        queued for the next worker. `caller`: whose run it is (the worker says). `seen`: the run as a scan read it
        (a worker's): its session, which never changes, names the lock without a read first, so a claim that
        another process won costs one try of the lock; everything else is read again under the lock."""
        from bearagent.service.queue import no_queued_run

        try:
            run = seen if seen is not None and seen.run_id == run_id else await self.store.fetch_run(run_id)
            if run is None:
                raise no_queued_run(run_id)
            lane = run.session_id if run.session_id is not None else SessionId(str(run.run_id))
            async with self.store.session_lock(lane, wait=False):
                return await self._start_locked(run_id, observer, caller)
        except asyncio.CancelledError as stopped:
            if stopped.args != (HAND_BACK,):  # cancelled before its RunStarted: the log says so, none takes it again
                await self._cancel_if_queued(run_id)
            # a stopping worker hands its runs back (`worker.py`): one that never started stays queued for the next
            raise

    async def _start_locked(self, run_id: RunId, observer: RunObserver | None, caller: str) -> RunResult:
        """`start_queued` once the run's lane lock is held: still queued, and its session's next?"""
        from bearagent.service.queue import is_next, no_queued_run, not_queued, queued_request

        run = await self.store.fetch_run(run_id)
        if run is None:
            raise no_queued_run(run_id)
        if run.status != "queued":
            raise not_queued(run)
        if run.session_id is not None and not is_next(
            run, await self.store.fetch_runs(session_id=run.session_id, limit=100_000)
        ):
            raise BearAgentError(
                ErrorInfo.of("conflict", "not_next", f"run {run_id} waits for an earlier run of its session"),
                hint="its session's earlier runs go first; a worker takes it after them",
            )
        events = list(await self.store.fetch_events(run_id))
        check_created(self.seals, run_id, events, caller=caller)  # recorded by this user, not planted
        prompt, options = queued_request(run, events)
        prepared = await self._prepare(prompt, replace(options, caller=caller))
        return await self._execute(prepared, observer, events[0], locked=True)

    async def sealed_session_agent(self, session: SessionRecord, caller: str) -> str | None:
        """The agent a continued session runs with when the caller names none: the one its newest run that carries
        this user's seal was recorded with (`RunCreated.agent_name`, sealed), or None (the configured default). The
        session row's `active_agent_name` is not sealed (a shipped or edited `state.db` can name a more capable
        agent there), so it only says which agent to look for, never which one runs."""
        if not session.active_agent_name:
            return None
        runs = await self.store.fetch_runs(session_id=session.session_id, limit=MAX_SESSION_AGENT_RUNS)
        for run in runs:  # newest first
            if run.parent_run_id is not None:
                continue  # a subagent's run (Task): the session's own agent is a primary one's
            events = list(await self.store.fetch_events(run.run_id, limit=1))
            try:
                created = check_created(self.seals, run.run_id, events, caller=caller)
            except BearAgentError:
                continue  # not this user's record: it chooses nothing
            switched = run.effective_agent_name
            if switched and switched != created.agent_name:
                # a switch inside the run (AgentSwitched) is not sealed: it counts only toward an agent the sealed
                # agent may switch to anyway (its `switch` list), so an edited log reaches nothing more capable
                spec = self.loaded.agents.get(created.agent_name)
                if spec is not None and switched in spec.switch:
                    return switched
            return created.agent_name
        return None

    async def _cancel_if_queued(self, run_id: RunId) -> None:
        from bearagent.domain.run_events import RunCancelledV1
        from bearagent.service.facts import append_outside_loop

        run = await self.store.fetch_run(run_id)
        if run is None or run.status != "queued":
            return  # it started (the loop records its own end) or ended meanwhile
        cancelled = RunCancelledV1(reason="cancelled by the caller before it started")
        with contextlib.suppress(BearAgentError):  # it moved on meanwhile
            await append_outside_loop(self.writer, self.clock, self.ids, run_id, run.last_sequence, (cancelled,))

    async def _prepare(self, prompt: str, options: RunOptions) -> _Prepared:
        if not prompt.strip():
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "empty_prompt", "the prompt is empty"),
                hint='pass the task as an argument: bearagent run "..." (or `-` to read it from stdin)',
            )
        options = replace(options, metadata=run_metadata(options.metadata))  # refused before anything is recorded
        from bearagent.service.preflight import refuse_if_any

        # one preflight with `doctor`: guards, trust, hooks, the model's key (before anything is written)
        refuse_if_any(
            self.loaded, options.agent, model=options.model, check_key=not self.resources.has_provider_override
        )
        if options.session is None:  # a new session: nothing is written for a run that cannot start
            admission.check_model(
                self.loaded, self.plans.require_agent(options.agent or self.loaded.config.default_agent), options.model
            )
        await self.resources.recover()
        config = self.loaded.config
        agent_name = options.agent
        session: SessionRecord | None = None
        created = False
        if options.trigger_type in ("message",):
            # on a thread: creating a session writes, and a write may wait for another process's lock
            session, created = await asyncio.to_thread(
                self.sessions.resolve_session, options.session, options.agent or config.default_agent, options.caller
            )
            if agent_name is None and not created:  # the row is not sealed: its own sealed record says
                agent_name = await self.sealed_session_agent(session, options.caller)
        agent_name = agent_name or config.default_agent
        agent = self.plans.require_agent(agent_name)
        if options.trigger_type == "message" and not agent.is_primary:
            raise BearAgentError(
                ErrorInfo.of("invalid_request", "not_primary", f"agent {agent.name!r} is a subagent (mode: subagent)"),
                hint="run a primary agent (`bearagent agents list` shows the modes), or delegate to it with Task",
            )
        if created and agent.initial_prompt and agent.initial_prompt.strip():
            prompt = f"{agent.initial_prompt.strip()}\n\n{prompt}"  # Claude Code's `initialPrompt`: the first turn
        if options.run_id is None:  # known before the first event
            options = replace(options, run_id=self.ids.new(RunId))
        assert options.run_id is not None
        key = session_key(session.session_id if session is not None else None, options.run_id)
        return _Prepared(prompt, options, session, created, agent, self.plans.budgets_for(agent, options.budgets), key)

    def _spec(self, prepared: _Prepared, history: Sequence[Message], prelude: Sequence[RunEventPayload]) -> RunSpec:
        options, session = prepared.options, prepared.session
        run_id = options.run_id
        assert run_id is not None, "`_prepare` gives every run its id"
        return run_specs.new_run(
            self.root,
            self.seals,
            options,
            run_id=run_id,
            goal=prepared.prompt,
            agent_name=prepared.agent.name,
            budgets=prepared.budgets,
            session_id=session.session_id if session is not None else None,
            history=history,
            prelude=prelude,
        )

    async def _execute(
        self, prepared: _Prepared, observer: RunObserver | None, queued: Event | None, *, locked: bool = False
    ) -> RunResult:
        """Run a prepared run in its session (under its lock; `locked`: the caller holds it): a new one, or the
        queued one whose RunCreated is `queued`."""
        options, session, agent, session_key = prepared.options, prepared.session, prepared.agent, prepared.session_key

        async def go() -> RunResult:
            hooks = self.hook_wiring.hooks(session_key, str(self.mode_in_force(agent).mode))
            history: list[Message] = []
            if session is not None:
                # off the loop: the history is read through the store's synchronous face, which on PostgreSQL
                # waits for the store's own loop (a long session is many reads)
                history = await asyncio.to_thread(
                    self.sessions.session_history, session.session_id, before=options.run_id if queued else None
                )
                await self.hook_wiring.start(session_key, hooks, created=prepared.created)
            remembered = await self.session_rules(session.session_id) if session is not None else ()
            ask = self.broker(
                session.session_id if session is not None else None,
                wait=options.wait_approvals,
                caller=options.caller,
            )

            async def planner(name: str) -> AgentPlan:
                plan = await self.plans.plan(
                    name,
                    session_key=session_key,
                    model_override=options.model,
                    hooks=hooks,
                    extra_allow=(*options.allowed_tools, *remembered),
                    ask=ask,
                    choices=options.choices,
                )
                if options.user_shell is not None:  # `!cmd`: the user's command is the run's one Bash call
                    from bearagent.service.user_shell import user_shell_plan

                    plan = user_shell_plan(plan, options.user_shell)
                return plan

            plan = await planner(agent.name)
            position: int | None = None
            if session is not None and not prepared.created:
                from bearagent.service.resuming import model_calls_so_far

                position = await model_calls_so_far(self, session.session_id, None)  # the conversation's place
            prelude = await self.hook_wiring.prelude(session_key, session.session_id if session is not None else None)
            spec = replace(self._spec(prepared, history, prelude), conversation_calls=position)
            loop = self.loop(
                hooks=LoopHookAdapter(hooks, self.sessions.transcript(session_key)) if hooks.enabled else None,
                observer=observer or NullObserver(),
            )
            elicitor = self.hook_wiring.elicitor(hooks, wait=options.wait_approvals)  # MCP servers' questions
            token = current_elicitor.set(elicitor) if elicitor is not None else None
            try:
                if queued is None:
                    outcome = await loop.run(spec, plan, planner)
                else:
                    unplanned = queued.event_type == "RunCreated" and queued.payload.get("planned") is False
                    outcome = await loop.start(spec, plan, planner, loop.recorder_for(queued), record_plan=unplanned)
            finally:
                if token is not None:
                    current_elicitor.reset(token)
            if session is not None:
                await self.store.save_session(
                    session.model_copy(
                        update={
                            "updated_at": self.clock.now(),
                            "active_agent_name": outcome.agent_name,
                            "title": session.title or prepared.prompt.strip().splitlines()[0][:200],
                        }
                    )
                )
            return result_of(outcome, session.session_id if session is not None else None)

        if session is None or locked:
            return await go()
        async with self.store.session_lock(session.session_id, wait=options.wait_for_session):
            return await go()

    async def resume(
        self, run_id: RunId, observer: RunObserver | None = None, *, wait: bool = True, caller: str = "local"
    ) -> RunResult:
        """Continue an interrupted run (or a waiting run whose approval was answered) from its log; `wait=False`
        refuses (`SessionBusy`) while another process holds its session; `caller`: whose run it is."""
        from bearagent.service.resuming import resume_run

        return await resume_run(self, run_id, observer, wait=wait, caller=caller)

    def loop(self, *, hooks: LoopHookAdapter | None, observer: RunObserver) -> AgentLoop:
        """An agent loop over this runtime's store and writer; its runs are held (owner + heartbeat) by it."""
        return self.resources.loop(retry=self.retry, hooks=hooks, observer=observer)

    def broker(
        self,
        session_id: SessionId | None,
        *,
        wait: bool,
        preanswered: Mapping[ToolCallId, ApprovalChoice] | None = None,
        caller: str = "local",
    ) -> ApprovalBroker | None:
        """The approval broker of a top-level run: the terminal's asker when one is attached, else (with `wait`)
        suspension until someone answers; None (deny at once, as a non-interactive run always did) otherwise.
        `caller`: whose run it is (an attached asker's answers are recorded as theirs)."""
        if self.ask is None and not wait and not preanswered:
            return None

        async def remember(rule: str) -> None:
            if session_id is not None:
                await self.store.allow_in_session(session_id, self.seals.sealed_rule(str(session_id), rule))

        return ApprovalBroker(
            owner=self.resources.lease.owner,
            attached=self.ask,  # pyright: ignore[reportArgumentType]
            wait=wait,
            answered_by=caller,
            preanswered=preanswered,
            remember=remember,
            new_id=lambda: str(self.ids.new(SessionId)).replace("-", "")[-12:],
            seal=self.seal_answer,
        )

    def seal_answer(self, run_id: str, approval_id: str, decision: str) -> str:
        """This user's seal over an approval's answer (`trust/seals.py`)."""
        return self.seals.seal("approval", run_id, approval_id, decision)

    async def session_rules(self, session_id: SessionId) -> tuple[str, ...]:
        """The session's "allow always" rules that this user answered (their seals verify); a rule in the log
        that does not verify (a cloned repository's, a forged one) is ignored."""
        record = await self.store.fetch_session(session_id)
        return self.seals.rules(str(session_id), record.allowed_rules) if record is not None else ()

    async def run_action(
        self,
        name: str,
        inputs: Mapping[str, JsonValue],
        *,
        trigger_type: TriggerType = "manual_action",
        observer: RunObserver | None = None,
        budgets: Mapping[str, int] | None = None,
        model: str | None = None,
        run_id: RunId | None = None,
    ) -> RunResult:
        """Run action `name` with `inputs` (`action_request`) with the action's agent (a detached run; `run_id`: the
        id it gets, known up front so a subscriber can follow it from its start)."""
        prompt, options = self.action_request(
            name, inputs, trigger_type=trigger_type, budgets=budgets, model=model, run_id=run_id
        )
        return await self.run(prompt, options, observer)

    def action_request(
        self,
        name: str,
        inputs: Mapping[str, JsonValue],
        *,
        trigger_type: TriggerType = "manual_action",
        budgets: Mapping[str, int] | None = None,
        model: str | None = None,
        run_id: RunId | None = None,
    ) -> tuple[str, RunOptions]:
        """The prompt and options of a run of action `name` with `inputs`: the one rule every face uses (the CLI's
        `bearagent action run`, the HTTP route, an action tool's caller). The action is looked up by its name or
        its namespaced name. A custom command (`registries/commands.py`) takes its `arguments` input as typed; its
        `allowed-tools` are pre-approved for this run, and a `model` that names no model entry leaves the agent's
        model. `model` (`-m`) wins over both."""
        action = self.loaded.actions.require(name)
        arguments_text = ""
        if action.kind == "command":
            arguments = inputs.get("arguments", "")
            arguments_text = arguments if isinstance(arguments, str) else str(arguments)
        invocation = invoke_action(action, inputs, root=self.root, models=self.loaded.models)
        options = RunOptions(
            agent=invocation.agent or self.loaded.config.default_agent,
            model=model or invocation.model,
            trigger_type=trigger_type,
            trigger_ref=action.name,
            budgets=dict(budgets or {}),
            allowed_tools=invocation.allowed_tools,
            run_id=run_id,
            expansion=CommandExpansion.of(action, arguments_text) if action.kind == "command" else None,
        )
        return invocation.prompt, options


__all__ = [
    "JUDGE_AGENT",
    "JUDGE_SYSTEM_PROMPT",
    "MAX_SUBAGENT_DEPTH",
    "RunOptions",
    "RunResult",
    "WorkspaceRuntime",
]

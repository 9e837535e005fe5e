"""Deterministic replay: re-drive a recorded run through the real `AgentLoop` with the recorded model outputs, and
judge every step against the log (`bearagent replay RUN`); or only check that the log is a valid run (`--dry`).

How a replay runs:

- **No model is called.** The run's recorded turns (`ModelCallCompleted`: text, tool calls with their recorded
  `tool_call_id` and provider call id, usage, stop reason) are streamed to the loop in order by
  `RecordedTurnsProvider`; the workspace's model entries are never built, so no key is needed. A model attempt
  that failed and was tried again is reported (`skipped`), not re-driven; a call that failed for good is raised
  again, so the loop ends the run as it ended.
- **Only read-only tools run.** A call whose tool is `read_only` (its `ToolSpec.side_effect`) goes through the
  workspace's real tool gate (path safety, permissions, limits) and its result is compared with the recorded one
  (content and is_error). Every other call (write, execute, network, a Task, an action) returns its recorded
  result without executing, as does a call that did not finish, that a hook or a person decided, or whose
  arguments a v1 log did not record.
- **Ids**: the recorded `tool_call_id`s are reused, so the replayed log names the same calls and results are
  matched by id; activity, model call and event ids are new. The replayed run keeps the recorded run id (it is
  written to a scratch SQLite file in a temporary directory, never to the workspace's store, and deleted after).
- **Hooks are not fired.** What recorded hooks decided that shaped the loop (context added to the prompt, Stop
  hooks keeping the agent going, a blocked prompt) is repeated from the log (`ReplayedLoopHooks`).
- **Agent switches**: `SwitchAgent` is read-only and re-executed; the loop then re-plans with the workspace's
  planner (`AgentPlans.plan`) as a live run does.
- **Child runs** (Task, action tools, hook judges): the parent is replayed with the Task's recorded result (its
  `ChildRunStarted` / `ChildRunFinished` facts recorded again with it, so its usage is charged as before); then
  every child run is replayed from its own log, recursively, and reported under its parent.

A step's verdict: `match` (equal to the log), `mismatch` (a short diff says how), `reused` (not executed; the
recorded result was used) or `skipped` (not re-driven: a retried attempt, the end of a run that was cancelled or
interrupted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast, get_args

from bearagent.domain._base import JsonMapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.models import ModelEvent, ModelRequest
from bearagent.domain.run_events import RunRequest, TriggerType
from bearagent.runtime.log_check import LogCheck, read_log
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import AgentPlan, LoopHooks
from bearagent.runtime.replaying import RecordedTurnsProvider, ReplayedLoopHooks, ReplayToolCaller
from bearagent.runtime.run_alignment import REPLAY, FieldChange, Row, align
from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep
from bearagent.service.children import JUDGE_AGENT, MAX_SUBAGENT_DEPTH, judge_plan
from bearagent.service.planner import RunChoices
from bearagent.service.run_specs import replayed_run
from bearagent.service.runner import WorkspaceRuntime
from bearagent.store.sqlite import SqliteEventStore
from bearagent.tools.gate import ToolGate
from bearagent.trust.run_seals import check_created

Verdict: TypeAlias = Literal["match", "mismatch", "reused", "skipped"]
EventsOf = Callable[[str], Sequence[Event]]
"""Reads one run's stored events (of the workspace's store) by run id."""

V1_GOAL = "(the goal was not recorded: this run's RunCreated is v1)"
MAX_DEPTH = MAX_SUBAGENT_DEPTH + 1
ENDED_BY_ITSELF = ("succeeded", "failed")


@dataclass(frozen=True, slots=True)
class StepVerdict:
    step: str
    kind: Literal["model", "attempt", "tool", "end"]
    name: str
    verdict: Verdict
    note: str = ""
    changes: tuple[FieldChange, ...] = ()
    arguments: JsonMapping | None = None
    """A tool call's recorded arguments (for a `Read(notes.md)` preview)."""


@dataclass(frozen=True, slots=True)
class DryReplay:
    """`replay --dry`: the log checked and its steps listed; child runs the same way."""

    check: LogCheck
    steps: RunSteps
    children: tuple[DryReplay, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.check.valid and all(child.ok for child in self.children)


@dataclass(frozen=True, slots=True)
class RunReplay:
    check: LogCheck
    recorded: RunSteps
    replayed_status: str | None = None
    verdicts: tuple[StepVerdict, ...] = ()
    notes: tuple[str, ...] = ()
    children: tuple[RunReplay, ...] = ()

    @property
    def run_id(self) -> str:
        return self.recorded.run_id

    @property
    def mismatches(self) -> int:
        return sum(1 for v in self.verdicts if v.verdict == "mismatch")

    @property
    def ok(self) -> bool:
        return self.check.valid and self.mismatches == 0 and all(child.ok for child in self.children)


# ---- dry ------------------------------------------------------------------------------------------------------


def dry_replay(events_of: EventsOf, run_id: str, *, depth: int = 0) -> DryReplay:
    """Check the log of `run_id` (and of its child runs) without executing anything."""
    check, steps = read_log(run_id, events_of(run_id))
    children, missing = _recorded_children(events_of, steps, depth)
    return DryReplay(check, steps, tuple(dry_replay(events_of, c, depth=depth + 1) for c in children), missing)


def _recorded_children(events_of: EventsOf, steps: RunSteps, depth: int) -> tuple[list[str], tuple[str, ...]]:
    """The child runs to follow, and a note for each one that was started but has no log (cancelled before its
    first event was written)."""
    if depth >= MAX_DEPTH:
        return [], ()
    found: list[str] = []
    notes: list[str] = []
    for child in steps.children:
        if events_of(child):
            found.append(child)
        else:
            notes.append(
                f"child run {child} was started but has no events (stopped before it was recorded, or removed)"
            )
    return found, tuple(notes)


# ---- replay ---------------------------------------------------------------------------------------------------


class _NoModel:
    """What a model entry is served by on replay outside a replayed run (nothing should ask)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        raise BearAgentError(ErrorInfo.of("internal", "replay_no_model", "no model is called on replay"))


ReplayLoops: TypeAlias = Callable[[LoopHooks], AgentLoop]
"""A loop over the scratch store with the given hooks, one model attempt per turn (`app/replay.py` builds it)."""


async def replay_in(
    runtime: WorkspaceRuntime, scratch: SqliteEventStore, loops: ReplayLoops, events_of: EventsOf, run_id: str
) -> RunReplay:
    """Replay `run_id` (and its child runs) with `runtime` and `loops`, opened by `app/replay.py` over the scratch
    store `scratch` (see the module docstring). Raises `BearAgentError` when the workspace may not run (guard
    files, trust) or the run's agent cannot be planned."""
    providers: dict[str, RecordedTurnsProvider] = {}
    runtime.resources.override_providers(lambda entry, key: providers.get(key) or _NoModel())
    runtime.admit(hooks=False)  # read-only tools run, MCP servers start: as for any run (no hook runs)
    return await _Replay(runtime, scratch, loops, events_of, providers).run(run_id, 0)


class _Replay:
    def __init__(
        self,
        runtime: WorkspaceRuntime,
        scratch: SqliteEventStore,
        loops: ReplayLoops,
        events_of: EventsOf,
        providers: dict[str, RecordedTurnsProvider],
    ) -> None:
        self.runtime = runtime
        self.scratch = scratch
        self.loops = loops
        self.events_of = events_of
        self.providers = providers

    async def run(self, run_id: str, depth: int) -> RunReplay:
        events = self.events_of(run_id)
        check, recorded = read_log(run_id, events)
        if not check.valid:
            return RunReplay(check, recorded)
        sealed, sealed_note = self._sealed(run_id, events) if recorded.depth == 0 else (None, None)
        key = f"replay:{run_id}"
        provider = RecordedTurnsProvider(recorded)
        self.providers[key] = provider
        by_id = {tool.tool_call_id: tool for tool in recorded.tool_steps}
        callers: list[ReplayToolCaller] = []

        async def planned(agent_name: str, *, first: bool = False) -> AgentPlan:
            plan = await self._plan(agent_name, recorded, key, provider, first=first, sealed=sealed)
            caller = ReplayToolCaller(plan.gate, by_id, _side_effects_of(plan))
            callers.append(caller)
            # no compaction on replay: the recorded turns are served in order, a summary call would take one
            return dataclasses.replace(plan, provider=provider, gate=caller, compaction=None)

        async def switch_planner(agent_name: str) -> AgentPlan:
            return await planned(agent_name)

        plan = await planned(recorded.agent_name or self.runtime.loaded.config.default_agent, first=True)
        trigger = recorded.trigger_type if recorded.trigger_type in get_args(TriggerType) else "message"
        spec = replayed_run(
            self.runtime.root,
            goal=recorded.goal or V1_GOAL,
            budgets=recorded.budgets,
            run_id=RunId(run_id),
            parent_run_id=RunId(recorded.parent_run_id) if recorded.parent_run_id else None,
            depth=recorded.depth,
            trigger_type=cast(TriggerType, trigger),
            trigger_ref=recorded.trigger_ref,
        )
        loop = self.loops(ReplayedLoopHooks(recorded, provider))
        outcome = await loop.run(spec, plan, switch_planner)
        _, replayed = read_log(run_id, await self.scratch.fetch_events(RunId(run_id)))
        executed = set[str]().union(*(c.executed for c in callers))
        reused = {k: v for c in callers for k, v in c.reused.items()}
        verdicts = _verdicts(align(recorded, replayed, REPLAY), recorded, executed, reused)
        to_follow, missing = _recorded_children(self.events_of, recorded, depth)
        children = [await self.run(child, depth + 1) for child in to_follow]
        return RunReplay(
            check,
            recorded,
            replayed_status=outcome.status,
            verdicts=tuple(verdicts),
            notes=(*_notes(recorded, replayed), *missing, *((sealed_note,) if sealed_note else ())),
            children=tuple(children),
        )

    def _sealed(self, run_id: str, events: Sequence[Event]) -> tuple[RunRequest | None, str | None]:
        """The run's request (its `--allowed-tools`, `--disallowed-tools`, `--system-prompt`, `--add-dir`...) when
        its RunCreated carries this user's seal, so the replay is planned as the run was; else None and a note (a
        log from elsewhere may not widen what the replay's re-executed reads may touch)."""
        try:
            request = check_created(self.runtime.seals, RunId(run_id), events).request
        except BearAgentError as exc:
            return None, f"replayed without the run's own choices (flags): {exc.info.message}"
        return request, None

    async def _plan(
        self,
        agent_name: str,
        recorded: RunSteps,
        key: str,
        provider: RecordedTurnsProvider,
        *,
        first: bool,
        sealed: RunRequest | None = None,
    ) -> AgentPlan:
        if agent_name == JUDGE_AGENT:  # a prompt hook's judge: no agent file, no tools
            ref = recorded.model_ref or "replay"
            return judge_plan(ref, ref, provider, self.runtime.resources.gate({}))
        # a child run was offered only what its parent had: the tools its RunCreated lists
        offered = frozenset(recorded.tool_spec_versions) if first and recorded.depth > 0 else None
        return await self.runtime.plans.plan(
            agent_name,
            session_key=key,
            model_override=self._model_ref(recorded.model_ref) if first else None,
            parent_tools=offered or None,
            depth=recorded.depth,
            extra_allow=sealed.allowed_tools if sealed is not None else (),
            choices=RunChoices.of_request(sealed) if sealed is not None else None,  # as the live run planned
        )

    def _model_ref(self, ref: str | None) -> str | None:
        """The recorded model ref when it still names a model entry (its price, its parameters), else None."""
        if ref is None:
            return None
        try:
            self.runtime.loaded.models.resolve(ref, where="replay")
        except BearAgentError:
            return None
        return ref


def _side_effects_of(plan: AgentPlan) -> Callable[[str], str | None]:
    """The side-effect class of each tool the plan's gate holds (None: not one of them)."""
    gate = plan.gate
    table = {name: tool.spec.side_effect for name, tool in gate.tools.items()} if isinstance(gate, ToolGate) else {}
    return table.get


def _name(step: ModelStep | ToolStep | RunSteps | None) -> str:
    if isinstance(step, ModelStep):
        return step.agent or "-"
    if isinstance(step, ToolStep):
        return step.name
    return step.status if step is not None else "-"


def _verdicts(rows: Sequence[Row], recorded: RunSteps, executed: set[str], reused: dict[str, str]) -> list[StepVerdict]:
    out: list[StepVerdict] = []
    log_ended = False  # the recorded run ended outside a model call (a tool-time failure, a cancel, a crash)
    for row in rows:
        if row.kind == "model":
            if isinstance(row.a, ModelStep):
                for k, attempt in enumerate(row.a.failed_attempts, start=1):
                    what = "was tried again" if attempt.kind == "retried" else "was cut by an interruption"
                    out.append(
                        StepVerdict(
                            row.step,
                            "attempt",
                            f"attempt {k}",
                            "skipped",
                            f"failed ({attempt.code}) and {what}: not re-driven",
                        )
                    )
            if row.status == "added" and not log_ended and recorded.status != "succeeded":
                log_ended = True
                note = f"the log ends before this model call (the run {recorded.status} outside one); not compared"
                out.append(StepVerdict(row.step, "model", _name(row.b), "skipped", note))
                continue
            note = {
                "added": "the replay made a model call the log does not have",
                "removed": "the replay ended before this model call",
            }.get(row.status, "")
            out.append(_judged(row, note))
        elif row.kind == "tool":
            tool = row.a if isinstance(row.a, ToolStep) else row.b
            call_id = tool.tool_call_id if isinstance(tool, ToolStep) else ""
            how = reused.get(call_id) or (
                "re-executed (read-only)" if call_id in executed else "refused by the loop before any tool ran"
            )
            if row.status == "added":
                how = "the replay made a tool call the log does not have"
            elif row.status == "removed":
                how = "the replay never reached this tool call"
            arguments = tool.arguments if isinstance(tool, ToolStep) else None
            if row.status == "same" and call_id in reused:
                out.append(StepVerdict(row.step, "tool", _name(tool), "reused", how, arguments=arguments))
            else:
                out.append(dataclasses.replace(_judged(row, how), arguments=arguments))
        elif recorded.status not in ENDED_BY_ITSELF:
            note = f"the recorded run is {recorded.status}: a replay stops where its log stops"
            out.append(StepVerdict("end", "end", recorded.status, "skipped", note))
        else:
            out.append(_judged(row, ""))
    return out


def _judged(row: Row, note: str) -> StepVerdict:
    verdict: Verdict = "match" if row.status == "same" else "mismatch"
    return StepVerdict(row.step, row.kind, _name(row.a if row.a is not None else row.b), verdict, note, row.changes)


def _notes(recorded: RunSteps, replayed: RunSteps) -> list[str]:
    notes: list[str] = []
    if recorded.recorded_with_v1:
        notes.append(
            "recorded with v1 events: model text, tool arguments and tool results were not recorded; the replay "
            "checks the order of the steps, the tool names, their outcomes and the usage"
        )
    if recorded.hook_executions:
        notes.append(
            f"{recorded.hook_executions} hook execution(s) in the log: hooks are not fired on replay (what they "
            "decided is taken from the log)"
        )
    if recorded.interruptions:
        notes.append(f"the run was interrupted {recorded.interruptions} time(s); the replay runs it in one go")
    agent = recorded.agent_name or "-"
    if recorded.prompt_hash and replayed.prompt_hash and recorded.prompt_hash != replayed.prompt_hash:
        notes.append(
            f"agent {agent}'s system prompt changed since the run (its hash differs); the model is not asked again, "
            "so the replay is not affected"
        )
    changed = sorted(
        name
        for name, version in recorded.tool_spec_versions.items()
        if name in replayed.tool_spec_versions and replayed.tool_spec_versions[name] != version
    )
    if changed:
        notes.append(f"tool spec versions changed since the run: {', '.join(changed)}")
    return notes

"""Continuing stopped runs: `runs resume` (an interrupted run) and `approvals answer` (a waiting run).

Both rebuild the run from its log (`runtime/cursor.py`), plan its effective agent again, say what changed since the
run started (the agent's prompt, its tool specs), and hand the loop the cursor (`AgentLoop.resume`). A completed
model call is never made again; the scripted model continues at the turn after the run's last answered model call
(its position comes from the log: `ModelRequest.conversation_calls`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId, ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import (
    ApprovalChoice,
    ApprovalResolvedV1,
    RunCreatedV2,
    RunRequest,
    parse_run_event_payload,
)
from bearagent.domain.state import RunProjection
from bearagent.hooks.bridge import LoopHookAdapter
from bearagent.mcp.elicitation import current_elicitor
from bearagent.runtime.compaction_run import COMPACT_TRIGGER_REF
from bearagent.runtime.cursor import RunCursor, run_cursor
from bearagent.runtime.observer import NullObserver, RunObserver
from bearagent.runtime.plan import AgentPlan
from bearagent.service.facts import append_outside_loop
from bearagent.service.leases import is_self, owner_gone
from bearagent.service.planner import RunChoices
from bearagent.service.run_specs import resumed_run
from bearagent.service.run_types import RunResult, result_of
from bearagent.service.sessions import session_key as key_of
from bearagent.trust.run_seals import check_created

if TYPE_CHECKING:
    from bearagent.service.host import ResumeHost


def _refuse(code: str, message: str, hint: str) -> BearAgentError:
    return BearAgentError(ErrorInfo.of("invalid_request", code, message), hint=hint)


async def _load(runtime: ResumeHost, run_id: RunId) -> RunProjection:
    run = await runtime.store.fetch_run(run_id)
    if run is None:
        raise BearAgentError(
            ErrorInfo.of("not_found", "run", f"there is no run {run_id} in this workspace"),
            hint="`bearagent runs list` shows the runs",
        )
    return run


def _resumable(run: RunProjection) -> str:
    """The reason RunResumed records, or a clear refusal."""
    if run.parent_run_id is not None:
        raise _refuse(
            "child_run",
            f"run {run.run_id} is a child run of {run.parent_run_id}; it is resumed with its parent",
            f"resume the parent: bearagent runs resume {run.parent_run_id}",
        )
    if run.status == "interrupted":
        return "interrupted"
    pending = run.pending_approval
    if run.status == "waiting" and pending is not None and pending.decision is not None:
        return "approval"
    if run.status == "waiting":
        approval = pending.approval_id if pending is not None else "?"
        raise _refuse(
            "waiting_for_approval",
            f"run {run.run_id} waits for an answer to approval {approval}",
            f"answer it: bearagent approvals answer {run.run_id} {approval} allow|deny",
        )
    if run.status == "running":
        raise _refuse(
            "still_running",
            f"run {run.run_id} is running in another process (pid {run.owner.pid} on {run.owner.host})"
            if run.owner is not None
            else f"run {run.run_id} is running",
            "wait for it to finish, or cancel it there; a run whose process died is marked interrupted",
        )
    raise _refuse(
        "finished", f"run {run.run_id} is {run.status}; only an interrupted or answered run resumes", "start a new run"
    )


def _changes(runtime: ResumeHost, cursor: RunCursor, plan: AgentPlan, created_agent: str) -> list[str]:
    changes: list[str] = []
    if plan.agent_name == created_agent and runtime.plans.prompt_hash(plan.system_prompt) != cursor.prompt_hash:
        changes.append(f"agent {plan.agent_name}: its system prompt changed")
    now = plan.tool_spec_versions
    before = cursor.tool_spec_versions
    if plan.agent_name == created_agent and before and now != before:
        added = sorted(set(now) - set(before))
        removed = sorted(set(before) - set(now))
        changed = sorted(n for n in set(now) & set(before) if now[n] != before[n])
        parts = [
            f"{label}: {', '.join(names)}"
            for label, names in (("added", added), ("removed", removed), ("changed", changed))
            if names
        ]
        changes.append(f"agent {plan.agent_name}: its tools changed ({'; '.join(parts)})")
    return changes


async def model_calls_so_far(runtime: ResumeHost, session_id: SessionId | None, run_id: RunId | None) -> int:
    """Model calls that reached the conversation's provider so far, from the log: every run of the session (or the
    detached run `run_id` and its children) except hook judges, which have providers of their own. Told to the
    provider on the run's first call (`RunSpec.conversation_calls` -> `ModelRequest.conversation_calls`)."""
    if session_id is not None:
        runs = list(await runtime.store.fetch_runs(session_id=session_id, limit=100_000))
    else:
        runs = [] if run_id is None else list(await runtime.store.fetch_runs(parent_run_id=run_id, limit=100_000))
        own = await runtime.store.fetch_run(run_id) if run_id is not None else None
        runs += [own] if own is not None else []
    total = 0
    for other in runs:
        if other.trigger_type == "hook":
            continue
        events = list(await runtime.store.fetch_events(other.run_id))
        if events and events[0].schema_version >= 2:
            total += run_cursor(events).model_calls
    return total


def _created(
    runtime: ResumeHost, run_id: RunId, events: Sequence[Event], caller: str
) -> tuple[RunCreatedV2, RunRequest]:
    """The run's `RunCreated` and the request it resumes with: sealed by this user (`check_created`), except a
    `/compact` run's, whose resume only records its end (nothing runs, nothing is widened), so it resumes unsealed with
    an empty request."""
    first = events[0] if events else None
    if first is not None and first.event_type == "RunCreated":
        created = parse_run_event_payload(first.event_type, first.schema_version, first.payload)
        if (
            isinstance(created, RunCreatedV2)
            and created.trigger_type == "system"
            and created.trigger_ref == COMPACT_TRIGGER_REF
        ):
            return created, RunRequest()
    sealed = check_created(runtime.seals, run_id, events, caller=caller)
    return sealed, sealed.request  # the model and pre-approved tools it was started with (sealed)


async def resume_run(
    runtime: ResumeHost,
    run_id: RunId,
    observer: RunObserver | None = None,
    *,
    wait: bool = True,
    caller: str = "local",
) -> RunResult:
    """Continue an interrupted run, or a waiting run whose approval was answered, to a terminal state (or to its
    next wait). `wait=False`: refuse (`SessionBusy`) instead of waiting while another process holds its session;
    `caller`: whose run it is."""
    await runtime.admit_and_recover()
    run = await _load(runtime, run_id)
    reason = _resumable(run)
    session = await runtime.store.fetch_session(run.session_id) if run.session_id is not None else None
    session_key = key_of(run.session_id, run.run_id)

    async def go() -> RunResult:
        nonlocal run, reason
        run = await _load(runtime, run_id)  # again, under the session lock: another process may have resumed it
        reason = _resumable(run)
        events = list(await runtime.store.fetch_events(run_id))
        created, request = _created(runtime, run_id, events, caller)  # sealed by this user
        cursor = run_cursor(events)
        created_agent = run.agent_name or cursor.agent_name
        earlier: list[Message] = []
        if run.session_id is not None:  # the session's conversation before this run, its rewinds and fork applied
            earlier = await asyncio.to_thread(runtime.sessions.session_history, run.session_id, before=run.run_id)
        agent = runtime.plans.require_agent(cursor.agent_name)
        hooks = runtime.hook_wiring.hooks(session_key, str(runtime.mode_in_force(agent).mode))
        in_flight = cursor.in_flight
        if in_flight is not None and in_flight.decision is not None and in_flight.approval_id is not None:
            sealed = runtime.seals.verify(
                in_flight.seal, "approval", str(run.run_id), in_flight.approval_id, in_flight.decision
            )
            if not sealed:  # not answered by this user (a forged or copied log): ask again instead of obeying it
                in_flight = replace(in_flight, decision=None)
                cursor = replace(cursor, in_flight=in_flight)
                (observer or NullObserver()).notice(
                    run.run_id,
                    f"the answer to approval {in_flight.approval_id} in the log is not sealed by you; asking again",
                )
        preanswered: dict[ToolCallId, ApprovalChoice] = {}
        if in_flight is not None and in_flight.decision is not None:
            preanswered[in_flight.tool_call_id] = in_flight.decision  # pyright: ignore[reportArgumentType]
        ask = runtime.broker(run.session_id, wait=True, preanswered=preanswered, caller=caller)
        remembered = await runtime.session_rules(run.session_id) if run.session_id is not None else ()
        if in_flight is not None and in_flight.decision == "allow_always" and in_flight.rule:
            remembered = (*remembered, in_flight.rule)
            if run.session_id is not None:  # remembered now: the resuming process's mode may not ask again
                sealed_rule = runtime.seals.sealed_rule(str(run.session_id), in_flight.rule)
                await runtime.store.allow_in_session(run.session_id, sealed_rule)

        async def planner(name: str) -> AgentPlan:
            return await runtime.plans.plan(
                name,
                session_key=session_key,
                model_override=request.model_override,
                hooks=hooks,
                extra_allow=(*request.allowed_tools, *remembered),
                ask=ask,
                choices=RunChoices.of_request(request),  # as sealed when the run was created
            )

        plan = await planner(cursor.agent_name)
        position = await model_calls_so_far(runtime, run.session_id, run.run_id)
        spec = resumed_run(
            runtime.root,
            goal=cursor.goal,
            budgets=created.budget_limits,
            session_id=run.session_id,
            run_id=run.run_id,
            history=earlier,
            request=request,
            conversation_calls=position,
        )
        loop = runtime.loop(
            hooks=LoopHookAdapter(hooks, runtime.sessions.transcript(session_key)) if hooks.enabled else None,
            observer=observer or NullObserver(),
        )
        elicitor = runtime.hook_wiring.elicitor(hooks, wait=True)  # MCP servers' questions, as in `start`
        token = current_elicitor.set(elicitor) if elicitor is not None else None
        try:
            outcome = await loop.resume(
                spec,
                plan,
                planner,
                cursor,
                changes=_changes(runtime, cursor, plan, created_agent),
                wall_time_used_ms=run.usage.wall_time_ms,
                reason=reason,  # pyright: ignore[reportArgumentType]
            )
        finally:
            if token is not None:
                current_elicitor.reset(token)
        if session is not None:
            fresh = await runtime.store.fetch_session(session.session_id) or session
            await runtime.store.save_session(
                fresh.model_copy(update={"updated_at": runtime.clock.now(), "active_agent_name": outcome.agent_name})
            )
        return result_of(outcome, run.session_id)

    if run.session_id is None:
        return await go()
    async with runtime.store.session_lock(run.session_id, wait=wait):
        return await go()


async def answer_approval(
    runtime: ResumeHost,
    run_id: RunId,
    approval_id: str,
    decision: ApprovalChoice,
    *,
    answered_by: str,
    message: str | None = None,
) -> RunProjection:
    """Record the answer to a waiting run's approval (once: a second, late or misdirected answer is refused with
    what the run waits for). Returns the run as it stands after the answer."""
    await runtime.resources.recover()
    run = await _load(runtime, run_id)
    pending = run.pending_approval
    if run.status != "waiting" or pending is None:
        raise _refuse(
            "no_pending_approval",
            f"run {run_id} waits for no approval (it is {run.status})",
            "`bearagent approvals list` shows the runs that wait for an answer",
        )
    if pending.approval_id != approval_id:
        raise _refuse(
            "wrong_approval",
            f"run {run_id} waits for approval {pending.approval_id}, not {approval_id}",
            f"answer the pending one: bearagent approvals answer {run_id} {pending.approval_id} allow|deny",
        )
    if pending.decision is not None:
        raise _refuse(
            "already_answered",
            f"approval {approval_id} of run {run_id} was already answered ({pending.decision} by {pending.answered_by})",
            f"continue the run: bearagent runs resume {run_id}",
        )
    seal = runtime.seal_answer(str(run_id), approval_id, decision)
    answer = ApprovalResolvedV1(
        approval_id=approval_id, decision=decision, answered_by=answered_by, message=message, seal=seal
    )
    try:
        return await append_outside_loop(
            runtime.writer, runtime.clock, runtime.ids, run_id, run.last_sequence, (answer,)
        )
    except BearAgentError as exc:
        if exc.info.category == "conflict":
            raise _refuse(
                "already_answered",
                f"approval {approval_id} of run {run_id} was answered by someone else just now",
                f"see the answer: bearagent inspect {run_id}",
            ) from exc
        raise


def attached_elsewhere(run: RunProjection) -> bool:
    """Whether a live process other than this one still holds the run (an interactive terminal waiting for the
    answer): then that process continues it, not the one that answered."""
    if run.owner is None or is_self(run.owner):
        return False
    return owner_gone(run.owner, run.created_at, run.created_at) is None

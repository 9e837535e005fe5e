"""`RunSpec` construction: the one owner (issue 30). Every kind of run the service starts or continues gets its
spec here, so what each kind records is decided in one place: a new run (its request sealed: the log is a
workspace file, and a later process acts on what it says), a resumed run (the sealed request read back), a child
run (Task, an action tool, a hook judge: no request of its own), a `/compact` run (a system run with no goal) and a
replayed run (what the log recorded). The key a run's providers and transcript are kept under is
`sessions.session_key`'s, also one owner."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.messages import Message
from bearagent.domain.run_events import RunEventPayload, RunRequest, TriggerType
from bearagent.runtime.plan import RunSpec
from bearagent.service.run_types import RunOptions, local_initiator
from bearagent.trust.run_seals import sealed_request
from bearagent.trust.seals import Sealer


def new_run(
    root: Path,
    seals: Sealer,
    options: RunOptions,
    *,
    run_id: RunId,
    goal: str,
    agent_name: str,
    budgets: BudgetLimits,
    session_id: SessionId | None,
    history: Sequence[Message] = (),
    prelude: Sequence[RunEventPayload] = (),
) -> RunSpec:
    """A top-level run (started now or queued): the caller's options become its sealed `RunRequest`."""
    return RunSpec(
        goal=goal,
        workspace_root=root,
        budgets=budgets,
        session_id=session_id,
        trigger_type=options.trigger_type,
        trigger_ref=options.trigger_ref,
        history=tuple(history),
        prelude=prelude,
        run_id=run_id,
        expansion=options.expansion,
        request=sealed_request(  # the log is a workspace file: what a later process acts on is sealed
            seals,
            run_id,
            session_id=session_id,
            goal=goal,
            agent_name=agent_name,
            budgets=budgets,
            trigger_type=options.trigger_type,
            trigger_ref=options.trigger_ref,
            request=RunRequest(
                initiator_ref=options.initiator_ref
                or (options.caller if options.caller != "local" else local_initiator()),
                auth_context=options.auth_context,
                metadata=options.metadata,
                model_override=options.model,
                allowed_tools=options.allowed_tools,
                wait_approvals=options.wait_approvals,
                disallowed_tools=options.choices.disallowed_tools,
                system_prompt=options.choices.system_prompt,
                append_system_prompt=options.choices.append_system_prompt,
                add_dirs=options.choices.add_dirs,
            ),
        ),
    )


def resumed_run(
    root: Path,
    *,
    run_id: RunId,
    goal: str,
    budgets: BudgetLimits,
    session_id: SessionId | None,
    history: Sequence[Message],
    request: RunRequest,
    conversation_calls: int,
) -> RunSpec:
    """A stopped run continued from its cursor, with the request its `RunCreated` was sealed with and the
    conversation's place from the log (`conversation_calls`)."""
    return RunSpec(
        goal=goal,
        workspace_root=root,
        budgets=budgets,
        session_id=session_id,
        run_id=run_id,
        trigger_type="message",
        history=tuple(history),
        request=request,
        conversation_calls=conversation_calls,
    )


def child_run(
    root: Path,
    *,
    run_id: RunId,
    goal: str,
    budgets: BudgetLimits,
    session_id: SessionId | None,
    parent_run_id: RunId,
    depth: int,
    trigger_type: TriggerType,
    trigger_ref: str | None,
) -> RunSpec:
    """A child run (a Task subagent, an action tool, a hook judge) in its parent's session."""
    return RunSpec(
        goal=goal,
        workspace_root=root,
        budgets=budgets,
        session_id=session_id,
        run_id=run_id,
        parent_run_id=parent_run_id,
        depth=depth,
        trigger_type=trigger_type,
        trigger_ref=trigger_ref,
    )


def compaction_run(
    root: Path,
    *,
    run_id: RunId,
    budgets: BudgetLimits,
    session_id: SessionId,
    history: Sequence[Message],
    conversation_calls: int,
) -> RunSpec:
    """`/compact`: a system run of the session with no goal, over its history (`conversation_calls`: its place)."""
    return RunSpec(
        goal="",
        workspace_root=root,
        budgets=budgets,
        session_id=session_id,
        run_id=run_id,
        trigger_type="system",
        history=tuple(history),
        conversation_calls=conversation_calls,
    )


def replayed_run(
    root: Path,
    *,
    run_id: RunId,
    goal: str,
    budgets: BudgetLimits,
    parent_run_id: RunId | None,
    depth: int,
    trigger_type: TriggerType,
    trigger_ref: str | None,
) -> RunSpec:
    """A recorded run re-driven by `bearagent replay` into its scratch store (no session: nothing is continued)."""
    return RunSpec(
        goal=goal,
        workspace_root=root,
        budgets=budgets,
        run_id=run_id,
        parent_run_id=parent_run_id,
        depth=depth,
        trigger_type=trigger_type,
        trigger_ref=trigger_ref,
    )

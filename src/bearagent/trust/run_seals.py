"""Sealed run records: a run's log is input, not authority.

A run's `RunCreated` says what the run may do when a process other than the one that recorded it executes it: its
pre-approved and denied tools (`request.allowed_tools`, `disallowed_tools`), its system prompt choices, its added
directories, its model, its budgets, its caller (`initiator_ref`, `auth_context`),
its agent and goal. A queued run is started by whichever worker claims it, an interrupted one is resumed by `runs
resume`, a worker or a resuming server, all from that record. The log is a workspace file (a cloned repository can
ship `.bearagent/state.db`), so the record is sealed with the creating user's key (`seals.py`) when it is made, and
a process executes a run from its record only when the seal verifies with its own key: a record planted in the
file, copied from another user's, edited after it was sealed, or written before BearAgent sealed records is refused
with what to do (start the run again), never executed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.run_events import (
    RUN_CHOICE_FIELDS,
    RunCreatedV2,
    RunCreatedV3,
    RunRequest,
    parse_run_event_payload,
)

if TYPE_CHECKING:
    from bearagent.domain.budgets import BudgetLimits
    from bearagent.domain.events import Event
    from bearagent.domain.ids import RunId, SessionId
    from bearagent.trust.seals import Sealer


def _material(
    run_id: str,
    *,
    session_id: str | None,
    goal: str,
    agent_name: str,
    budgets: BudgetLimits,
    trigger_type: str,
    trigger_ref: str | None,
    request: RunRequest,
) -> str:
    """Everything of the record a later process acts on, in one canonical text."""
    body = {
        "run_id": run_id,
        "session_id": session_id,
        "goal": goal,
        "agent_name": agent_name,
        "budget_limits": budgets.model_dump(mode="json"),
        "trigger_type": trigger_type,
        "trigger_ref": trigger_ref,
        "request": _request_material(request),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _request_material(request: RunRequest) -> dict[str, object]:
    """The request as sealed: the fields added later (`RUN_CHOICE_FIELDS`) only when set, so the text of a record
    sealed before they existed is unchanged, and one that sets them is sealed over them."""
    body = request.model_dump(mode="json", exclude={"seal"})
    for name in RUN_CHOICE_FIELDS:
        if body.get(name) in (None, [], ()):
            body.pop(name, None)
    return body


def sealed_request(
    sealer: Sealer,
    run_id: RunId,
    *,
    session_id: SessionId | None,
    goal: str,
    agent_name: str,
    budgets: BudgetLimits,
    trigger_type: str,
    trigger_ref: str | None,
    request: RunRequest,
) -> RunRequest:
    """`request` with this user's seal over the run's record (as `RunCreated` will hold it)."""
    text = _material(
        str(run_id),
        session_id=str(session_id) if session_id is not None else None,
        goal=goal,
        agent_name=agent_name,
        budgets=budgets,
        trigger_type=trigger_type,
        trigger_ref=trigger_ref,
        request=request,
    )
    return request.model_copy(update={"seal": sealer.seal("run-created", text)})


def _refused(run_id: RunId, why: str) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of(
            "permission",
            "unsealed_run",
            f"run {run_id} is not executed: {why}. The workspace's log (.bearagent/state.db) is a workspace file "
            "(a cloned repository can ship one), so only runs recorded by you through BearAgent run from it",
        ),
        hint=f"read what it asked (bearagent inspect {run_id}); to do it, start it again yourself "
        f"(bearagent run ...) and cancel this one (bearagent runs cancel {run_id})",
    )


def check_created(sealer: Sealer, run_id: RunId, events: Sequence[Event], *, caller: str = "local") -> RunCreatedV3:
    """The run's `RunCreated` (its first event), once it verifies: it carries this user's seal over what it records,
    and `caller` (the subject the executing runtime acts for) is the one that started it, or the local user. Else
    refuse (`permission`, `unsealed_run`). Act on what this returns, never on a projection of the log (a row of the
    file an attacker may edit apart from the event)."""
    first = events[0] if events else None
    if first is None or first.event_type != "RunCreated":
        raise _refused(run_id, "its log does not begin with its RunCreated")
    created = parse_run_event_payload(first.event_type, first.schema_version, first.payload)
    if not isinstance(created, RunCreatedV3):
        version = created.__class__.__name__ if isinstance(created, RunCreatedV2) else "RunCreatedV1"
        raise _refused(run_id, f"it was recorded before BearAgent sealed run records ({version}), so nothing says who")
    request = created.request
    if request.seal is None:
        raise _refused(
            run_id, "its record carries no seal (recorded before BearAgent sealed run records, or not by it)"
        )
    text = _material(
        str(run_id),
        session_id=str(created.session_id) if created.session_id is not None else None,
        goal=created.goal,
        agent_name=created.agent_name,
        budgets=created.budget_limits,
        trigger_type=created.trigger_type,
        trigger_ref=created.trigger_ref,
        request=request,
    )
    if not sealer.verify(request.seal, "run-created", text):
        raise _refused(
            run_id, "its record's seal does not verify with your key (made by another user, or edited since)"
        )
    if caller not in ("local", request.initiator_ref):
        raise _refused(run_id, f"it was started by {request.initiator_ref or 'the local user'}, not by {caller}")
    return created

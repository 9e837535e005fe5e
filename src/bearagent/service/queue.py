"""The run queue: which stopped runs a worker may take next, and what a queued run asks for.

The queue is the event log itself, not a second store of jobs: a run recorded by `WorkspaceRuntime.enqueue` is
`queued` (its log holds only RunCreated v4, whose `request` carries the per-run choices), and a worker claims it by
appending its RunStarted at sequence 2 under the run's session lock; a second claimer finds the lock held, or the run
no longer queued. A run whose worker died is `interrupted` (the lease scan, `leases.py`) and is claimed the same way,
by its RunResumed. So the queue cannot disagree with the log about whether a run is pending, running or done, on
SQLite or PostgreSQL alike (the choice is explained in docs/scale-out.md).

Order: the runs of one session are taken one at a time, oldest first. A session's next run is its oldest
interrupted (or waiting, answered) top-level run, else its oldest queued one; none while one of its runs is
running. A run waiting for an answer nobody gave does not hold its session up (nobody may ever answer), nor does an
interrupted one for a worker that does not resume interrupted runs; runs without a session (actions over the API)
are independent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import RunCreatedV3, parse_run_event_payload
from bearagent.domain.state import RunProjection
from bearagent.ports import WorkspaceStore
from bearagent.service.planner import RunChoices
from bearagent.service.run_types import RunOptions

SCAN_LIMIT = 200
"""How many runs of each pending state one scan looks at at most: the running ones (whose lanes are busy), the
interrupted ones, the waiting ones with their answer (the store filters them, so runs nobody answers never crowd one
out), and the queue's lane heads (the store picks them: a session's oldest queued run, of lanes not busy). A worker
asks for fewer heads, as many as it could take (`worker.py`); a lane whose head is newer than the ones read is seen
once the older ones went."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A run a worker may take: start a queued one, or resume an interrupted (or answered) one."""

    run: RunProjection
    action: Literal["start", "resume"]

    @property
    def lane(self) -> str:
        """Runs of one lane execute one at a time: the session's, or the run's own when it has none."""
        return str(self.run.session_id) if self.run.session_id is not None else f"run:{self.run.run_id}"


def _answered(run: RunProjection) -> bool:
    return run.pending_approval is not None and run.pending_approval.decision is not None


@dataclass(frozen=True, slots=True)
class Lanes:
    """What one look at the queue found."""

    pending: list[Pending]
    """The next run of every lane that has one, oldest lane head first."""
    resumable: bool
    """The look read runs to resume and found some (perhaps in busy lanes, or failing to resume): a worker's next
    look must read them again, whatever woke it."""


async def pending_runs(
    store: WorkspaceStore, *, interrupted: bool = True, limit: int = SCAN_LIMIT, heads: int | None = None
) -> list[Pending]:
    """The next run of every lane that has one, oldest lane head first; `interrupted=False` leaves interrupted runs
    out (they neither go nor hold their session up). `heads`: how many of the queue's lane heads to read (default
    `limit`); the store reads only those, not every queued run behind them (a scan read 200 queued runs, decoding
    each, whenever a run ended: at a thousand queued runs a tenth of a busy server's time)."""
    return (await look_at_lanes(store, interrupted=interrupted, limit=limit, heads=heads)).pending


async def look_at_lanes(
    store: WorkspaceStore,
    *,
    interrupted: bool = True,
    limit: int = SCAN_LIMIT,
    heads: int | None = None,
    resumes: bool = True,
) -> Lanes:
    """`pending_runs`, and whether there were runs to resume. `resumes=False` reads only the queue's lane heads (one
    store read instead of two or three): for a look after what can only have added queued lane heads (a run queued,
    a run ended), when the previous look found nothing to resume (`Lanes.resumable`)."""
    candidates: list[Pending] = []
    for status in (("interrupted", "waiting") if interrupted else ("waiting",)) if resumes else ():
        # waiting: only the answered ones, in the store, so that any number of unanswered runs (nobody may ever
        # answer them) cannot push an answered one out of the scan's limit and leave it waiting for good
        for run in await store.fetch_runs(status=status, limit=limit, answered=status == "waiting"):
            if run.parent_run_id is None and (status == "interrupted" or _answered(run)):
                candidates.append(Pending(run, "resume"))
    resumable = bool(candidates)
    busy: set[str] = set()
    if candidates:  # the heads leave busy sessions out already (the store's query): only runs to resume need this
        running = await store.fetch_runs(status="running", limit=limit)
        busy = {str(r.session_id) for r in running if r.session_id is not None and r.parent_run_id is None}
    candidates.extend(Pending(run, "start") for run in await store.fetch_queue_heads(limit if heads is None else heads))
    # a session's interrupted run goes before its queued ones; within each, the oldest first
    candidates.sort(key=lambda p: (p.action != "resume", p.run.created_at))
    first: dict[str, Pending] = {}
    for item in candidates:
        if item.lane not in busy and item.lane not in first:
            first[item.lane] = item
    return Lanes(sorted(first.values(), key=lambda p: p.run.created_at), resumable)


def is_next(run: RunProjection, session_runs: Sequence[RunProjection]) -> bool:
    """Whether queued `run` is its session's next: no older run of the session is queued, running, or waiting with
    its answer given. An interrupted one does not hold it up (nobody may be set to resume it); a worker that resumes
    interrupted runs takes it first anyway (`pending_runs`). `session_runs`: the session's runs, any order."""
    for other in session_runs:
        if other.run_id == run.run_id or other.parent_run_id is not None or other.created_at > run.created_at:
            continue
        if other.status in ("queued", "running") or (other.status == "waiting" and _answered(other)):
            return False
    return True


def not_queued(run: RunProjection) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of("conflict", "not_queued", f"run {run.run_id} is {run.status}, not queued: someone else took it"),
        hint="nothing to do: `bearagent inspect` shows where it runs",
    )


def no_queued_run(run_id: RunId) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of("not_found", "run", f"there is no run {run_id} in this workspace"),
        hint="`bearagent runs list --status queued` shows the queued runs",
    )


def queued_request(run: RunProjection, events: Sequence[Event]) -> tuple[str, RunOptions]:
    """The prompt and options a queued run was recorded with (by `WorkspaceRuntime.enqueue`)."""
    if not events:
        raise no_queued_run(run.run_id)
    if run.status != "queued":
        raise not_queued(run)
    first = events[0]
    created = (
        parse_run_event_payload(first.event_type, first.schema_version, first.payload)
        if first.event_type == "RunCreated"
        else None
    )
    if not isinstance(created, RunCreatedV3):
        raise BearAgentError(
            ErrorInfo.of(
                "invalid_request",
                "not_startable",
                f"run {run.run_id} was queued by an older BearAgent (RunCreated v{first.schema_version}) and says "
                "too little to start it",
            ),
            hint=f"cancel it (bearagent runs cancel {run.run_id}) and send its prompt again",
        )
    request = created.request
    options = RunOptions(
        agent=created.agent_name,
        model=request.model_override,
        session=str(created.session_id) if created.session_id is not None else None,
        budgets=created.budget_limits.model_dump(),
        wait_for_session=False,
        trigger_type=created.trigger_type,
        trigger_ref=created.trigger_ref,
        allowed_tools=request.allowed_tools,
        wait_approvals=request.wait_approvals,
        choices=RunChoices.of_request(request),
        run_id=run.run_id,
        initiator_ref=request.initiator_ref,
        auth_context=request.auth_context,
        metadata=request.metadata,
    )
    return created.goal, options

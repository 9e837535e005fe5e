"""Cancelling a run from outside the loop that executes it: the one owner of what a cancel does in each state.

A run no process executes (queued, waiting for an answer, interrupted) gets its `RunCancelled` at once, on top of the
sequence read (`service/facts.py`): a run that moved on meanwhile refuses it and the state is read again. A running
run's executor is asked through the store (`request_cancel`), which every worker (`bearagent serve`, `bearagent
worker`) reads for the runs it holds; a terminal's `bearagent run` or session is stopped where it runs (Ctrl-C), and
once its process is gone the run is interrupted and cancelled here. Used by `bearagent runs cancel`; the server's
registry cancels the runs it executes itself and shares `cancel_stopped` and `STOPPED` from here.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import IdGenerator, RunId
from bearagent.domain.run_events import RunCancelledV1
from bearagent.domain.state import TERMINAL_RUN_STATUSES, RunProjection
from bearagent.ports import Clock, WorkspaceStore
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.facts import append_outside_loop

STOPPED = frozenset({"waiting", "interrupted", "queued"})
"""Run states no process executes: cancelling one records `RunCancelled` (the reducer accepts it in each)."""
_ATTEMPTS = 5
_POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class CancelOutcome:
    """What a cancel from outside did: `run` as it stands after it; `was` the state the cancel found it in; `asked`
    when the run was running and its executor was asked to stop (`run.status` says whether it stopped within the
    wait)."""

    run: RunProjection
    was: str
    asked: bool


async def cancel_stopped(
    writer: RunWriter, clock: Clock, ids: IdGenerator, run: RunProjection, reason: str
) -> RunProjection:
    """Record `RunCancelled` for a run no process executes (waiting, interrupted, queued); a run that moved on
    meanwhile refuses it (the reducer) and that error propagates (`moved_on` tells the two apart)."""
    cancelled = RunCancelledV1(reason=reason[:500])
    return await append_outside_loop(writer, clock, ids, run.run_id, run.last_sequence, (cancelled,))


def moved_on(refused: BearAgentError) -> bool:
    """Whether `cancel_stopped`'s refusal means the run moved on meanwhile (another writer appended first, or its
    new state does not take `RunCancelled`): read it again and decide anew. Any other error (the store, a budget)
    is the answer and is not retried."""
    return refused.info.category == "conflict"


async def cancel_from_outside(
    store: WorkspaceStore,
    writer: RunWriter,
    clock: Clock,
    ids: IdGenerator,
    run_id: RunId,
    reason: str,
    *,
    wait_s: float,
) -> CancelOutcome:
    """Cancel top-level run `run_id` of this store: at once when nobody executes it; otherwise ask its executor and
    wait up to `wait_s` for it to end. Raises `BearAgentError` for a run that is not there, a subagent's run (it ends
    with its parent) and a run that already ended."""
    run = await _top_level(store, run_id)
    for _ in range(_ATTEMPTS):
        if run.status in TERMINAL_RUN_STATUSES:
            raise BearAgentError(
                ErrorInfo.of("conflict", "run_ended", f"run {run_id} already ended ({run.status})"),
                hint="nothing to cancel; `bearagent inspect` shows how it ended",
            )
        if run.status not in STOPPED:
            break
        try:
            return CancelOutcome(await cancel_stopped(writer, clock, ids, run, reason), run.status, asked=False)
        except BearAgentError as refused:
            if not moved_on(refused):
                raise
            run = await _top_level(store, run_id)  # it moved on (a worker started it, an answer came): look again
    else:
        raise BearAgentError(
            ErrorInfo.of("conflict", "run_changing", f"run {run_id} changed state at each of {_ATTEMPTS} tries"),
            hint="try again; `bearagent inspect` shows what it is doing",
        )
    await store.request_cancel(run_id, reason, clock.now())
    deadline = time.monotonic() + wait_s
    now = run
    while True:
        now = await store.fetch_run(run_id) or now
        if now.status != "running" or time.monotonic() >= deadline:
            return CancelOutcome(now, run.status, asked=True)
        await asyncio.sleep(_POLL_S)


async def _top_level(store: WorkspaceStore, run_id: RunId) -> RunProjection:
    run = await store.fetch_run(run_id)
    if run is None:
        raise BearAgentError(
            ErrorInfo.of("not_found", "run", f"there is no run {run_id} in this workspace"),
            hint="list the runs with `bearagent runs list`",
        )
    if run.parent_run_id is not None:
        raise BearAgentError(
            ErrorInfo.of(
                "invalid_request",
                "subagent_run",
                f"run {run_id} is a subagent's run; it ends with the run that delegated to it ({run.parent_run_id})",
            ),
            hint=f"cancel that run instead: bearagent runs cancel {run.parent_run_id}",
        )
    return run

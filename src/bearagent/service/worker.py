"""Workers: claim the pending runs of the served workspaces (`queue.py`) and execute them, `concurrency` at once.

The same loop runs inside `bearagent serve` (`--workers N` in-process slots; `0` = API only) and as `bearagent
worker` processes on any machine sharing the database. Each scan first records `RunInterrupted` for runs whose
owner died (`leases.recover_interrupted`), so a dead worker's runs become pending and another worker resumes them
(never repeating a completed model call or a side-effecting tool call: `resuming.py`); that look is made at most
every `RECOVER_EVERY_S`. A worker wakes at once when its own process enqueues (`wake`), on a commit notice from
another process where the store sends them (PostgreSQL LISTEN/NOTIFY), and otherwise every `poll_s`.

Several workers share one database without a claim storm (issue 37): a lifecycle notice reaches every listening
process, so (1) a worker with no free slot ignores it (its own runs' ends wake it), (2) a notice wakes the cancel
look only if it is a cancel request (else that look runs at the poll and at wakes from this process), and (3) of
the oldest lane heads a worker could take, it tries them in an order of its own (`SPREAD`), so workers woken by the
same notice mostly try different lanes instead of all racing for the oldest one (the loser of a race had read the
run and tried its session's lock for nothing), and (4) a scan after what can only have added queued lane heads (a
run queued or ended, here or elsewhere) reads only the lane heads, one store read, unless the previous scan found
runs to resume; the poll, a wake from this process, and a run interrupted or answered read those as well, and (5) a
worker woken by other processes' notices alone scans `NOTICE_COALESCE_S` later (`docs/scale-out.md`).

Graceful stop (`stop`): no new claims; runs in flight may finish for `grace_s`; what still runs after it is handed
back (its task is cancelled with `HAND_BACK`: the loop records `RunInterrupted`, not `RunCancelled`), and the next
worker's scan resumes it; a run claimed but not yet started stays queued (`WorkspaceRuntime.start_queued`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId
from bearagent.domain.state import TERMINAL_RUN_STATUSES
from bearagent.ports import CommitNotice, commit_feed
from bearagent.runtime.loop import HAND_BACK
from bearagent.service.lane_memory import LaneMemory
from bearagent.service.leases import recover_interrupted
from bearagent.service.queue import SCAN_LIMIT, Pending, look_at_lanes
from bearagent.service.run_types import RunResult
from bearagent.service.runner import WorkspaceRuntime

_log = logging.getLogger("bearagent.worker")

RACE_CODES = frozenset({"session_busy", "not_queued", "not_next", "still_running", "finished"})
"""Refusals that mean another process took the run (or its session) first: nothing to record, try the next."""

RECOVER_EVERY_S = 2.0
"""How often a worker looks for runs whose owner died (each scan would cost two store reads per workspace)."""
LOST_BACKOFF_S = 0.5
"""How long a worker leaves a lane alone after another worker took it first (the winner ends the run, and its end
wakes every worker)."""
RETRY_RESUME_S = 60.0
"""How long a worker leaves a stopped run that it could not resume (its agent gone, its workspace untrusted, …), or
a queued one that could not start for a retryable reason (the store locked too long, the disk full), before it
tries again. A queued run refused for any other reason is failed with that reason (`_record_start_failure`)."""
COALESCE_S = 0.01
"""After a wake, how long a worker lets further wakes gather before it scans once for all of them."""
NOTICE_COALESCE_S = 0.05
"""After a wake by other processes' notices alone, how long a worker waits before it scans (cut short by a wake from
its own process): one scan for the notices of that while, and a lane whose run ended is by then taken by the worker
that ran it (woken by its own run's end, no notice). A run queued elsewhere may start this much later."""
SPREAD = 4
"""A worker with `free` slots takes its lanes from the oldest `free * SPREAD` lane heads of a scan, in an order of
its own: first the lanes it executed a run of lately (`lane_memory.py`; it holds their sessions' state already: the
provider, the plan's caches), then the others, each group in a random order (per worker and scan), so workers woken
together spread over different lanes. The queue's order across sessions stays near oldest-first (a head waits at
most while the `free * SPREAD` older ones are taken); within a session it is exact (one lane, oldest first)."""
CANCEL_REQUESTED = "cancel_requested"
"""The status of a cancel request's notice (`store/postgres/notify.py`)."""
HEADS_ONLY = frozenset({"queued", *TERMINAL_RUN_STATUSES})
"""Statuses of a lifecycle notice after which only the queue's lane heads can have changed (a run queued; a run
ended, so its lane's next may go): the scan it wakes reads the heads alone, unless there are runs to resume."""

RuntimeFor = Callable[[str], WorkspaceRuntime]
"""workspace id -> the runtime that executes every caller's runs in that workspace (the caller goes with the run)."""


@dataclass(slots=True)
class WorkerStats:
    started: int = 0
    resumed: int = 0
    lost_races: int = 0
    failed_to_start: int = 0
    in_flight: dict[RunId, str] = field(default_factory=dict[RunId, str])

    def to_json(self) -> dict[str, object]:
        return {
            "started": self.started,
            "resumed": self.resumed,
            "lost_races": self.lost_races,
            "failed_to_start": self.failed_to_start,
            "in_flight": len(self.in_flight),
        }


class Worker:
    """Claims pending runs of `workspaces` and executes them through `runtime_for`, at most `concurrency` at once."""

    def __init__(
        self,
        workspaces: Callable[[], list[str]],
        runtime_for: RuntimeFor,
        *,
        concurrency: int = 1,
        poll_s: float = 0.5,
        track: Callable[[RunId, str, asyncio.Task[RunResult], str | None], None] | None = None,
        resume_interrupted: bool = True,
    ) -> None:
        """`resume_interrupted`: also take interrupted runs (a dead worker's); answered waiting runs are always
        taken."""
        self._workspaces = workspaces
        self._runtime_for = runtime_for
        self.concurrency = max(0, concurrency)
        self.poll_s = poll_s
        self._track = track
        self.resume_interrupted = resume_interrupted
        self._wake = asyncio.Event()
        self._near = asyncio.Event()  # set with `_wake` by this process's own wakes, not by other processes' notices
        self._look_for_cancels = True  # the next pass asks the store for cancel requests of this worker's runs
        self._look_for_resumes = True  # the next scan reads interrupted and answered runs, not only lane heads
        self._order = random.Random()
        self._lanes: set[tuple[str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._executions: set[asyncio.Task[RunResult]] = set()
        self._running: dict[RunId, asyncio.Task[RunResult]] = {}
        self._stopping = False
        self._recovered: dict[str, float] = {}  # workspace id -> when its dead owners were last looked for
        self._failed: dict[RunId, float] = {}  # a run that could not resume -> when to try it again
        self._lost: dict[tuple[str, str], float] = {}  # a lane another worker took first -> when to look again
        self._memory = LaneMemory()
        self.stats = WorkerStats()
        self.report: Callable[[str, str], None] | None = None
        """Told `(workspace id, what is wrong and what to do)` when a workspace cannot be served (a damaged store,
        a store that cannot be opened), once per distinct problem; the other workspaces are served meanwhile."""
        self._problems: dict[str, str] = {}

    def _problem(self, workspace_id: str, exc: Exception) -> None:
        said = exc.info.message if isinstance(exc, BearAgentError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, BearAgentError) and exc.hint and exc.hint not in said:
            said = f"{said} (fix: {exc.hint})"
        if self._problems.get(workspace_id) == said:
            return
        self._problems[workspace_id] = said
        if self.report is None:
            _log.warning("worker: workspace %s cannot be served: %s", workspace_id, said)
            return
        with contextlib.suppress(Exception):
            self.report(workspace_id, said)

    def wake(self) -> None:
        """Scan now, every kind of pending run (a run was enqueued or answered in this process, or the worker
        stops)."""
        self._look_for_cancels = True
        self._look_for_resumes = True
        self._near.set()
        self._wake.set()

    @property
    def free(self) -> int:
        return self.concurrency - len(self._tasks)

    async def serve(self) -> None:
        """Scan and claim until `stop`; a failing scan (the database away for a moment) is logged and retried."""
        if self.concurrency == 0:
            return
        unlisten = self._listen()
        try:
            while not self._stopping:
                self._wake.clear()
                self._near.clear()
                try:
                    if self._look_for_cancels:
                        self._look_for_cancels = False
                        await self.cancel_requested()
                    await self.scan()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep serving: the next scan may succeed
                    _log.warning("worker scan failed: %s", exc)
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=self.poll_s)
                except TimeoutError:  # the poll: a cancel request or a run to resume whose notice was missed (or
                    # SQLite: none)
                    self._look_for_cancels = True
                    self._look_for_resumes = True
                if self._wake.is_set() and not self._near.is_set():  # woken by other processes' notices alone
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._near.wait(), timeout=NOTICE_COALESCE_S)
                await asyncio.sleep(COALESCE_S)  # a burst of commits elsewhere: one scan for all of them
        finally:
            for stop in unlisten:
                with contextlib.suppress(Exception):
                    stop()

    def _listen(self) -> list[Callable[[], None]]:
        """Wake on the commits of other processes where the store sends notices (PostgreSQL): a run queued, ended,
        interrupted or answered there may be this worker's to take (a commit of a running run is not)."""
        stops: list[Callable[[], None]] = []

        def noticed(notice: CommitNotice) -> None:
            if notice.status == CANCEL_REQUESTED:
                if self.stats.in_flight:  # perhaps one of this worker's runs
                    self.wake()
            elif notice.status != "running" and self.free > 0 and not self._stopping:
                # a run queued, ended (its lane is free), interrupted or answered: one this worker could take; a
                # worker with every slot busy has nothing to take (its own runs' ends wake it)
                if notice.status not in HEADS_ONLY:
                    self._look_for_resumes = True
                self._wake.set()

        for workspace_id in self._workspaces():
            try:
                feed = commit_feed(self._runtime_for(workspace_id).store)
            except BearAgentError as exc:  # polled instead; the scan says what is wrong with it
                self._problem(workspace_id, exc)
                continue
            if feed is not None:
                stops.append(feed.subscribe(noticed))
        return stops

    async def cancel_requested(self) -> int:
        """Cancel the runs this worker executes that someone asked to cancel from another process (`POST
        /v1/runs/{id}/cancel` on any server; the store keeps the request). Returns how many."""
        by_workspace: dict[str, list[RunId]] = {}
        for run_id, workspace_id in self.stats.in_flight.items():
            by_workspace.setdefault(workspace_id, []).append(run_id)
        cancelled = 0
        for workspace_id, run_ids in by_workspace.items():
            store = self._runtime_for(workspace_id).store
            for run_id, reason in (await store.fetch_cancel_requests(run_ids)).items():
                execution = self._running.get(run_id)
                if execution is not None and not execution.done():
                    execution.cancel(reason)
                    cancelled += 1
        return cancelled

    async def scan(self) -> int:
        """One pass over every workspace: recover dead owners' runs, then claim lane heads while slots are free.
        Returns how many runs this pass took."""
        taken = 0
        resumes, self._look_for_resumes = self._look_for_resumes, False  # a notice during the scan sets it again
        moment = time.monotonic()  # what is left alone for a while is forgotten once the while is over
        if self._lost:
            self._lost = {lane: until for lane, until in self._lost.items() if until > moment}
        if self._failed:
            self._failed = {run_id: until for run_id, until in self._failed.items() if until > moment}
        for workspace_id in self._workspaces():
            if self.free <= 0 or self._stopping:
                self._look_for_resumes |= resumes  # the workspaces not looked at are looked at in full next time
                break
            # as many lane heads as this worker could take (its window), and those it leaves alone for a while; its
            # own lanes being started (their runs still queued) are read past only when they took places among them
            ask = max(self.free, 1) * SPREAD + len(self._failed) + len(self._lost)
            for _ in range(2):
                try:  # one workspace that cannot be served (a damaged store) does not stop the others
                    probe = self._runtime_for(workspace_id)
                    now = time.monotonic()
                    if now - self._recovered.get(workspace_id, -RECOVER_EVERY_S) >= RECOVER_EVERY_S:
                        self._recovered[workspace_id] = now
                        if await recover_interrupted(probe.store, probe.writer, probe.clock, probe.ids):
                            resumes = True
                    lanes = await look_at_lanes(
                        probe.store, interrupted=self.resume_interrupted, heads=min(ask, SCAN_LIMIT), resumes=resumes
                    )
                except BearAgentError as exc:
                    self._recovered.pop(workspace_id, None)
                    self._look_for_resumes = True
                    self._problem(workspace_id, exc)
                    break
                self._problems.pop(workspace_id, None)
                if lanes.resumable:  # still there (or busy, or failing): the next scan reads them again
                    self._look_for_resumes = True
                took, own = await self._claim(workspace_id, probe, lanes.pending, now)
                taken += took
                if not own or self.free <= 0 or self._stopping or ask >= SCAN_LIMIT:
                    break
                ask += len(self._lanes)
        return taken

    async def _claim(
        self, workspace_id: str, probe: WorkspaceRuntime, pending: list[Pending], now: float
    ) -> tuple[int, int]:
        """Take lane heads of `pending` while slots are free: the oldest `free * SPREAD` in an order of this worker's
        own, then the rest in order. Returns how many it took, and how many it passed over as its own lanes."""
        taken = own = 0
        window = max(self.free, 1) * SPREAD
        head, rest = pending[:window], pending[window:]
        self._order.shuffle(head)
        self._memory.served_first(workspace_id, head)  # stable: random within each group
        for item in [*head, *rest]:
            if self.free <= 0 or self._stopping:
                break
            key = (workspace_id, item.lane)
            if key in self._lanes:
                own += 1
                continue
            if max(self._failed.get(item.run.run_id, 0.0), self._lost.get(key, 0.0)) > now:
                continue
            subject = await self._memory.subject_of(workspace_id, probe.store, item)
            self._lanes.add(key)
            task = asyncio.create_task(self._take(workspace_id, subject, item, key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            taken += 1
        return taken, own

    async def _take(self, workspace_id: str, subject: str, item: Pending, key: tuple[str, str]) -> None:
        run_id = item.run.run_id
        runtime = self._runtime_for(workspace_id)
        self.stats.in_flight[run_id] = workspace_id
        lost = False
        try:
            execution = asyncio.create_task(
                runtime.start_queued(run_id, caller=subject, seen=item.run)
                if item.action == "start"
                else runtime.resume(run_id, wait=False, caller=subject)
            )
            self._executions.add(execution)
            execution.add_done_callback(self._executions.discard)
            self._running[run_id] = execution
            if self._track is not None:
                self._track(run_id, subject, execution, str(item.run.session_id) if item.run.session_id else None)
            try:
                await execution
            except BearAgentError as exc:
                if exc.info.code.rsplit(".", 1)[-1] in RACE_CODES:
                    # another worker holds the lane (it is starting its head): look at it again only later, or the
                    # workers would spin on that lane until the winner's RunStarted lands
                    self.stats.lost_races += 1
                    self._lost[key] = time.monotonic() + LOST_BACKOFF_S
                    lost = True
                    return
                if item.action == "start" and not exc.info.retryable:
                    self.stats.failed_to_start += 1
                    await _record_start_failure(runtime, run_id, exc)
                else:  # it stays stopped (`runs resume` says why), or queued when the refusal may pass (the store
                    # busy or its disk full for a moment): try again later, not at every scan
                    self._failed[run_id] = time.monotonic() + (exc.info.retry_after_s or RETRY_RESUME_S)
                _log.warning("run %s could not %s: %s", run_id, item.action, exc.info.message)
                return
            except asyncio.CancelledError:
                if self._stopping:
                    return  # handed back (RunInterrupted) for another worker
                return  # cancelled over the API: the run recorded its RunCancelled
            if item.action == "start":
                self.stats.started += 1
            else:
                self.stats.resumed += 1
            self._memory.served(key)
        finally:
            self.stats.in_flight.pop(run_id, None)
            self._running.pop(run_id, None)
            self._lanes.discard(key)
            if not lost:  # the lane's next run may go now (and the slot is free for another lane); a run to resume
                # that waited for this lane was seen by the last scan, which keeps `_look_for_resumes` set
                self._look_for_cancels = True
                self._near.set()
                self._wake.set()

    async def stop(self, *, grace_s: float = 10.0) -> None:
        """Claim nothing more; let runs in flight finish for up to `grace_s`, then hand the rest back (cancel their
        tasks in this process without recording an end: the next worker finds them interrupted and resumes)."""
        self._stopping = True
        self.wake()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace_s)
        for execution in list(self._executions):
            execution.cancel(HAND_BACK)
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _record_start_failure(runtime: WorkspaceRuntime, run_id: RunId, exc: BearAgentError) -> None:
    """A queued run that cannot start (the workspace lost its trust, its agent was removed, …) must not stay queued
    for ever: it is started and failed with the error, so its log says why."""
    from bearagent.domain.run_events import RunFailedV2, RunStartedV2
    from bearagent.service.facts import append_outside_loop

    run = await runtime.store.fetch_run(run_id)
    if run is None or run.status != "queued":
        return
    started = RunStartedV2(owner=runtime.resources.lease.owner)
    with contextlib.suppress(BearAgentError):  # someone else moved it on meanwhile
        await append_outside_loop(
            runtime.writer,
            runtime.clock,
            runtime.ids,
            run_id,
            run.last_sequence,
            (started, RunFailedV2(error=exc.info)),
        )


def worker_summary(workers: Mapping[str, Worker]) -> dict[str, object]:
    return {name: {"concurrency": w.concurrency, **w.stats.to_json()} for name, w in workers.items()}

"""The workspaces a server serves (seed 002's Workspace entity) and the runs it accepts.

Workspaces come from the server's own configuration (`--config FILE`, `-w DIR`), never from a request. The server
keeps ONE `WorkspaceRuntime` per workspace, shared by every caller (one store handle, one writer, one set of MCP
connections and providers); the caller travels with each run (`RunOptions.caller`, the subject), so sessions are
still the caller's own.
A run sent to the server is recorded `queued` at once (`WorkspaceRuntime.enqueue`) and executed by a worker
(`service/worker.py`): the server's own in-process one (`serve --workers N`) or a `bearagent worker` process sharing the
store. Runs of one session execute one at a time in submission order (`service/queue.py`). A second message to a session
with an active run follows the request's strategy: `enqueue` (queue behind it), `reject` (400 `session_busy`) or
`interrupt` (cancel the active run and the session's queued ones, then run). A run that waits for an approval
counts as active for `reject` and `interrupt` (it is cancelled); `enqueue` does not wait for it (nobody may ever
answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeAlias

from bearagent.app.runtime import open_runtime
from bearagent.config.model import ExecutionPolicy
from bearagent.config.store_settings import StoreSettings
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.recent import remember
from bearagent.domain.state import RunProjection, WorkspaceRecord
from bearagent.service.cancelling import STOPPED, cancel_stopped, moved_on
from bearagent.service.closing import close_all
from bearagent.service.leases import is_self
from bearagent.service.queue import pending_runs
from bearagent.service.runner import RunOptions, RunResult, WorkspaceRuntime
from bearagent.service.worker import Worker

_log = logging.getLogger("bearagent.server")

Strategy: TypeAlias = Literal["enqueue", "reject", "interrupt"]
RuntimeListener: TypeAlias = Callable[[str, WorkspaceRuntime], None]
_ID_RE = re.compile(r"[^a-z0-9-]+")
FINISHED = frozenset({"succeeded", "failed", "cancelled"})
OWNERS_KEPT = 10_000
"""How many runs' starting subjects a server remembers (`owner_of`), the latest kept: a fallback for a run whose
log does not say who started it (every run this server starts records its initiator), so a long-lived server does
not keep one entry per run it ever accepted."""
_STOP_ATTEMPTS = 50
DEFAULT_CONCURRENCY = 16
"""Runs one in-process worker executes at once (`serve --concurrency`)."""
ADMITTING_AT_ONCE = 4
"""How many run submissions one server records at once (`RunManager.start`); the others wait their turn, in order.
Recording a run is CPU on the server's one event loop (its checks, the store's reads and commit) in short steps
between awaits, and the frames of the runs already executing wait behind every step that is ready before them: a
burst of a thousand submissions, 64 in flight, held those frames 160-350 ms at its p99, 70-120 ms with the gate and
`cli/startup.long_lived` (docs/benchmarks.md). A few at a time keeps the loop's turns short; the submissions' own
rate is the CPU's either way."""


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    """One served workspace. `root_path` is shown only to callers with the `admin` scope."""

    id: str
    name: str
    root_path: Path
    kind: str = "project"
    external_ref: str | None = None
    execution_policy: ExecutionPolicy = "local"
    """The policy in force (`config/execution.py`): `none` for a chat workspace or one marked so."""
    declared_policy: ExecutionPolicy = "local"
    """What the server config says for it (`workspaces[].execution_policy`), passed to every runtime it makes."""
    metadata: Mapping[str, object] = field(default_factory=dict[str, object])
    status: str = "active"
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def to_json(self, *, admin: bool) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "external_ref": self.external_ref,
            "execution_policy": self.execution_policy,
            "metadata": dict(self.metadata),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.created_at.isoformat(),
        }
        if admin:
            out["root_path"] = str(self.root_path)
        return out


def workspace_id_for(path: Path, taken: set[str]) -> str:
    """A URL-safe id from a directory name, unique among `taken`."""
    base = _ID_RE.sub("-", path.name.lower()).strip("-") or "workspace"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


class RunManager:
    """One runtime per workspace (for every caller), the runs this server accepted, and its in-process worker."""

    def __init__(
        self,
        workspaces: Mapping[str, WorkspaceEntry],
        env: Mapping[str, str],
        *,
        workers: int = 1,
        concurrency: int = DEFAULT_CONCURRENCY,
        resume_interrupted: bool = False,
        poll_s: float = 0.5,
        store: StoreSettings | None = None,
    ) -> None:
        """`workers` x `concurrency` runs execute in this process at once (`workers=0`: API only, runs wait for a
        `bearagent worker`); `resume_interrupted`: its worker also resumes interrupted runs (`runs.resume_on_start`);
        `store`: the server config's `store:`, for every workspace (None: each workspace's own choice)."""
        self.workspaces = dict(workspaces)
        self.workspace_records: dict[str, WorkspaceRecord] = {}  # as stored at start (`workspace_records.py`)
        self._env = dict(env)
        self._store = store
        self._runtimes: dict[str, WorkspaceRuntime] = {}
        self._tasks: dict[RunId, asyncio.Task[RunResult]] = {}
        self._session_of: dict[RunId, str] = {}
        self._owner: dict[RunId, str] = {}
        # accepted here and not seen finished, by the subject that sent them: run id -> workspace id
        self._open: dict[str, dict[RunId, str]] = {}
        self._listeners: list[RuntimeListener] = []
        self._admitting = asyncio.Semaphore(ADMITTING_AT_ONCE)
        self.worker = Worker(
            lambda: list(self.workspaces),
            self.runtime,
            concurrency=workers * concurrency,
            poll_s=poll_s,
            track=self._track,
            resume_interrupted=resume_interrupted,
        )
        self._worker_task: asyncio.Task[None] | None = None

    def runtime(self, workspace_id: str) -> WorkspaceRuntime:
        """The workspace's one runtime, made on first use; every caller's runs go through it."""
        runtime = self._runtimes.get(workspace_id)
        if runtime is None:
            from bearagent.workspace import load_workspace

            entry = self.workspaces[workspace_id]
            loaded = load_workspace(
                entry.root_path, env=self._env, store=self._store, execution_policy=entry.declared_policy
            )
            runtime = open_runtime(loaded)
            self._runtimes[workspace_id] = runtime
            for listener in tuple(self._listeners):
                listener(workspace_id, runtime)
        return runtime

    def runtimes_of(self, workspace_id: str) -> list[WorkspaceRuntime]:
        """The runtime this server made for a workspace, if it made it yet (a list: none or one)."""
        runtime = self._runtimes.get(workspace_id)
        return [runtime] if runtime is not None else []

    def on_runtime(self, listener: RuntimeListener) -> None:
        """Call `listener(workspace_id, runtime)` for every runtime made from now on (the workspace feed subscribes
        to each runtime's writer)."""
        self._listeners.append(listener)

    def start_worker(self) -> None:
        """Start the in-process worker (idempotent; a no-op with `workers=0`)."""
        if self._worker_task is None and self.worker.concurrency > 0:
            self._worker_task = asyncio.create_task(self.worker.serve(), name="bearagent-worker")

    def session_running(self, session_id: SessionId) -> bool:
        """Whether a run of the session executes in this process."""
        return any(
            self._session_of.get(run_id) == str(session_id) and not task.done() for run_id, task in self._tasks.items()
        )

    async def start(
        self,
        workspace_id: str,
        subject: str,
        prompt: str,
        options: RunOptions,
        *,
        strategy: Strategy = "enqueue",
    ) -> RunProjection:
        """Record a run `queued` and wake the worker; return its record at once. Configuration errors (untrusted
        workspace, unknown agent, ...) raise here, before anything is recorded. At most `ADMITTING_AT_ONCE`
        submissions are recorded at once; the others wait their turn."""
        runtime = self.runtime(workspace_id)
        options = replace(options, caller=subject)
        session = options.session
        if session is not None and strategy != "enqueue":
            await self._settle(runtime, SessionId(session), subject, strategy)  # may wait for a run to stop: not gated
        async with self._admitting:
            run = await runtime.enqueue(prompt, options)
        self._remember_owner(run.run_id, subject)
        self._open.setdefault(subject, {})[run.run_id] = workspace_id
        self.worker.wake()
        return run

    async def _settle(self, runtime: WorkspaceRuntime, session: SessionId, subject: str, strategy: Strategy) -> None:
        """`reject` refuses, and `interrupt` cancels, the session's active runs: the running one (executing in this
        process), a waiting one, and the queued ones."""
        newest = [r for r in await runtime.store.fetch_runs(session_id=session, limit=100) if r.parent_run_id is None]
        active = [r for r in newest if r.status in ("running", "waiting", "queued")]
        if not active:
            return
        if strategy == "reject":
            first = active[-1]
            state = (
                f"waiting for approval {first.pending_approval.approval_id}"
                if first.status == "waiting" and first.pending_approval is not None
                else first.status
            )
            raise BearAgentError(
                ErrorInfo.of(
                    "invalid_request",
                    "session_busy",
                    f"session {session} has an active run ({first.run_id}, {state}); the request asked to reject",
                ),
                hint="retry later, answer its approval (POST /v1/runs/{id}/approvals/{approval_id}), or send "
                "strategy `enqueue` (queue behind it) or `interrupt` (cancel it)",
            )
        reason = f"a new message interrupted it (by {subject})"
        for run in active:
            await self.stop(runtime, run.run_id, reason)

    async def stop(self, runtime: WorkspaceRuntime, run_id: RunId, reason: str, *, wait_s: float = 30.0) -> bool:
        """Cancel a top-level run, waiting up to `wait_s` for it to record its end: its task when it executes here;
        its `RunCancelled` while nobody executes it (a queued run the worker starts at that moment refuses it, and
        its task is cancelled instead); a request in the store for the worker of another process that executes it
        (it looks for requests while it holds runs, `worker.py`). Whether it is being cancelled."""
        for _ in range(_STOP_ATTEMPTS):
            task = self._tasks.get(run_id)
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=wait_s)
                after = await runtime.store.fetch_run(run_id) if task.done() else None
                if after is not None and after.status in STOPPED:
                    # cancelled before it began (the worker tracks a queued run's task before it first runs): nothing
                    # recorded its end, and the worker would take the still queued run again. Record it here.
                    continue
                return True
            run = await runtime.store.fetch_run(run_id)
            if run is None or run.parent_run_id is not None:
                return False
            if run.status in STOPPED:
                try:
                    await cancel_stopped(runtime.writer, runtime.clock, runtime.ids, run, reason)
                    return True
                except BearAgentError as refused:
                    if not moved_on(refused):
                        raise
                    continue  # it moved on meanwhile (started): look again
            if run.status != "running":
                return False  # it ended
            if run.owner is None or not is_self(run.owner):
                break  # another process executes it
            await asyncio.sleep(0.02)  # claimed here just now: its task is about to be tracked
        else:
            return False
        await runtime.store.request_cancel(run_id, reason, runtime.clock.now())
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            now = await runtime.store.fetch_run(run_id)
            if now is None or now.status != "running":
                break
            await asyncio.sleep(0.05)
        return True

    def _track(self, run_id: RunId, subject: str, task: asyncio.Task[RunResult], session: str | None) -> None:
        """The worker executes `run_id` in this process: cancel, the per-caller limit and the feed see it."""
        self._tasks[run_id] = task
        self._remember_owner(run_id, subject)
        if session is not None:
            self._session_of[run_id] = session

        def done(_t: asyncio.Task[RunResult]) -> None:
            if self._tasks.get(run_id) is task:
                self._tasks.pop(run_id, None)
                self._session_of.pop(run_id, None)

        task.add_done_callback(done)

    def resume(self, workspace_id: str, subject: str, run: RunProjection) -> None:
        """A stopped run may continue (its approval was answered): the worker takes it, behind its session's
        earlier runs (here, or in whichever worker process sees it first)."""
        owner = self._remember_owner(run.run_id, subject)
        self._open.setdefault(owner, {}).setdefault(run.run_id, workspace_id)
        self.worker.wake()

    async def resume_interrupted(self) -> list[RunId]:
        """Every interrupted top-level run of the served workspaces and every waiting one whose approval was
        answered (`runs.resume_on_start`): the worker resumes them, each as its session's caller."""
        found: list[RunId] = []
        for workspace_id in self.workspaces:
            probe = self.runtime(workspace_id)
            await probe.resources.recover()
            found += [p.run.run_id for p in await pending_runs(probe.store) if p.action == "resume"]
        self.worker.wake()
        return found

    def _remember_owner(self, run_id: RunId, subject: str) -> str:
        """The subject `run_id` is remembered as started by: the one already remembered, else `subject`."""
        known = self._owner.get(run_id)
        return known if known is not None else remember(self._owner, run_id, subject, OWNERS_KEPT)

    def owner_of(self, run_id: RunId) -> str | None:
        """The subject that started a run through this server (detached runs have no session to say so)."""
        return self._owner.get(run_id)

    def is_running(self, run_id: RunId) -> bool:
        task = self._tasks.get(run_id)
        return task is not None and not task.done()

    async def has_room(self, subject: str, limit: int) -> bool:
        """Whether `subject` may send another run under the per-caller limit of `limit` active runs. The runs this
        server recorded as the caller's and has not yet seen end are at least as many as the active ones, so while
        they are fewer than `limit` the answer is yes without a read; only at the limit are their statuses read
        (`active_count`, which forgets the ended ones, so a caller's set stays near `limit` runs). Without that,
        every request of a caller with N open runs read N statuses: a burst of 1,000 runs read ~500,000 (issue 37)."""
        open_runs = self._open.get(subject)
        if open_runs is None or len(open_runs) < limit:
            return True
        return await self.active_count(subject) < limit

    async def active_count(self, subject: str) -> int:
        """Runs `subject` sent here that are not finished yet, wherever they execute (the per-caller limit); a run
        that waits for an answer executes nothing and is not counted. One status read per workspace, however many
        runs the caller has open (a read per run made a burst of N runs cost N² reads)."""
        open_runs = self._open.get(subject)
        if not open_runs:
            return 0
        count = 0
        elsewhere: dict[str, list[RunId]] = {}  # by workspace: not executing in this process, so ask the store
        for run_id, workspace_id in open_runs.items():
            if self.is_running(run_id):
                count += 1
            else:
                elsewhere.setdefault(workspace_id, []).append(run_id)
        for workspace_id, run_ids in elsewhere.items():
            statuses = await self.runtime(workspace_id).store.fetch_run_statuses(run_ids)
            for run_id in run_ids:
                status = statuses.get(run_id)
                if status is None or status in FINISHED:
                    open_runs.pop(run_id, None)
                elif status != "waiting":
                    count += 1
        if not open_runs and self._open.get(subject) is open_runs:  # not one a later start made meanwhile
            del self._open[subject]
        return count

    async def aclose(self) -> None:
        """Stop the worker and the runs this process executes, then close every workspace's runtime: each step
        even when an earlier one failed (`service.closing`)."""
        await close_all([lambda: self.worker.stop(grace_s=0.0), self._end_tasks, self._close_runtimes])

    async def _end_tasks(self) -> None:
        if self._worker_task is not None:
            self._worker_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker_task
        for task in list(self._tasks.values()):
            if not task.done():
                task.cancel()
        for task in list(self._tasks.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _close_runtimes(self) -> None:
        runtimes = list(self._runtimes.values())
        self._runtimes.clear()
        await close_all(runtime.aclose for runtime in runtimes)  # one that fails does not keep the others open

"""The workspaces a server serves (seed 002's Workspace entity) and the runs it executes in the background.

Workspaces come from the server's own configuration (`--config FILE`, `-w DIR`), never from a request. Each caller
gets its own `WorkspaceRuntime` per workspace (its `caller` is the subject, so sessions are the caller's own).
Runs execute as background tasks; a second message to a session with an active run follows the request's strategy:
`enqueue` (wait for the active one), `reject` (400 `session_busy`) or `interrupt` (cancel the active run, then
run). A run that waits for an approval counts as active for `reject` and `interrupt` (it is cancelled); `enqueue`
does not wait for it (nobody may ever answer). A run continued after an answer (`resume`) is registered like a
started one, so cancel, the per-caller limit and the session's queue see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeAlias

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.run_events import RunCancelledV1
from bearagent.domain.state import RunProjection
from bearagent.runner import RunOptions, RunResult, WorkspaceRuntime
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.recorder import RunRecorder

_log = logging.getLogger("bearagent.server")

Strategy: TypeAlias = Literal["enqueue", "reject", "interrupt"]
RuntimeListener: TypeAlias = Callable[[str, WorkspaceRuntime], None]
_ID_RE = re.compile(r"[^a-z0-9-]+")
STOPPED = frozenset({"waiting", "interrupted", "queued"})
"""Run states no process executes: cancelling one records `RunCancelled` (the reducer accepts it in each)."""


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    """One served workspace. `root_path` is shown only to callers with the `admin` scope."""

    id: str
    name: str
    root_path: Path
    kind: str = "project"
    external_ref: str | None = None
    execution_policy: Mapping[str, object] = field(default_factory=dict[str, object])
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
            "execution_policy": dict(self.execution_policy),
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


class _SilentObserver(NullObserver):
    """Announces the run id as soon as the loop has created the run."""

    def __init__(self, started: asyncio.Future[RunId]) -> None:
        self._started = started

    def run_started(self, run_id: RunId, agent: str) -> None:
        if not self._started.done():
            self._started.set_result(run_id)


@dataclass
class _Active:
    run_id: RunId
    task: asyncio.Task[RunResult]


def _log_resume_failure(run_id: RunId) -> Callable[[asyncio.Task[RunResult]], None]:
    def done(task: asyncio.Task[RunResult]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _log.warning("resuming run %s failed: %s", run_id, task.exception())

    return done


class RunManager:
    """Runtimes per (workspace, caller) and the background runs they execute."""

    def __init__(self, workspaces: Mapping[str, WorkspaceEntry], env: Mapping[str, str]) -> None:
        self.workspaces = dict(workspaces)
        self._env = dict(env)
        self._runtimes: dict[tuple[str, str], WorkspaceRuntime] = {}
        self._active: dict[str, _Active] = {}  # session id -> its running run
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._tasks: dict[RunId, asyncio.Task[RunResult]] = {}
        self._owner: dict[RunId, str] = {}
        self._listeners: list[RuntimeListener] = []
        self._auth_contexts: dict[str, Mapping[str, object]] = {}

    def runtime(self, workspace_id: str, subject: str) -> WorkspaceRuntime:
        key = (workspace_id, subject)
        runtime = self._runtimes.get(key)
        if runtime is None:
            from bearagent.app import load_workspace

            entry = self.workspaces[workspace_id]
            runtime = WorkspaceRuntime(load_workspace(entry.root_path, env=self._env), caller=subject)
            self._runtimes[key] = runtime
            for listener in tuple(self._listeners):
                listener(workspace_id, runtime)
        return runtime

    def runtimes_of(self, workspace_id: str) -> list[WorkspaceRuntime]:
        """The runtimes this server made for a workspace so far (one per caller)."""
        return [r for (ws, _), r in self._runtimes.items() if ws == workspace_id]

    def on_runtime(self, listener: RuntimeListener) -> None:
        """Call `listener(workspace_id, runtime)` for every runtime made from now on (the workspace feed subscribes
        to each runtime's writer)."""
        self._listeners.append(listener)

    def remember_auth_context(self, session_id: SessionId, snapshot: Mapping[str, object]) -> None:
        """The caller context a session was created with. Kept in memory: the session record has no column for it
        yet, so after a restart a session's `auth_context` is unknown."""
        self._auth_contexts[str(session_id)] = dict(snapshot)

    def auth_context_of(self, session_id: SessionId) -> Mapping[str, object] | None:
        return self._auth_contexts.get(str(session_id))

    def session_running(self, session_id: SessionId) -> bool:
        active = self._active.get(str(session_id))
        return active is not None and not active.task.done()

    async def start(
        self,
        workspace_id: str,
        subject: str,
        prompt: str,
        options: RunOptions,
        *,
        strategy: Strategy = "enqueue",
    ) -> RunId:
        """Start a run in the background and return its id once it is recorded. Configuration errors (untrusted
        workspace, unknown agent, …) raise here, before anything runs."""
        runtime = self.runtime(workspace_id, subject)
        session = options.session
        if session is not None and strategy != "enqueue":
            await self._settle_waiting(runtime, session, subject, strategy)
        if session is not None:
            active = self._active.get(session)
            if active is not None and not active.task.done():
                if strategy == "reject":
                    raise BearAgentError(
                        ErrorInfo.of(
                            "invalid_request",
                            "session_busy",
                            f"session {session} has an active run ({active.run_id}); the request asked to reject",
                        ),
                        hint="retry later, or send strategy `enqueue` (wait) or `interrupt` (cancel the active run)",
                    )
                if strategy == "interrupt":
                    active.task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await active.task
        started: asyncio.Future[RunId] = asyncio.get_running_loop().create_future()
        lock = self._session_locks.setdefault(session, asyncio.Lock()) if session is not None else None
        if options.run_id is None:  # known before the first event: the feed can tell whose run it is at once
            options = dataclasses.replace(options, run_id=runtime.ids.new(RunId))
        assert options.run_id is not None
        self._owner[options.run_id] = subject

        async def go() -> RunResult:
            if lock is None:
                return await runtime.run(prompt, options, _SilentObserver(started))
            async with lock:  # runs of one session execute one at a time, in submission order
                return await runtime.run(prompt, options, _SilentObserver(started))

        task = asyncio.create_task(go())

        def done(t: asyncio.Task[RunResult]) -> None:
            if not started.done():
                exc = t.exception() if not t.cancelled() else None
                if exc is not None:
                    started.set_exception(exc)
                else:
                    started.cancel()

        task.add_done_callback(done)
        run_id = await started
        self._register(run_id, subject, task, session)
        return run_id

    def _register(self, run_id: RunId, subject: str, task: asyncio.Task[RunResult], session: str | None) -> None:
        self._tasks[run_id] = task
        self._owner[run_id] = subject
        if session is not None:
            self._active[session] = _Active(run_id, task)

    async def _settle_waiting(self, runtime: WorkspaceRuntime, session: str, subject: str, strategy: Strategy) -> None:
        """`reject` refuses, and `interrupt` cancels, a run of the session that waits for an approval."""
        newest = await runtime.store.fetch_runs(session_id=SessionId(session), limit=5)
        waiting = next((r for r in newest if r.parent_run_id is None and r.status == "waiting"), None)
        if waiting is None:
            return
        if strategy == "reject":
            approval = waiting.pending_approval.approval_id if waiting.pending_approval is not None else "?"
            raise BearAgentError(
                ErrorInfo.of(
                    "invalid_request",
                    "session_busy",
                    f"session {session} has a run waiting for approval {approval} ({waiting.run_id}); the request "
                    "asked to reject",
                ),
                hint="answer the approval (POST /v1/runs/{id}/approvals/{approval_id}), or send strategy "
                "`interrupt` (cancel the waiting run) or `enqueue`",
            )
        await cancel_stopped(runtime, waiting, f"a new message interrupted it (by {subject})")

    def resume(self, workspace_id: str, subject: str, run: RunProjection) -> None:
        """Continue a run in the background (an answered approval, an interrupted run) as `subject`, registered like
        a started run and behind the session's queue."""
        runtime = self.runtime(workspace_id, subject)
        session = str(run.session_id) if run.session_id is not None else None
        lock = self._session_locks.setdefault(session, asyncio.Lock()) if session is not None else None
        run_id = run.run_id

        async def go() -> RunResult:
            if lock is None:
                return await runtime.resume(run_id)
            async with lock:
                return await runtime.resume(run_id)

        task = asyncio.create_task(go())
        task.add_done_callback(_log_resume_failure(run_id))
        self._register(run_id, subject, task, session)

    async def resume_interrupted(self) -> list[RunId]:
        """Continue, in the background, every interrupted top-level run of the served workspaces and every waiting
        one whose approval was answered (`runs.resume_on_start`). Each resumes as its session's caller."""
        resumed: list[RunId] = []
        for workspace_id in self.workspaces:
            probe = self.runtime(workspace_id, "local")
            await probe.resources.recover()
            candidates = [
                *await probe.store.fetch_runs(status="interrupted", limit=10_000),
                *await probe.store.fetch_runs(status="waiting", limit=10_000),
            ]
            for run in candidates:
                if run.parent_run_id is not None:
                    continue
                if run.status == "waiting" and (run.pending_approval is None or run.pending_approval.decision is None):
                    continue
                session = await probe.store.fetch_session(run.session_id) if run.session_id is not None else None
                subject = session.caller if session is not None and session.caller else "local"
                self.resume(workspace_id, subject, run)
                resumed.append(run.run_id)
        return resumed

    def owner_of(self, run_id: RunId) -> str | None:
        """The subject that started a run through this server (detached runs have no session to say so)."""
        return self._owner.get(run_id)

    def cancel(self, run_id: RunId) -> bool:
        task = self._tasks.get(run_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def task_of(self, run_id: RunId) -> asyncio.Task[RunResult] | None:
        return self._tasks.get(run_id)

    def is_running(self, run_id: RunId) -> bool:
        task = self._tasks.get(run_id)
        return task is not None and not task.done()

    def active_count(self, subject: str) -> int:
        """Runs of `subject` still executing (the per-caller limit counts these)."""
        return sum(1 for run_id, t in self._tasks.items() if self._owner.get(run_id) == subject and not t.done())

    async def aclose(self) -> None:
        for task in list(self._tasks.values()):
            if not task.done():
                task.cancel()
        for task in list(self._tasks.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for runtime in self._runtimes.values():
            await runtime.aclose()
        self._runtimes.clear()


async def cancel_stopped(runtime: WorkspaceRuntime, run: RunProjection, reason: str) -> RunProjection:
    """Record `RunCancelled` for a run no process executes (waiting, interrupted, queued); a run that moved on
    meanwhile refuses it (the reducer) and that error propagates."""
    recorder = RunRecorder(
        writer=runtime.writer, clock=runtime.clock, ids=runtime.ids, run_id=run.run_id, last_sequence=run.last_sequence
    )
    return await recorder.append(RunCancelledV1(reason=reason[:500]))

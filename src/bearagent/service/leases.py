"""Leases: which process executes a run, whether it is still alive, and what to record when it is not.

A run being executed has an owner (`RunOwner`: host, boot id, pid, process start time; recorded by RunStarted v2
and RunResumed) and a heartbeat (`RunStorage.renew_leases`, every third of the lease while the run is held).
`recover_interrupted` runs when a runtime opens its store: every `running` run whose owner is gone gets a
`RunInterrupted` fact with what was in flight, so no listing ever shows a phantom `running`.

When is an owner gone?
- same host, same boot: its pid is dead, or is alive with another start time (the pid was reused);
- same host, another boot (the machine restarted): always;
- another host, or a log written before owners were recorded: its last heartbeat (else its last event) is older
  than the lease (`RunOwner.lease_ms`, 60 s by default).
This process's own runs are never interrupted by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import socket
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import IdGenerator, RunId
from bearagent.domain.run_events import InFlight, RunInterruptedV1, RunOwner
from bearagent.ports import Clock, RunStorage
from bearagent.runtime.processes import pid_alive, proc_stat, process_start, read_quietly
from bearagent.runtime.run_writer import RunWriter
from bearagent.service.facts import append_outside_loop

DEFAULT_LEASE_MS = 60_000


@functools.cache
def boot_id() -> str:
    return read_quietly("/proc/sys/kernel/random/boot_id")[:64]


def this_process(lease_ms: int = DEFAULT_LEASE_MS) -> RunOwner:
    """The owner record of the calling process (read once per process: keyed by pid, so a fork reads its own)."""
    return _owner_of(os.getpid(), lease_ms)


@functools.cache
def _owner_of(pid: int, lease_ms: int) -> RunOwner:
    return RunOwner(
        host=socket.gethostname()[:256] or "localhost",
        boot_id=boot_id(),
        pid=pid,
        process_start=process_start(pid),
        lease_ms=lease_ms,
    )


def is_self(owner: RunOwner) -> bool:
    me = this_process()
    return (owner.host, owner.boot_id, owner.pid, owner.process_start) == (
        me.host,
        me.boot_id,
        me.pid,
        me.process_start,
    )


def owner_gone(owner: RunOwner | None, last_seen: datetime, now: datetime) -> str | None:
    """Why the run's owner is gone (a sentence for the log), or None while it may still be executing the run."""
    lease = timedelta(milliseconds=owner.lease_ms if owner is not None else DEFAULT_LEASE_MS)
    if owner is None:
        if now - last_seen > lease:
            return f"no process has held the run since {last_seen.isoformat()} (the log names no owner)"
        return None
    if is_self(owner):
        return None
    me = this_process()
    if owner.host == me.host and owner.boot_id and owner.boot_id == me.boot_id:
        return _local_owner_gone(owner)
    if owner.host == me.host and owner.boot_id and me.boot_id and owner.boot_id != me.boot_id:
        return f"its host {owner.host} restarted since the run began"
    if now - last_seen > lease:
        return (
            f"its owner (pid {owner.pid} on {owner.host}) sent no heartbeat since {last_seen.isoformat()}, "
            f"longer than its lease of {owner.lease_ms} ms"
        )
    return None


def _local_owner_gone(owner: RunOwner) -> str | None:
    """`owner_gone` for an owner on this host and boot. The process's /proc entry is read once, for its state and
    its start time together: a pid that another, short-lived process took over (pids wrap at 32768 on many hosts,
    and a busy machine gets there in minutes) may exit between a liveness check and a later read of its start time,
    and an unreadable start time must not make the dead owner look alive (issue 29: "a dead run is listed as
    running" under load). An exited process its parent has not reaped yet (a zombie) is gone too."""
    gone = f"its process (pid {owner.pid} on {owner.host}) is gone"
    stat = proc_stat(owner.pid)
    if stat is None:  # no entry: no such process; or a system without /proc, where only signal 0 can tell
        return gone if not pid_alive(owner.pid) else None
    state, start = stat
    if state in ("Z", "X"):
        return f"{gone} (exited; its parent has not collected it yet)"
    if owner.process_start and start != owner.process_start:
        return f"{gone}; the pid now belongs to another process"
    return None


async def recover_interrupted(
    storage: RunStorage, writer: RunWriter, clock: Clock, ids: IdGenerator, *, limit: int = 100_000
) -> list[RunId]:
    """Record `RunInterrupted` for every running run whose owner is gone; return their ids. A run another process
    recovers (or finishes) at the same moment is left to it (the conditional commit refuses the second writer)."""
    running = await storage.fetch_runs(status="running", limit=limit)
    if not running:
        return []
    beats = await storage.fetch_heartbeats([run.run_id for run in running])
    now = clock.now()
    recovered: list[RunId] = []
    for run in running:
        last_seen = max(
            (t for t in (beats.get(run.run_id), run.started_at, run.created_at) if t is not None),
            default=run.created_at,
        )
        why = owner_gone(run.owner, last_seen, now)
        if why is None:
            continue
        in_flight: InFlight | None = None
        if run.active_activity_id is not None:
            activities = await storage.fetch_activities(run.run_id)
            active = next((a for a in activities if a.activity_id == run.active_activity_id), None)
            if active is not None:
                in_flight = InFlight.of(active)
        interrupted = RunInterruptedV1(
            reason=why, owner=run.owner, last_seen_at=min(last_seen, now), in_flight=in_flight
        )
        try:
            await append_outside_loop(writer, clock, ids, run.run_id, run.last_sequence, (interrupted,))
        except BearAgentError:  # another process got there first, or the run moved on
            continue
        recovered.append(run.run_id)
    return recovered


@dataclass(slots=True)
class _Held:
    count: int = 0


class LeaseKeeper:
    """Renews the heartbeat of every run this process holds, every third of the lease, while any is held."""

    def __init__(self, storage: RunStorage, clock: Clock, *, lease_ms: int = DEFAULT_LEASE_MS) -> None:
        self._storage = storage
        self._clock = clock
        self.lease_ms = lease_ms
        self._held: dict[RunId, _Held] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def owner(self) -> RunOwner:
        return this_process(self.lease_ms)

    @contextlib.asynccontextmanager
    async def hold(self, run_id: RunId) -> AsyncGenerator[None]:
        held = self._held.setdefault(run_id, _Held())
        held.count += 1
        with contextlib.suppress(BearAgentError):
            await self._storage.renew_leases([run_id], self._clock.now())
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._beat(), name="bearagent-lease-heartbeat")
        try:
            yield
        finally:
            held.count -= 1
            if held.count <= 0:
                self._held.pop(run_id, None)
            if not self._held:
                self._stop()

    def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    def held(self) -> Sequence[RunId]:
        return tuple(self._held)

    async def _beat(self) -> None:
        interval = self.lease_ms / 3000.0
        while self._held:
            await asyncio.sleep(interval)
            with contextlib.suppress(BearAgentError):
                await self._storage.renew_leases(list(self._held), self._clock.now())

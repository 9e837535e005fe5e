"""When a worker scans after a wake (`service/worker.py`, issue 37): its own process's wakes (a run enqueued or
ended here, a cancel request for a run it executes) make it scan at once; other processes' lifecycle notices alone
make it wait `NOTICE_COALESCE_S` first (cut short by a wake of its own), and one scan covers every notice of that
while. The notices come from a feed the test drives (what the PostgreSQL store's LISTEN connection delivers); the
scan is the worker's own loop with the store read replaced by a recorder of when it ran.

Timing bounds here are lower bounds on a wait the test sets long (a loaded machine only makes them later) or upper
bounds far above what the code waits (seconds for a wake that should act within milliseconds)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from bearagent.domain.ids import RunId
from bearagent.ports import CommitNotice
from bearagent.service import worker as worker_module
from bearagent.service.worker import Worker


class _Feed:
    """A commit feed whose notices the test sends."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[CommitNotice], None]] = []

    def subscribe(self, listener: Callable[[CommitNotice], None], run_id: str | None = None) -> Callable[[], None]:
        assert run_id is None  # a worker listens to the lifecycle channel only
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def send(self, status: str, run_id: str = "r-1") -> None:
        for listener in list(self.listeners):
            listener(CommitNotice(run_id, 3, status))


class _Scans(Worker):
    """The worker's serve loop as it is; its scan records when it ran instead of reading a store."""

    def __init__(self, feed: _Feed, fetch_cancels: list[list[RunId]]) -> None:
        async def fetch_cancel_requests(run_ids: list[RunId]) -> dict[RunId, str]:
            fetch_cancels.append(list(run_ids))
            return {}

        store = SimpleNamespace(commits=feed, fetch_cancel_requests=fetch_cancel_requests)
        runtime = SimpleNamespace(store=store)
        super().__init__(lambda: ["ws"], lambda _workspace: runtime, concurrency=2, poll_s=60.0)  # pyright: ignore[reportArgumentType]  # the two attributes the loop reads
        self.scans: list[float] = []

    async def scan(self) -> int:
        self.scans.append(time.monotonic())
        return 0


async def _serving(worker: _Scans) -> asyncio.Task[None]:
    task = asyncio.create_task(worker.serve())
    deadline = time.monotonic() + 10
    while not worker.scans and time.monotonic() < deadline:  # the first pass scans at once
        await asyncio.sleep(0.01)
    assert worker.scans, "the worker never made its first scan"
    await asyncio.sleep(0.05)  # past the first pass's coalescing sleep: waiting for a wake
    return task


async def _until(done: Callable[[], bool], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return done()


async def _stop(worker: _Scans, task: asyncio.Task[None]) -> None:
    await worker.stop(grace_s=0)
    await asyncio.wait_for(task, 10)


def test_other_processes_notices_wait_then_one_scan_covers_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "NOTICE_COALESCE_S", 2.0)  # long: a stall of the machine cannot split it

    async def go() -> None:
        feed = _Feed()
        worker = _Scans(feed, [])
        task = await _serving(worker)
        before = len(worker.scans)
        sent = time.monotonic()
        feed.send("queued", "r-1")
        feed.send("succeeded", "r-2")
        await asyncio.sleep(0.1)
        feed.send("queued", "r-3")  # inside the same wait: no scan of its own
        assert await _until(lambda: len(worker.scans) > before, 10), "a notice of another process never led to a scan"
        assert worker.scans[before] - sent >= 2.0, "the worker scanned before the notices' coalescing wait was over"
        await asyncio.sleep(0.6)
        assert len(worker.scans) == before + 1, f"one scan expected for three notices, got {len(worker.scans) - before}"
        await _stop(worker, task)

    asyncio.run(go())


def test_a_wake_of_its_own_process_cuts_the_notices_wait_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "NOTICE_COALESCE_S", 30.0)

    async def go() -> None:
        feed = _Feed()
        worker = _Scans(feed, [])
        task = await _serving(worker)
        before = len(worker.scans)
        feed.send("queued")
        await asyncio.sleep(0.1)
        assert len(worker.scans) == before, "a notice of another process made the worker scan without waiting"
        worker.wake()  # a run enqueued in this process
        assert await _until(lambda: len(worker.scans) > before, 5), "the worker's own wake waited out the notices'"
        await _stop(worker, task)

    asyncio.run(go())


def test_a_wake_of_its_own_process_scans_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "NOTICE_COALESCE_S", 30.0)

    async def go() -> None:
        worker = _Scans(_Feed(), [])
        task = await _serving(worker)
        before = len(worker.scans)
        worker.wake()
        assert await _until(lambda: len(worker.scans) > before, 5), "a wake of the worker's own process waited"
        await _stop(worker, task)

    asyncio.run(go())


def test_a_cancel_request_for_a_run_it_executes_is_looked_at_without_the_notices_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "NOTICE_COALESCE_S", 30.0)

    async def go() -> None:
        feed = _Feed()
        looked: list[list[RunId]] = []
        worker = _Scans(feed, looked)
        task = await _serving(worker)
        run_id = RunId("0b7a4f6e-2d1c-4b8a-9e3f-5a6b7c8d9e0f")
        worker.stats.in_flight[run_id] = "ws"
        looked.clear()
        feed.send(worker_module.CANCEL_REQUESTED, str(run_id))
        assert await _until(lambda: bool(looked), 5), "a cancel request of another process waited for the notices'"
        assert looked[0] == [run_id]
        worker.stats.in_flight.clear()
        await _stop(worker, task)

    asyncio.run(go())


def test_a_worker_with_every_slot_busy_ignores_other_processes_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "NOTICE_COALESCE_S", 0.0)

    async def go() -> None:
        feed = _Feed()
        worker = _Scans(feed, [])
        task = await _serving(worker)
        worker.concurrency = 0  # every slot busy, as far as `free` can tell
        before = len(worker.scans)
        feed.send("queued")
        await asyncio.sleep(0.3)
        assert len(worker.scans) == before, "a worker without a free slot scanned on another process's notice"
        worker.concurrency = 2
        await _stop(worker, task)

    asyncio.run(go())

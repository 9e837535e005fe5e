"""A run stopped between its claim and its RunStarted: a caller's cancel ends it cancelled (not taken again), a stopping
worker's hand-back leaves it queued for the next worker; only a conflict is retried when the cancel is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env
from tests.support.run_manager import done_workspace, serving
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.domain.ids import RunId
from bearagent.ports import RunCommit
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.reducer import InvalidTransition, SequenceConflict
from bearagent.server import registry
from bearagent.server.registry import RunManager
from bearagent.service import worker as worker_module
from bearagent.service.cancelling import moved_on
from bearagent.service.run_types import RunOptions, RunResult
from bearagent.service.runner import WorkspaceRuntime
from bearagent.store.errors import StoreError
from bearagent.store.sqlite import SqliteEventStore


async def _outcome(manager: RunManager, run_id: RunId) -> tuple[str, str]:
    """The run's status and its event types, comma-separated."""
    runtime = manager.runtime("ws")
    after = await runtime.store.fetch_run(run_id)
    assert after is not None
    return after.status, ",".join(e.event_type for e in await runtime.store.fetch_events(run_id))


def _held_commits(monkeypatch: pytest.MonkeyPatch, event_type: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Commits whose first event is `event_type` go through a task (as PostgreSQL's do; SQLite commits most at once)
    and wait for `release` once they set `committing`: a cancellation can land while one commits."""
    committing, release = asyncio.Event(), asyncio.Event()
    real_commit = SqliteEventStore.commit
    real_now = SqliteEventStore.commit_now

    def now_unless_held(self: SqliteEventStore, commit: RunCommit) -> bool:
        return commit.events[0].event_type != event_type and real_now(self, commit)

    async def held(self: SqliteEventStore, commit: RunCommit) -> None:
        if commit.events[0].event_type == event_type:
            committing.set()
            await release.wait()
        await real_commit(self, commit)

    monkeypatch.setattr(SqliteEventStore, "commit_now", now_unless_held)
    monkeypatch.setattr(SqliteEventStore, "commit", held)
    return committing, release


def test_a_queued_run_whose_task_never_began_is_recorded_cancelled(tmp_path: Path) -> None:
    # the worker tracks a queued run's execution task before the task first runs (`service/worker.py` `_take`); a
    # cancel that lands in between cancels a coroutine that never started, so nothing in it records the end: the
    # run stayed `queued` and the worker took it again (a cancelled run that then ran, seen under load)
    root, env = done_workspace(tmp_path)

    async def scenario() -> tuple[str, str, bool]:
        async with serving(root, env, workers=0) as manager:
            run = await manager.start("ws", "local:tester", "hello", RunOptions())
            runtime = manager.runtime("ws")
            task = asyncio.create_task(runtime.start_queued(run.run_id, caller="local:tester"))
            manager._track(run.run_id, "local:tester", task, None)  # pyright: ignore[reportPrivateUsage]
            stopped = await manager.stop(runtime, run.run_id, "cancelled by the test", wait_s=5)
            return (*await _outcome(manager, run.run_id), stopped)

    status, events, stopped = asyncio.run(scenario())
    assert stopped
    assert status == "cancelled", (status, events)
    assert events.endswith("RunCancelled") and "RunStarted" not in events, events


def test_stopping_a_queued_run_retries_only_when_it_moved_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `service/cancelling.moved_on` is the one owner of which refusal of `RunCancelled` means "read it again": the
    # server's `stop` and `bearagent runs cancel` both ask it. A refusal that is not a race (here the store failing
    # as on a full disk) is the answer at once, not retried 50 times and then reported as "not cancelling"
    assert moved_on(SequenceConflict("r", expected=3, got=2))
    assert moved_on(InvalidTransition("RunCancelled", "running", "a worker started it"))
    assert not moved_on(StoreError("state.db", "disk_full", "the disk is full", "free some space"))
    root, env = done_workspace(tmp_path)
    calls: list[str] = []

    async def full_disk(*args: object) -> object:
        calls.append("cancel")
        raise StoreError("state.db", "disk_full", "the disk is full", "free some space")

    monkeypatch.setattr(registry, "cancel_stopped", full_disk)

    async def scenario() -> str:
        async with serving(root, env, workers=0) as manager:
            run = await manager.start("ws", "local:tester", "hello", RunOptions())
            with pytest.raises(StoreError, match="the disk is full"):
                await manager.stop(manager.runtime("ws"), run.run_id, "cancelled by the test", wait_s=5)
            status, _events = await _outcome(manager, run.run_id)
            return status

    assert asyncio.run(scenario()) == "queued"
    assert calls == ["cancel"]


def test_a_stopping_worker_hands_back_a_run_it_had_not_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a graceful stop whose grace ran out cancels its runs' tasks with HAND_BACK: a started run is left interrupted
    # for the next worker (`runtime/loop.py`); one caught between its claim and its RunStarted was recorded
    # "cancelled by the caller before it started", as if someone had cancelled it, and no worker ever ran it
    root, env = done_workspace(tmp_path)
    preparing = asyncio.Event()

    async def held(self: WorkspaceRuntime, run_id: object, observer: object, caller: str) -> object:
        preparing.set()  # the worker claimed it (its lane's lock is held) and prepares it: no RunStarted yet
        await asyncio.sleep(3600)
        raise AssertionError("the stop cancels this")

    monkeypatch.setattr(WorkspaceRuntime, "_start_locked", held)

    async def scenario() -> tuple[str, str]:
        async with serving(root, env, workers=1) as manager:
            run = await manager.start("ws", "local:tester", "hello", RunOptions())
            await asyncio.wait_for(preparing.wait(), timeout=120)
            await manager.worker.stop(grace_s=0)
            return await _outcome(manager, run.run_id)

    status, events = asyncio.run(scenario())
    assert status == "queued" and events == "RunCreated", (status, events)


def test_a_stopping_worker_hands_back_a_run_whose_run_started_was_committing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the hand-back landing while RunStarted commits (a commit the store makes in a task, as on PostgreSQL): the
    # commit finishes, so the run has started and is handed back interrupted for the next worker to resume; it was
    # recorded cancelled ("cancelled by the caller"), a run nobody cancelled and nobody resumed
    root, env = done_workspace(tmp_path)
    committing, release = _held_commits(monkeypatch, "RunStarted")

    async def scenario() -> tuple[str, str]:
        async with serving(root, env, workers=1) as manager:
            try:
                run = await manager.start("ws", "local:tester", "hello", RunOptions())
                await asyncio.wait_for(committing.wait(), timeout=120)
                stopping = asyncio.create_task(manager.worker.stop(grace_s=0))
                await asyncio.sleep(0.2)  # the hand-back reaches the run while its RunStarted commits
                release.set()
                await stopping
                return await _outcome(manager, run.run_id)
            finally:
                release.set()

    status, events = asyncio.run(scenario())
    assert status == "interrupted" and events == "RunCreated,RunStarted,RunInterrupted", (status, events)


def test_a_queued_run_the_store_refused_for_a_moment_stays_queued_and_starts_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a refusal that may pass (the store locked by another writer for too long, the disk full: retryable) used to
    # fail the queued run for good with that error; it stays queued now and the worker starts it at a later scan
    root, env = done_workspace(tmp_path)
    real_start = WorkspaceRuntime._start_locked  # pyright: ignore[reportPrivateUsage]
    refusals: list[str] = []

    async def busy_once(self: WorkspaceRuntime, run_id: RunId, observer: RunObserver | None, caller: str) -> RunResult:
        if not refusals:
            refusals.append(str(run_id))
            what = "the event store was locked by another writer for too long while starting a run"
            raise StoreError("state.db", "busy", what, "Retry", retryable=True)
        return await real_start(self, run_id, observer, caller)

    monkeypatch.setattr(WorkspaceRuntime, "_start_locked", busy_once)
    monkeypatch.setattr(worker_module, "RETRY_RESUME_S", 0.3)  # the product waits a minute before it tries again

    async def scenario() -> tuple[str, str]:
        async with serving(root, env, workers=1, poll_s=0.1) as manager:
            run = await manager.start("ws", "local:tester", "hello", RunOptions())
            deadline = asyncio.get_running_loop().time() + 120
            status, events = await _outcome(manager, run.run_id)
            while status in ("queued", "running") and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.1)
                status, events = await _outcome(manager, run.run_id)
            return status, events

    status, events = asyncio.run(scenario())
    assert refusals, "the first start was refused"
    assert status == "succeeded" and "RunFailed" not in events, (status, events)


HELD = """
turns:
  - text: "Waiting for the release."
    wait_for_file: release
    wait_timeout_ms: 120000
  - text: "done"
"""


def test_a_cancel_while_run_resumed_commits_ends_the_run_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a caller's cancel landing while a worker records the RunResumed that takes an interrupted run over (a commit
    # the store makes in a task, as on PostgreSQL): the commit finishes, the run is `running` with nobody executing
    # it, and the cancel was lost (the lease scan later found it interrupted and a worker resumed it)
    main = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", HELD, agents=main)
    env = isolated_env(tmp_path / "home")

    async def interrupted() -> RunId:
        async with serving(root, env, workers=1, poll_s=0.1) as manager:
            run = await manager.start("ws", "local:tester", "hello", RunOptions())
            status, _events = await _outcome(manager, run.run_id)
            while status != "running":
                await asyncio.sleep(0.05)
                status, _events = await _outcome(manager, run.run_id)
            await manager.worker.stop(grace_s=0)  # handed back: interrupted, for another worker to resume
            assert (await _outcome(manager, run.run_id))[0] == "interrupted"
            return run.run_id

    run_id = asyncio.run(interrupted())
    committing, release = _held_commits(monkeypatch, "RunResumed")

    async def cancelled_while_resuming() -> tuple[str, str]:
        async with serving(root, env, workers=1, poll_s=0.1, resume_interrupted=True) as manager:
            try:
                assert await manager.resume_interrupted() == [run_id]
                await asyncio.wait_for(committing.wait(), timeout=120)
                runtime = manager.runtime("ws")
                stopping = asyncio.create_task(manager.stop(runtime, run_id, "cancelled by the test", wait_s=30))
                await asyncio.sleep(0.2)  # the cancel reaches the run while its RunResumed commits
                release.set()
                assert await stopping
                return await _outcome(manager, run_id)
            finally:
                release.set()

    status, events = asyncio.run(cancelled_while_resuming())
    assert status == "cancelled", (status, events)
    assert events.endswith("RunResumed,RunCancelled") and events.count("RunResumed") == 1, events

"""The worker's scan reads as many of the queue's lane heads as it could take (`service/worker.py`), not the whole
queue; its own lanes whose runs it is starting (still `queued` until their RunStarted commits) can fill those
places, and then it reads past them. A real run manager, its in-process worker and SQLite store; the RunStarted
commits are held, so "four of its lanes still starting when a slot frees" is a state, not a race."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, MutableSequence
from pathlib import Path

import pytest
from tests.server.test_http_approvals import WRITE
from tests.support.config_ws import isolated_env
from tests.support.run_manager import done_workspace, serving
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.domain.ids import RunId
from bearagent.ports import RunCommit
from bearagent.server.registry import RunManager, WorkspaceEntry
from bearagent.service.resuming import answer_approval
from bearagent.service.run_types import RunOptions
from bearagent.service.runner import WorkspaceRuntime
from bearagent.store.sqlite import SqliteEventStore


async def _until(done: Callable[[], bool], within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return done()


def _held_starts(monkeypatch: pytest.MonkeyPatch) -> tuple[list[RunId], Callable[[RunId], asyncio.Event]]:
    """Every RunStarted commit waits until its run's gate is set: the runs whose RunStarted came (in order), and
    the gate of a run."""
    came: list[RunId] = []
    gates: dict[RunId, asyncio.Event] = {}
    real_commit, real_now = SqliteEventStore.commit, SqliteEventStore.commit_now

    def gate(run_id: RunId) -> asyncio.Event:
        return gates.setdefault(run_id, asyncio.Event())

    def now_unless_start(self: SqliteEventStore, commit: RunCommit) -> bool:
        return commit.events[0].event_type != "RunStarted" and real_now(self, commit)

    async def held(self: SqliteEventStore, commit: RunCommit) -> None:
        if commit.events[0].event_type == "RunStarted":
            came.append(commit.events[0].run_id)
            await gate(commit.events[0].run_id).wait()
        await real_commit(self, commit)

    monkeypatch.setattr(SqliteEventStore, "commit_now", now_unless_start)
    monkeypatch.setattr(SqliteEventStore, "commit", held)
    return came, gate


def test_a_slot_that_frees_while_its_own_lanes_are_starting_takes_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # concurrency 5 takes 5 sessions' runs; their RunStarted commits wait. One is let go and ends: 1 slot free, so
    # the scan asks for 4 heads (1 x SPREAD), and the 4 oldest are the worker's own lanes, still queued. It must read
    # past them and take the next session's run; reading only the 4 it took nothing, at every poll, until one of
    # its own started
    root, env = done_workspace(tmp_path)
    came, gate = _held_starts(monkeypatch)

    async def scenario() -> tuple[list[RunId], list[RunId], list[str]]:
        async with serving(root, env, workers=1, concurrency=5) as manager:
            first = [(await manager.start("ws", "local:tester", "hello", RunOptions())).run_id for _ in range(5)]
            assert await _until(lambda: len(came) == 5), came
            more = [(await manager.start("ws", "local:tester", "hello", RunOptions())).run_id for _ in range(4)]
            gate(first[0]).set()  # it starts, answers and ends: one slot free, four of the worker's lanes starting
            took = await _until(lambda: len(came) == 6, within_s=10.0)
            taken = list(came)
            for run_id in [*first, *more]:
                gate(run_id).set()
            store = manager.runtime("ws").store

            async def statuses() -> list[str]:
                return [r.status for r in await store.fetch_runs(limit=20)]

            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(s != "succeeded" for s in await statuses()):
                await asyncio.sleep(0.05)
            assert took, f"no run taken while the worker's own lanes were starting: {taken}"
            return taken, more, await statuses()

    taken, more, finals = asyncio.run(scenario())
    assert taken[5] == more[0], (taken, more)  # the oldest session after its own
    assert finals == ["succeeded"] * 9, finals


ASK_THEN_HOLD = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Second."
    wait_for_file: release
  - text: "Done."
"""


@pytest.mark.slow
def test_an_answer_given_while_its_session_was_busy_is_taken_when_the_session_frees(
    tmp_path: Path, postgres_dsn: str
) -> None:
    # PostgreSQL, where the worker hears other processes' commits: a scan woken by a run queued or ended reads only
    # the lane heads, unless the previous scan found runs to resume. Here run A waits for an approval, and its
    # session's next run B starts meanwhile (an unanswered wait does not hold the session up) and is held in its model
    # call. A's answer comes through another handle (an API-only manager's): the worker's scan sees A answered but
    # its lane busy. When B ends, the scan must read A again (B's end alone adds no run to resume) and resume it at
    # once, not at the poll (60 s here)
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    root = scripted_workspace(
        tmp_path / "ws", ASK_THEN_HOLD, agents=agents, config=CONFIG + "permission_mode: default\n"
    )
    env = {**isolated_env(tmp_path / "home"), "BEARAGENT_DATABASE_URL": postgres_dsn}
    caller = "local:tester"

    async def settled(runtime: WorkspaceRuntime, run_id: RunId, status: str, within_s: float) -> str:
        deadline = time.monotonic() + within_s
        while True:
            run = await runtime.store.fetch_run(run_id)
            assert run is not None
            if run.status == status or time.monotonic() > deadline:
                return run.status
            await asyncio.sleep(0.05)

    async def scenario() -> tuple[str, float]:
        async with (
            serving(root, env, workers=0) as api,
            serving(root, env, workers=1, concurrency=2, poll_s=60.0) as fleet,
        ):
            runtime = api.runtime("ws")
            session = await runtime.create_session(None, caller=caller)
            options = RunOptions(session=str(session.session_id), wait_approvals=True)
            first = (await api.start("ws", caller, "write it", options)).run_id
            assert await settled(runtime, first, "waiting", 30) == "waiting"
            second = (await api.start("ws", caller, "and then", options)).run_id
            assert await settled(runtime, second, "running", 30) == "running"
            waiting = await runtime.store.fetch_run(first)
            assert waiting is not None and waiting.pending_approval is not None
            await answer_approval(
                runtime, first, waiting.pending_approval.approval_id, "allow_once", answered_by=caller
            )
            await asyncio.sleep(1.0)  # the answer's notice reached the worker, and its scan found the lane busy
            (root / ".bearagent" / "release").write_text("")
            assert await settled(runtime, second, "succeeded", 30) == "succeeded"
            ended = time.monotonic()
            status = await settled(runtime, first, "succeeded", 30)
            # the worker counts a resume when its task for the run returns, a moment after the run's end commits
            await _until(lambda: fleet.worker.stats.resumed == 1, within_s=10)
            if status != "succeeded" or fleet.worker.stats.resumed != 1:  # say what became of both runs
                logs = {
                    name: [(e.event_type, e.occurred_at.isoformat()) for e in await runtime.store.fetch_events(run)]
                    for name, run in (("A", first), ("B", second))
                }
                raise AssertionError(f"A is {status}; worker {fleet.worker.stats.to_json()}; logs {logs}")
            return status, time.monotonic() - ended

    status, after_s = asyncio.run(scenario())
    # not taken within 30 s of its session freeing: only the worker's poll (60 s) would have looked at it again
    assert status == "succeeded", (status, after_s)
    assert (root / "out.txt").read_text() == "made\n"


class _InOrder(random.Random):
    """A worker's order of its window without the randomness: the oldest lane head first."""

    def shuffle(self, x: MutableSequence[object]) -> None:  # type: ignore[override]
        return None


def test_a_worker_takes_a_lane_it_served_before_older_lanes_it_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # of the heads in its window, a worker takes first the lanes it executed a run of (it holds their sessions'
    # provider and plan caches already), so a fleet's workers keep to their sessions instead of all building every
    # session's state. Concurrency 1: session A's first run is served; C's run holds the slot (its RunStarted
    # commit waits) while B1, B2, B3 and then A queue. When C ends, the window holds B1, B2, B3, A (oldest first,
    # the random order replaced by that one): A must go first
    root, env = done_workspace(tmp_path)
    came, gate = _held_starts(monkeypatch)

    async def scenario() -> tuple[list[RunId], list[RunId]]:
        async with serving(root, env, workers=1, concurrency=1) as manager:
            manager.worker._order = _InOrder()  # pyright: ignore[reportPrivateUsage]
            runtime = manager.runtime("ws")

            async def run_in(session: str) -> RunId:
                options = RunOptions(session=session)
                return (await manager.start("ws", "local:tester", "hello", options)).run_id

            a, c, *bs = [str((await runtime.create_session(None, caller="local:tester")).session_id) for _ in range(5)]
            first = await run_in(a)
            gate(first).set()
            assert await _until(lambda: len(came) == 1)
            store = runtime.store

            async def finished(run_id: RunId) -> bool:
                run = await store.fetch_run(run_id)
                return run is not None and run.status == "succeeded"

            deadline = time.monotonic() + 20
            while not await finished(first) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            holding = await run_in(c)
            assert await _until(lambda: len(came) == 2), came
            later = [await run_in(b) for b in bs] + [await run_in(a)]
            gate(holding).set()
            assert await _until(lambda: len(came) == 3), came
            order = list(came)
            for run_id in later:
                gate(run_id).set()
            assert await _until(lambda: len(came) == 6), came
            return order, later

    order, later = asyncio.run(scenario())
    assert order[2] == later[-1], (order, later)  # A's second run, not B1's older one


HOLD_THEN_DONE = """
turns:
  - text: "Held."
    wait_for_file: release
  - text: "done"
"""


def test_a_scan_that_filled_its_slots_early_looks_at_the_other_workspaces_in_full_next(tmp_path: Path) -> None:
    # a scan that was asked to read the runs to resume (here: an approval answered through this server) but filled
    # its slots in the first workspace never looked at the second one; the next scan must still read them there, or
    # the answered run waits for the poll (60 s here). Concurrency 1: B1 (second workspace) waits for an approval;
    # A0 holds the slot (its turn waits for a file) while A1 queues behind it in A0's session; B1 is answered (a
    # wake for a full look, with no slot free); then A0 and A1 end, each followed by a scan woken by its end
    main = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    first = scripted_workspace(tmp_path / "a", HOLD_THEN_DONE, agents=main)
    second = scripted_workspace(tmp_path / "b", WRITE, agents=main, config=CONFIG + "permission_mode: default\n")
    env = isolated_env(tmp_path / "home")
    caller = "local:tester"
    entries = {name: WorkspaceEntry(id=name, name=name, root_path=root) for name, root in (("a", first), ("b", second))}

    async def status_of(manager: RunManager, ws: str, run_id: RunId, want: str, within_s: float) -> str:
        deadline = time.monotonic() + within_s
        while True:
            run = await manager.runtime(ws).store.fetch_run(run_id)
            assert run is not None
            if run.status == want or time.monotonic() > deadline:
                return run.status
            await asyncio.sleep(0.05)

    async def scenario() -> str:
        manager = RunManager(entries, env, workers=1, concurrency=1, poll_s=60.0)
        manager.start_worker()
        try:
            b = manager.runtime("b")
            b_session = str((await b.create_session(None, caller=caller)).session_id)
            b1 = (
                await manager.start("b", caller, "write it", RunOptions(session=b_session, wait_approvals=True))
            ).run_id
            assert await status_of(manager, "b", b1, "waiting", 30) == "waiting"
            a = manager.runtime("a")
            a_session = str((await a.create_session(None, caller=caller)).session_id)
            a0 = (await manager.start("a", caller, "hold", RunOptions(session=a_session))).run_id
            assert await status_of(manager, "a", a0, "running", 30) == "running"
            a1 = (await manager.start("a", caller, "then", RunOptions(session=a_session))).run_id
            waiting = await b.store.fetch_run(b1)
            assert waiting is not None and waiting.pending_approval is not None
            after = await answer_approval(b, b1, waiting.pending_approval.approval_id, "allow_once", answered_by=caller)
            manager.resume("b", caller, after)  # as the approvals route does: a wake for a full look
            await asyncio.sleep(0.5)  # that scan ran, with no slot free
            (first / ".bearagent" / "release").write_text("")
            assert await status_of(manager, "a", a1, "succeeded", 30) == "succeeded"
            return await status_of(manager, "b", b1, "succeeded", 30)
        finally:
            await manager.aclose()

    # not taken within 30 s of the slot freeing: only the poll (60 s) would have looked at the second workspace
    assert asyncio.run(scenario()) == "succeeded"
    assert (second / "out.txt").read_text() == "made\n"

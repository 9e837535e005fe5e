"""Appends never block the event loop: while another process holds the SQLite write lock, a run waiting to commit
waits on the store's writer thread, and another run's tokens keep streaming on the loop."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from tests.support.events import EventFactory
from tests.support.runtime import scripted_plan

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.ids import DeterministicIdGenerator, RunId, Uuid4IdGenerator
from bearagent.domain.models import ModelCompleted, ModelEvent, ModelRequest, TextDelta
from bearagent.domain.run_events import HookExecutedV1
from bearagent.ports import SystemClock
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.plan import RunSpec
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.sqlite import SqliteEventStore

HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


class SlowTokens:
    """A model that streams `count` tokens, one every `gap_s`."""

    def __init__(self, count: int, gap_s: float) -> None:
        self.count = count
        self.gap_s = gap_s
        self.first = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for n in range(self.count):
            yield TextDelta(text=f"t{n} ")
            self.first.set()
            await asyncio.sleep(self.gap_s)
        yield ModelCompleted(stop_reason="end_turn", usage=TokenUsage(input_tokens=1, output_tokens=self.count))


class Tokens(NullObserver):
    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []

    def token(self, run_id: RunId, text: str) -> None:
        self.seen.append((time.monotonic(), text))


def test_a_commit_waiting_for_another_process_does_not_stop_another_runs_tokens(tmp_path: Path) -> None:
    path = tmp_path / ".bearagent" / "state.db"
    store = SqliteEventStore(path, busy_timeout_ms=20_000)
    model = SlowTokens(count=60, gap_s=0.02)
    plan = dataclasses.replace(scripted_plan(tmp_path, "turns:\n  - text: unused\n", tool_names=()), provider=model)
    tokens = Tokens()

    async def go() -> tuple[float, float]:
        writer = RunWriter(store)
        loop = AgentLoop(
            store=store, writer=writer, clock=SystemClock(), ids=DeterministicIdGenerator(), observer=tokens
        )
        other = EventFactory(ids=Uuid4IdGenerator())
        await writer.append_many([other.run_created(), other.run_started()])
        spec = RunSpec(goal="stream", workspace_root=tmp_path, budgets=BudgetLimits(max_model_iterations=1))
        streaming = asyncio.create_task(loop.run(spec, plan))
        await asyncio.wait_for(model.first.wait(), 30)  # the run is in its model call: no commit until it ends
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None and holder.stdin is not None
        assert (await asyncio.to_thread(holder.stdout.readline)).strip() == "locked"
        blocked_from = time.monotonic()
        append = asyncio.create_task(
            writer.append(
                other.event(HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=1))
            )
        )
        await asyncio.sleep(0.5)
        assert not append.done(), "the commit should wait for the other process's write lock"
        released_at = time.monotonic()
        holder.stdin.write("\n")
        holder.stdin.flush()
        await asyncio.wait_for(asyncio.to_thread(holder.wait), 30)
        projection = await asyncio.wait_for(append, 30)
        assert projection.last_sequence == 3
        outcome = await asyncio.wait_for(streaming, 30)
        assert outcome.status == "succeeded", outcome.error
        return blocked_from, released_at

    try:
        blocked_from, released_at = asyncio.run(go())
        during = [text for at, text in tokens.seen if blocked_from < at < released_at]
        # 0.5 s at one token per 20 ms is ~25 tokens; a blocked loop would deliver none
        assert len(during) >= 10, len(during)
        assert [text for _at, text in tokens.seen] == [f"t{n} " for n in range(60)]
        assert [e.sequence for e in store.read_events(RunId(str(store.list_runs()[1].run_id)))] == [1, 2, 3]
    finally:
        store.close()

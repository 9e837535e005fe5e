"""Benchmark of crash recovery and resume (issue 16). Run: `uv run python benchmarks/bench_recovery.py [--quick]`.

1. The recovery scan a runtime makes when it opens its store (`leases.recover_interrupted`), with 10,000 runs in
   the store: (a) none to interrupt, (b) 10 running runs whose owner is dead. Baseline in the same run: the plain
   `sqlite3` query that lists the same `running` rows (`SELECT ... WHERE status = 'running'`).
2. Resume latency: from `Workspace.resume(run)` to the first new model request of an interrupted run
   (`ModelCallRequested` committed), with the scripted model, vs `Workspace.run` of a new run to its first model
   request in the same process (the same planning, a fresh start).

Each figure is the best of `--rounds` rounds (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.events import EventFactory
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.domain.run_events import RunOwner, RunStartedV2
from bearagent.ports import SystemClock
from bearagent.runtime.run_writer import Committed, Published, RunWriter
from bearagent.service.leases import recover_interrupted, this_process
from bearagent.store.sqlite import SqliteEventStore


def _dead_owner() -> RunOwner:
    """This host, this boot, the pid of a process that has exited: an owner recovery knows is gone."""
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return this_process().model_copy(update={"pid": child.pid, "process_start": 1})


DEAD = _dead_owner()


async def _fill(store: SqliteEventStore, runs: int, dead: int) -> None:
    writer = RunWriter(store)
    for n in range(runs):
        f = EventFactory(ids=Uuid4IdGenerator())
        events = [f.run_created(), f.event(RunStartedV2(owner=DEAD))]
        if n >= dead:
            events.append(f.run_succeeded())
        await writer.append_many(events)


def bench_scan(runs: int, rounds: int) -> None:
    for dead in (0, 10):
        best = best_base = float("inf")
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                store = SqliteEventStore(Path(tmp) / "state.db")
                asyncio.run(_fill(store, runs, dead))
                t0 = time.perf_counter()
                with sqlite3.connect(store.path) as conn:
                    conn.execute("SELECT run_id, data FROM run_projections WHERE status = 'running'").fetchall()
                best_base = min(best_base, time.perf_counter() - t0)

                async def scan(s: SqliteEventStore = store) -> int:
                    return len(await recover_interrupted(s, RunWriter(s), SystemClock(), Uuid4IdGenerator()))

                t0 = time.perf_counter()
                found = asyncio.run(scan())
                best = min(best, time.perf_counter() - t0)
                assert found == dead, found
                store.close()
        print(
            f"recovery scan, {runs:,} runs, {dead} to interrupt: {best * 1000:.1f} ms "
            f"(plain sqlite3 query of the running rows: {best_base * 1000:.2f} ms)"
        )


SCRIPT = """
turns:
  - text: "Step one."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Done."
"""


async def _to_first_request(root: Path, home: Path, act: str) -> tuple[float, str]:
    """Seconds from `act` ("run" a new run, "resume" the last one) to its first committed ModelCallRequested."""
    async with open_ws(root, home) as ws:
        first: asyncio.Future[float] = asyncio.get_running_loop().create_future()

        def watch(item: Published) -> None:
            if isinstance(item, Committed) and item.event.event_type == "ModelCallRequested" and not first.done():
                first.set_result(time.perf_counter())

        runtime_of(ws).writer.subscribe(watch)
        t0 = time.perf_counter()
        done = await (ws.run("read the notes") if act == "run" else ws.resume("last"))
        return (await first) - t0, str(done.run_id)


def bench_resume(rounds: int) -> None:
    best_resume = best_new = float("inf")
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            root = scripted_workspace(
                Path(tmp) / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}
            )
            (root / "notes.md").write_text("hi\n")
            home = Path(tmp) / "home"
            new, run_id = asyncio.run(_to_first_request(root, home, "run"))
            _cut_after_first_turn(root, run_id)  # the state kill -9 leaves just after the first model turn
            resumed, _ = asyncio.run(_to_first_request(root, home, "resume"))
            best_resume = min(best_resume, resumed)
            best_new = min(best_new, new)
    print(
        f"resume of an interrupted run to its first new model request: {best_resume * 1000:.1f} ms "
        f"(a new run in a fresh runtime to its first model request: {best_new * 1000:.1f} ms)"
    )


def _cut_after_first_turn(root: Path, run_id: str) -> None:
    """Rewrite the stored run as a process killed just after its first model turn (events cut, projections
    rebuilt, owner dead), the state `kill -9` leaves."""
    db = root / ".bearagent" / "state.db"
    with sqlite3.connect(db) as conn:
        (cut,) = conn.execute(
            "SELECT min(sequence) FROM events WHERE run_id = ? AND event_type = 'ToolCallRequested'", (run_id,)
        ).fetchone()
        conn.execute("DELETE FROM events WHERE run_id = ? AND sequence >= ?", (run_id, cut))
        conn.execute(
            "UPDATE events SET event_type = 'RunStarted', schema_version = 2, payload = ? "
            "WHERE run_id = ? AND event_type = 'RunStarted'",
            (DEAD.model_dump_json(exclude_none=True).join(['{"owner": ', "}"]), run_id),
        )
    with SqliteEventStore(db) as store:
        store.rebuild_projections()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, Python {sys.version.split()[0]}"
    )
    bench_scan(1_000 if args.quick else 10_000, rounds)
    bench_resume(rounds)


if __name__ == "__main__":
    main()

"""Benchmark of the SQLite event store (issue 3). Run: `uv run python benchmarks/bench_store.py [--quick]`.

Measures, in one process and against a baseline measured in the same run:

1. single-event appends per second through `SqliteEventStore.append` (one transaction each, WAL, synchronous=NORMAL),
   vs plain `sqlite3` inserts of the same event rows into the same `events` table in the same mode (one transaction
   each) -- the ratio is what the store's reducer, projections and validation cost on top of the raw write;
2. rebuilding all projections from 100,000 stored events (`rebuild_projections`), in events per second;
3. whether the cost of one append grows with the length of the run: the median cost of appends #10..#209 vs
   appends #10,000..#10,199 of one run.

The machine is shared and noisy, so each figure is the best of `--rounds` rounds. To compare source trees (before /
after a change), `--ab BEFORE/src AFTER/src [--rounds 6] [--parts batched,recorder,replay,read,plain]` measures each
part in alternating fresh processes, each tree first on PYTHONPATH (the replay and read parts on a store whose
projections are sound, as the rounds after the first of the full run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import DeterministicIdGenerator, RunId, Uuid4IdGenerator
from bearagent.domain.run_events import parse_run_event_payload
from bearagent.ports import SystemClock
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.run_state import iso
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.schema import MIGRATIONS
from bearagent.store.sqlite import SqliteEventStore, dumps_json

BIG = BudgetLimits(
    max_model_iterations=100_000,
    max_tool_calls=1_000_000,
    max_tokens=10_000_000_000,
    max_cost_microusd=10_000_000_000_000,
    max_wall_time_ms=7 * 24 * 3_600_000,
)


def long_run(n_events: int, ids: DeterministicIdGenerator, run_no: int) -> list[Event]:
    """One run: created, started, then model call / tool call cycles (3 events each) up to `n_events`."""
    f = EventFactory(RunId(f"{run_no:08x}-0000-4000-8000-000000000000"), ids=ids)
    events = [f.run_created(BIG), f.run_started()]
    while len(events) < n_events - 1:
        events.extend(f.model_call(100, 20, 3))
        events.extend(f.tool_call("Read"))
    events = events[: n_events - 1]
    # finish cleanly only if no activity is open
    if events[-1].event_type.endswith(("Completed", "Started")) and not events[-1].event_type.endswith("Started"):
        events.append(f.run_succeeded())
    return events


def event_row(e: Event) -> tuple[object, ...]:
    return (
        str(e.run_id),
        e.sequence,
        str(e.event_id),
        e.event_type,
        e.schema_version,
        iso(e.occurred_at),
        None if e.causation_id is None else str(e.causation_id),
        None if e.correlation_id is None else str(e.correlation_id),
        dumps_json(e.payload),
    )


INSERT = (
    "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
    " correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def plain_inserts(path: Path, rows: list[tuple[object, ...]]) -> tuple[float, float]:
    """Baseline: the same rows, same `events` table, WAL + NORMAL, one transaction per row.

    Returns (rows per wall-clock second, rows per CPU second of this process)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(MIGRATIONS[0][0])
    start, cpu = time.perf_counter(), time.process_time()
    for row in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(INSERT, row)
        conn.execute("COMMIT")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    conn.close()
    return len(rows) / elapsed, len(rows) / cpu


def store_appends(path: Path, events: list[Event]) -> tuple[float, float, list[float]]:
    """Appends through the store: (appends per wall second, per CPU second, CPU seconds of each append)."""
    store = SqliteEventStore(path, durability="normal")
    durations: list[float] = []
    cpu_clock = time.thread_time
    start, cpu = time.perf_counter(), time.process_time()
    for event in events:
        t0 = cpu_clock()
        store.append(event)
        durations.append(cpu_clock() - t0)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return len(events) / elapsed, len(events) / cpu, durations


def step_batches(events: list[Event]) -> list[list[Event]]:
    """`events` (created, started, then model call / tool call cycles) cut into the batches one agent step commits
    as one `append_many`: created + started first, then each model call's 3 events and each tool call's 3."""
    batches = [events[:2]]
    batches += [events[i : i + 3] for i in range(2, len(events), 3)]
    return batches


def store_batched_appends(path: Path, events: list[Event]) -> tuple[float, float]:
    """Appends of one step's events per `append_many` (one transaction each): (events per wall s, per CPU s)."""
    store = SqliteEventStore(path, durability="normal")
    batches = step_batches(events)
    start, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        store.append_many(batch)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return len(events) / elapsed, len(events) / cpu


def recorder_batched_appends(path: Path, events: list[Event]) -> tuple[float, float]:
    """The runtime's path: the same facts as payload models through `RunRecorder` -> `RunWriter` -> the store's async
    port (its writer thread), one step's events per `append_many`: (events per wall s, per CPU s)."""
    batches = [
        [parse_run_event_payload(e.event_type, e.schema_version, e.payload) for e in batch]
        for batch in step_batches(events)
    ]
    store = SqliteEventStore(path, durability="normal")
    recorder = RunRecorder(
        writer=RunWriter(store), clock=SystemClock(), ids=Uuid4IdGenerator(), run_id=RunId(str(uuid.uuid4()))
    )

    async def go() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for batch in batches:
            await recorder.append_many(batch)
        return time.perf_counter() - start, time.process_time() - cpu

    elapsed, cpu = asyncio.run(go())
    store.close()
    return len(events) / elapsed, len(events) / cpu


def read_back(path: Path) -> tuple[int, float, float]:
    """Every run's events read back through the store (`read_events`, validated): (events, per wall s, per CPU s)."""
    store = SqliteEventStore(path)
    run_ids = [run.run_id for run in store.list_runs(limit=100_000)]
    start, cpu = time.perf_counter(), time.process_time()
    n = sum(len(store.read_events(run_id)) for run_id in run_ids)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return n, n / elapsed, n / cpu


def replay_fixture(path: Path, n_events: int, per_run: int) -> int:
    """A store file holding `n_events` valid events (runs of `per_run`), written with plain inserts."""
    ids = DeterministicIdGenerator()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.close()
    SqliteEventStore(path).close()  # create the schema
    conn = sqlite3.connect(path, isolation_level=None)
    total = 0
    run_no = 1
    conn.execute("BEGIN")
    while total < n_events:
        events = long_run(min(per_run, n_events - total + 1), ids, run_no)
        events = events[: n_events - total]
        conn.executemany(INSERT, [event_row(e) for e in events])
        total += len(events)
        run_no += 1
    conn.execute("COMMIT")
    conn.close()
    return total


AB_PARTS = ("plain", "batched", "recorder", "replay", "read")


def one_of_each(parts: list[str], appends: int, replay_events: int) -> dict[str, tuple[float, float]]:
    """One measurement of each part, in this process: {part: (events per wall s, per CPU s)}."""
    out: dict[str, tuple[float, float]] = {}
    events = long_run(appends, DeterministicIdGenerator(), 0xAAAA)
    with tempfile.TemporaryDirectory() as tmp:
        if "plain" in parts:
            out["plain"] = plain_inserts(Path(tmp) / "plain.db", [event_row(e) for e in events])
        if "batched" in parts:
            out["batched"] = store_batched_appends(Path(tmp) / "batched.db", events)
        if "recorder" in parts:
            out["recorder"] = recorder_batched_appends(Path(tmp) / "recorder.db", events)
        if "replay" in parts or "read" in parts:
            path = Path(tmp) / "replay.db"
            n = replay_fixture(path, replay_events, per_run=100)
            with SqliteEventStore(path) as store:
                store.rebuild_projections()  # the projections a sound store holds
            if "replay" in parts:
                with SqliteEventStore(path) as store:
                    start, cpu = time.perf_counter(), time.process_time()
                    store.rebuild_projections()
                    out["replay"] = (n / (time.perf_counter() - start), n / (time.process_time() - cpu))
            if "read" in parts:
                _, wall, cpu_rate = read_back(path)
                out["read"] = (wall, cpu_rate)
    return out


def ab(trees: list[str], parts: list[str], rounds: int, appends: int, replay_events: int) -> None:
    """Each part measured in a fresh process per source tree (first on PYTHONPATH), the trees alternating in order
    round by round: the machine's drift falls on every tree alike. Medians and bests per tree."""
    import json
    import subprocess

    here = str(Path(__file__).resolve())
    found: dict[str, dict[str, list[tuple[float, float]]]] = {tree: {} for tree in trees}
    print(f"load {os.getloadavg()[0]:.2f}, {rounds} rounds, parts {','.join(parts)}")
    for round_no in range(rounds):
        for tree in trees if round_no % 2 == 0 else trees[::-1]:
            env = {**os.environ, "PYTHONPATH": tree}
            cmd = [sys.executable, here, "--child", ",".join(parts), "--appends", str(appends)]
            cmd += ["--replay-events", str(replay_events)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            if not str(result.pop("module")).startswith(tree):
                raise SystemExit(f"{tree} was not imported: is it a src/ directory?")
            for part, figures in result.items():
                found[tree].setdefault(part, []).append(tuple(figures))
    for part in parts:
        print(part)
        for tree in trees:
            got = found[tree][part]
            wall, cpu = [w for w, _ in got], [c for _, c in got]
            print(
                f"  {tree}: wall median {statistics.median(wall):,.0f} best {max(wall):,.0f} | "
                f"per CPU-s median {statistics.median(cpu):,.0f} best {max(cpu):,.0f}"
            )
    print(f"load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--appends", type=int, default=10_400)
    parser.add_argument("--replay-events", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument(
        "--ab",
        nargs="+",
        metavar="SRC",
        help="compare source trees (each a src/ directory) in alternating fresh processes, --rounds each",
    )
    parser.add_argument("--parts", default=",".join(AB_PARTS), help=f"with --ab: of {','.join(AB_PARTS)}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.appends, args.replay_events = 1, 1_000, 10_000
    if args.child:
        import json

        import bearagent

        out: dict[str, object] = {"module": bearagent.__file__}
        out.update(one_of_each(args.child.split(","), args.appends, args.replay_events))
        print(json.dumps(out))
        return
    if args.ab:
        ab(args.ab, args.parts.split(","), args.rounds, args.appends, args.replay_events)
        return

    ids = DeterministicIdGenerator()
    events = long_run(args.appends, ids, 0xAAAA)
    rows = [event_row(e) for e in events]
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.1f}"
    )

    best_store = best_plain = best_store_cpu = best_plain_cpu = 0.0
    early: list[float] = []
    late: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            plain, plain_cpu = plain_inserts(Path(tmp) / f"plain{round_no}.db", rows)
            rate, rate_cpu, durations = store_appends(Path(tmp) / f"store{round_no}.db", events)
            best_plain, best_store = max(best_plain, plain), max(best_store, rate)
            best_plain_cpu, best_store_cpu = max(best_plain_cpu, plain_cpu), max(best_store_cpu, rate_cpu)
            early.append(statistics.median(durations[9:209]))
            if len(durations) >= 10_200:
                late.append(statistics.median(durations[9_999:10_199]))
            print(
                f"round {round_no + 1}: store {rate:,.0f} appends/s ({rate_cpu:,.0f} per CPU-s), plain sqlite3 "
                f"{plain:,.0f} inserts/s ({plain_cpu:,.0f} per CPU-s), wall ratio {plain / rate:.2f}x"
            )
        print(
            f"appends (wall clock): best store {best_store:,.0f}/s vs best plain {best_plain:,.0f}/s "
            f"-> plain is {best_plain / best_store:.2f}x faster"
        )
        print(
            f"appends (CPU time):   best store {best_store_cpu:,.0f}/s vs best plain {best_plain_cpu:,.0f}/s "
            f"-> plain is {best_plain_cpu / best_store_cpu:.2f}x faster"
        )
        if late:
            print(
                f"append CPU cost: #10..#209 median {min(early) * 1e6:.0f} us, #10,000..#10,199 median "
                f"{min(late) * 1e6:.0f} us (ratio {min(late) / min(early):.2f})"
            )

        best_batched = best_batched_cpu = 0.0
        for round_no in range(args.rounds):
            rate, rate_cpu = store_batched_appends(Path(tmp) / f"batched{round_no}.db", events)
            best_batched, best_batched_cpu = max(best_batched, rate), max(best_batched_cpu, rate_cpu)
            print(
                f"round {round_no + 1}: one step's events per append_many: {rate:,.0f} events/s ({rate_cpu:,.0f} per CPU-s)"
            )
        print(f"batched appends: best {best_batched:,.0f} events/s wall clock, {best_batched_cpu:,.0f} per CPU-s")
        best_rec = best_rec_cpu = 0.0
        for round_no in range(args.rounds):
            rate, rate_cpu = recorder_batched_appends(Path(tmp) / f"recorder{round_no}.db", events)
            best_rec, best_rec_cpu = max(best_rec, rate), max(best_rec_cpu, rate_cpu)
            print(
                f"round {round_no + 1}: runtime path (RunRecorder, async port): {rate:,.0f} events/s ({rate_cpu:,.0f} per CPU-s)"
            )
        print(f"runtime-path batched appends: best {best_rec:,.0f} events/s wall clock, {best_rec_cpu:,.0f} per CPU-s")

        path = Path(tmp) / "replay.db"
        n = replay_fixture(path, args.replay_events, per_run=100)
        best_replay = best_replay_cpu = 0.0
        for round_no in range(args.rounds):
            store = SqliteEventStore(path)
            start, cpu = time.perf_counter(), time.process_time()
            report = store.rebuild_projections()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            store.close()
            assert report.events == n, report
            best_replay, best_replay_cpu = max(best_replay, n / elapsed), max(best_replay_cpu, n / cpu)
            print(
                f"round {round_no + 1}: rebuilt {report.runs} runs / {report.activities} activities from "
                f"{n:,} events in {elapsed:.2f}s = {n / elapsed:,.0f} events/s ({n / cpu:,.0f} per CPU-s)"
            )
        print(f"replay: best {best_replay:,.0f} events/s wall clock, {best_replay_cpu:,.0f} events per CPU-s")
        best_read = best_read_cpu = 0.0
        for round_no in range(args.rounds):
            n_read, rate, rate_cpu = read_back(path)
            assert n_read == n, (n_read, n)
            best_read, best_read_cpu = max(best_read, rate), max(best_read_cpu, rate_cpu)
            print(
                f"round {round_no + 1}: read back {n_read:,} events: {rate:,.0f} events/s ({rate_cpu:,.0f} per CPU-s)"
            )
        print(f"read back: best {best_read:,.0f} events/s wall clock, {best_read_cpu:,.0f} events per CPU-s")


if __name__ == "__main__":
    main()

"""Benchmark of scale-out (issue 20). Run: `uv run python benchmarks/bench_scale.py [--quick]`.

Needs Debian's `postgresql` package (a throwaway cluster is started in a temporary directory, as the tests do).

1. Runs/s through the queue: an API-only `bearagent serve --workers 0` and 1, 2 and 4 `bearagent worker` processes
   (concurrency 4 each) on one PostgreSQL database, `--runs` runs over `--sessions` sessions against the scripted
   model with a 20 ms turn, timed from the first POST to the last run's end. The same with SQLite beside it.
2. Append throughput and replay speed of the two stores in the same run: runs of 50 steps (each step's events one
   `append_many`, as the loop writes them), then every run's log read back.
3. Commit-to-client latency of an event committed in one process and read by `follow_run` over another store
   handle: through LISTEN/NOTIFY on PostgreSQL, beside the same reader with the notices switched off (the poll).

4. What one run costs the database (issue 37), for the PostgreSQL fleets of part 1: transactions, rows inserted,
   updated and read, bytes the database grew, lifecycle notices (counted by a LISTEN on `bearagent_runs`), and the
   peak of client connections (sampled every 50 ms from `pg_stat_activity`), per run, at 1, 2 and 4 workers.

Worker CPU per run is printed twice: over the workers' whole lives (start-up included: about 1-1.5 s of imports and
connections per process, and the first run's imports and per-process caches) and, after a warm-up of one run per
session, from the first measured POST to the last run's end (what a run costs once the fleet is up, the figure that
should not grow with the number of workers). `--profile DIR` runs the PostgreSQL fleets' workers
under cProfile (their event loop thread's CPU time) and writes `worker-<W>of<N>.prof` into DIR.

Each figure is the median of `--rounds` rounds (the machine is shared and noisy); print them as a markdown table.

`--pooler` runs only part 1's PostgreSQL fleets, at `--workers`, in alternating rounds: on the database directly,
through a PgBouncer in transaction mode (Debian's `pgbouncer`; `store.pooler: transaction`, the workers polling),
and through it with a direct connection for LISTEN; with PgBouncer's own CPU per run and the peak of the cluster's
client connections (PgBouncer's server connections, when it is in the way).

`--ab SRC` runs only part 1's PostgreSQL fleets, at `--workers` (default 1,4), in alternating rounds between the
package in SRC (another tree's `src/`, first on the processes' PYTHONPATH: e.g. `git archive REV src | tar -x -C
/tmp/before`) and this checkout's, with the transactions per run of each round. `--statements` (with or without
`--ab`) preloads `pg_stat_statements` in the cluster and prints, for each PostgreSQL fleet, the statements its
measured runs made, per run (calls and rows), the most called first: which reads and claims a run costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from tests.support import postgres_cluster
from tests.support.events import EventFactory
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, RunId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.run_events import ToolCallCompletedV2, ToolCallRequestedV2, ToolCallStartedV1
from bearagent.domain.tools import ToolResult
from bearagent.ports import RunStorage
from bearagent.runtime import streaming
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.postgres import PostgresRunStorage
from bearagent.store.sqlite import SqliteEventStore

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
TOKEN = "bench-scale-token"


SOURCE: dict[str, str] = {}
"""`{"src": DIR}` while a fleet runs another tree's package (`--ab`)."""


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "BEARAGENT_SERVE_TOKEN": TOKEN,
        **({"PYTHONPATH": SOURCE["src"]} if "src" in SOURCE else {}),
        **extra,
    }


_DB_STATS = (
    "SELECT xact_commit + xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned + tup_fetched,"
    " pg_database_size(datname) FROM pg_stat_database WHERE datname = current_database()"
)
DB_COST = ("transactions", "rows inserted", "rows updated", "rows deleted", "rows read", "bytes")


def _db_stats(dsn: str) -> list[float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(_DB_STATS).fetchone()
        assert row is not None
        return [float(v) for v in row]


STATEMENTS: dict[str, bool] = {}
"""`{"on": True}` with `--statements`: `DbWatch` resets and reads `pg_stat_statements`."""
_TOP_STATEMENTS = (
    "SELECT s.calls, s.rows, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 140) FROM pg_stat_statements AS s"
    " JOIN pg_database AS d ON d.oid = s.dbid WHERE d.datname = current_database() ORDER BY s.calls DESC LIMIT 20"
)


def _preload_statements(running: postgres_cluster.Cluster) -> None:
    """Restart the cluster with `pg_stat_statements` loaded (Debian's postgresql package ships it)."""
    with psycopg.connect(running.dsn(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    pg_ctl = str(running.bin_dir / "pg_ctl")
    restart = [pg_ctl, "-D", str(running.data_dir), "-l", str(running.root / "server.log"), "-w", "restart"]
    subprocess.run(
        running._command(*restart),  # pyright: ignore[reportPrivateUsage]
        check=True,
        stdout=subprocess.DEVNULL,  # the server keeps an inherited pipe open
        stderr=subprocess.DEVNULL,
        cwd=running.root,
    )


class DbWatch:
    """While a fleet runs: the peak of client connections to the database and the lifecycle notices sent."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        if STATEMENTS:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                conn.execute("SELECT pg_stat_statements_reset()")
        self.peak = 0
        self.notices = 0
        self.before = _db_stats(dsn)
        self.statements: list[tuple[int, int, str]] = []
        """(calls, rows, statement) of the measured runs, with `--statements`"""
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._sample), threading.Thread(target=self._listen)]
        for thread in self._threads:
            thread.start()

    def _sample(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self._stop.wait(0.05):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                    " AND datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) - 1 if row else 0)  # less the LISTEN of this watch

    def _listen(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("LISTEN bearagent_runs")
            while not self._stop.is_set():
                self.notices += sum(1 for _ in conn.notifies(timeout=0.2))

    def stop(self) -> list[float]:
        """Per-round totals of DB_COST, then the lifecycle notices and the peak connections."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        time.sleep(1.2)  # the stopped processes' statistics reach pg_stat_database
        after = _db_stats(self.dsn)
        if STATEMENTS:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                self.statements = [(int(c), int(r), str(q)) for c, r, q in conn.execute(_TOP_STATEMENTS).fetchall()]
        return [a - b for a, b in zip(after, self.before, strict=True)] + [float(self.notices), float(self.peak)]


@dataclass(frozen=True, slots=True)
class Fleet:
    """One fleet round's figures."""

    rate: float
    """runs/s, from the first POST to the last run's end"""
    worker_ms: float
    """worker CPU ms per run over the workers' whole lives (start-up, the idle second, the runs, the stop)"""
    worker_busy_ms: float
    """worker CPU ms per measured run, from after the warm-up (a run per session) to the last run's end"""
    server_ms: float
    """server CPU ms per run, whole life"""
    busy_parts_ms: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """`worker_busy_ms` by where it went: the workers' main threads (the event loop), their other threads (the
    store's I/O thread, executors), and of both the system time (syscalls, page faults)"""


_PROFILE = (
    "import cProfile, runpy, sys, time\n"
    "p = cProfile.Profile(time.thread_time)\n"  # CPU of the event loop's thread, not wall time on a loaded machine
    "sys.argv = ['bearagent', *sys.argv[2:]]\n"
    "p.enable()\n"
    "try:\n    runpy.run_module('bearagent', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "finally:\n    p.disable()\n    p.dump_stats(OUT)\n"
)


def _fleet_round(
    dsn: str | None,
    workers: int,
    runs: int,
    sessions: int,
    costs: list[list[float]] | None = None,
    profile: Path | None = None,
    *,
    store_dsn: str | None = None,
    store_options: str = "",
    store_env: dict[str, str] | None = None,
) -> Fleet:
    """One fleet: an API-only server and `workers` worker processes. With `costs`, appends what the round cost the
    database (`DbWatch`, on `dsn`). With `profile` (a directory), every worker runs under cProfile (its main thread's
    CPU time) and writes `worker-<W>of<N>.prof` there. `store_dsn` (default `dsn`), `store_options` (more keys of the
    `store:` mapping, each with its leading comma) and `store_env`: how the processes reach the database (`--pooler`)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        per_session = -(-runs // sessions) + 1  # and the warm-up's
        script = "turns:\n" + "".join(f'  - text: "answer {n}"\n    delay_ms: 20\n' for n in range(per_session))
        root = scripted_workspace(base / "ws", script, agents={"main": agent_md("Main.", mode="primary")})
        home = base / "home"
        (home / "bearagent").mkdir(parents=True)
        config = f"workspaces:\n  - {{id: ws, path: {root}}}\nlimits: {{max_active_runs_per_caller: 100000}}\n"
        extra: dict[str, str] = {}
        if dsn is not None:
            extra["BEARAGENT_PG_DSN"] = store_dsn or dsn
            extra.update(store_env or {})
            config += "store: {backend: postgres, dsn: '${BEARAGENT_PG_DSN}'" + store_options + "}\n"
        (base / "server.yaml").write_text(config)
        env = _env(home, extra)
        server = subprocess.Popen(
            [BEARAGENT, "serve", "--port", "0", "--workers", "0", "--config", str(base / "server.yaml")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        url = _await_line(server, r"on (http://127\.0\.0\.1:\d+)")
        worker_argv = ["worker", "--config", str(base / "server.yaml"), "--concurrency", "4", "--poll", "0.2"]

        def command(n: int) -> list[str]:
            if profile is None:
                return [BEARAGENT]
            out = profile / f"worker-{n + 1}of{workers}.prof"
            return [sys.executable, "-c", f"OUT = {str(out)!r}\n{_PROFILE}", "bearagent"]

        procs = [
            subprocess.Popen(
                [*command(n), *worker_argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
            for n in range(workers)
        ]
        watch: DbWatch | None = None
        try:
            for proc in procs:
                _await_line(proc, r"executing queued runs")
            for proc in procs:  # the rest of its stderr (warnings) must not fill the pipe and block it
                threading.Thread(target=_drain, args=(proc,), daemon=True).start()
            with httpx.Client(base_url=url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
                ids = [c.post("/v1/workspaces/ws/sessions", json={}).json()["id"] for _ in range(sessions)]
                # warm-up: a run per session, so that every worker imported its run path and built what it keeps
                # per process (the runtime, providers) before the measured runs
                warm = [c.post(f"/v1/sessions/{i}/runs", json={"prompt": "warm up"}).json()["run_id"] for i in ids]
                _all_idle(c)
                for run_id in warm:
                    assert c.get(f"/v1/runs/{run_id}").json()["status"] == "succeeded", run_id
                time.sleep(0.5)  # the workers' last scans are done: they are idle
                watch = DbWatch(dsn) if dsn is not None and costs is not None else None  # the measured runs only
                ready_cpu = sum(_proc_cpu_s(proc.pid) for proc in procs)
                ready_parts = [_thread_cpu_s(proc.pid) for proc in procs]
                started = time.monotonic()
                sent = [
                    c.post(f"/v1/sessions/{ids[n % sessions]}/runs", json={"prompt": f"q{n}"}).json()["run_id"]
                    for n in range(runs)
                ]
                _all_idle(c)
                rate = runs / (time.monotonic() - started)
                busy_cpu = sum(_proc_cpu_s(proc.pid) for proc in procs) - ready_cpu
                ends = [_thread_cpu_s(proc.pid) for proc in procs]
                main, other, system = (
                    sum(end[i] - ready[i] for ready, end in zip(ready_parts, ends, strict=True)) / runs * 1000
                    for i in range(3)
                )
                for run_id in sent:
                    assert c.get(f"/v1/runs/{run_id}").json()["status"] == "succeeded", run_id
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            server.terminate()
        cpu_workers = sum(_cpu_s(proc) for proc in procs)
        cpu_server = _cpu_s(server)
        if watch is not None and costs is not None:
            costs.append(watch.stop())
            if STATEMENTS:
                print(f"\nstatements of {runs} measured runs, {workers} worker(s), per run (calls, rows):\n")
                for calls, rows, statement in watch.statements:
                    print(f"    {calls / runs:6.2f} {rows / runs:7.1f}  {statement}")
                print()
        total = runs + sessions  # the warm-up's too
        return Fleet(
            rate, cpu_workers / total * 1000, busy_cpu / runs * 1000, cpu_server / total * 1000, (main, other, system)
        )


def _all_idle(c: httpx.Client) -> None:
    while any(  # one listing per poll: the client must not be the server's main load
        s["status"] != "active" for s in c.get("/v1/workspaces/ws/sessions").json()["sessions"]
    ):
        time.sleep(0.05)


def _await_line(proc: subprocess.Popen[str], pattern: str) -> str:
    """The first group (or the whole match) of the first stderr line of `proc` that matches `pattern`."""
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError(f"{proc.args!r} exited before saying {pattern!r}")
        match = re.search(pattern, line)
        if match:
            return match.group(1) if match.groups() else match.group(0)


def _drain(proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    for _ in proc.stderr:
        pass


def _stat_s(stat: Path) -> tuple[float, float]:
    """User and system CPU seconds from a /proc `stat` file (a process's, or one thread's under `task/`)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a live process (all its threads), from /proc."""
    return sum(_stat_s(Path(f"/proc/{pid}/stat")))


def _thread_cpu_s(pid: int) -> tuple[float, float, float]:
    """CPU seconds of a live process: its main thread's, its other threads' (those alive now: a thread that ended
    meanwhile is missing), and the system time of all of them, from /proc/PID/task."""
    main = other = system = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            user_s, sys_s = _stat_s(task / "stat")
        except OSError:
            continue  # it ended while being read
        if task.name == str(pid):
            main += user_s + sys_s
        else:
            other += user_s + sys_s
        system += sys_s
    return main, other, system


def _cpu_s(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> float:
    """User + system CPU seconds the process used in its life (reaped here)."""
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


async def _append_and_replay(storage: RunStorage, runs: int, steps: int) -> tuple[float, float]:
    """(events appended/s, events replayed/s) with step-sized batches."""
    writer = RunWriter(storage)
    total = 0
    run_ids: list[RunId] = []
    started = time.perf_counter()
    for _ in range(runs):
        f = EventFactory(ids=Uuid4IdGenerator())
        await writer.append_many([f.run_created(), f.run_started()])
        total += 2
        for _ in range(steps):
            batch = [*f.model_call(), *f.tool_call()]
            await writer.append_many(batch)
            total += len(batch)
        run_ids.append(f.run_id)
    appended = total / (time.perf_counter() - started)
    started = time.perf_counter()
    read = 0
    for run_id in run_ids:
        read += len(await storage.fetch_events(run_id))
    return appended, read / (time.perf_counter() - started)


async def _latency(writing: RunStorage, reading: RunStorage, events: int, *, notices: bool) -> list[float]:
    """Seconds from a commit (when `append_many` returned in the writer) to `follow_run` over the other handle
    yielding its `tool_result` (a notice can beat the writer's own return: that counts as 0)."""
    f = EventFactory(ids=Uuid4IdGenerator())
    writer = RunWriter(writing)
    await writer.append_many([f.run_created(BudgetLimits(max_tool_calls=1_000_000)), f.run_started()])
    received: dict[int, float] = {}
    committed: dict[int, float] = {}

    async def read() -> None:
        source = reading if notices else cast(RunStorage, _PollOnly(reading))
        async for item in streaming.follow_run(source, None, f.run_id, after_seq=2):
            seq = getattr(item, "seq", None)
            if isinstance(seq, int) and getattr(item, "type", "") == "tool_result":
                received[seq] = time.perf_counter()
                if len(received) >= events:
                    return

    reader = asyncio.create_task(read())
    if notices and isinstance(reading, PostgresRunStorage):
        await reading.commits.wait_listening(run_id=str(f.run_id))  # the follower listens on the run's channel
    await asyncio.sleep(0.3)
    for _ in range(events):
        projection = await writer.append_many(_tool_call(f))  # one commit: a call's requested, started, completed
        committed[projection.last_sequence] = time.perf_counter()
        await asyncio.sleep(0.02)
    await asyncio.wait_for(reader, 60)
    return [max(0.0, received[seq] - at) for seq, at in committed.items()]


class _PollOnly:
    """The same reader without its commit notices: what `follow_run` does with a store that sends none."""

    def __init__(self, storage: RunStorage) -> None:
        self._storage = storage

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        return await self._storage.fetch_events(run_id, after_sequence, limit)


def _tool_call(f: EventFactory) -> list[Event]:
    """A Read call's three facts as the loop records them (v2: what the stream shows as a `tool_result`)."""
    activity, call = f.ids.new(ActivityId), f.ids.new(ToolCallId)
    result = ToolResult(tool_call_id=call, tool_name="Read", status="succeeded", content="x")
    return [
        f.event(ToolCallRequestedV2(activity_id=activity, tool_call_id=call, tool_name="Read", arguments={})),
        f.event(ToolCallStartedV1(activity_id=activity, tool_call_id=call)),
        f.event(ToolCallCompletedV2(activity_id=activity, tool_call_id=call, result=result)),
    ]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs and rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--profile", help="a directory: every PostgreSQL fleet's workers run under cProfile there")
    parser.add_argument("--ab", metavar="SRC", help="part 1 on PostgreSQL only: SRC's package against this one's")
    parser.add_argument("--workers", default="1,4", help="with --ab: the numbers of workers (default 1,4)")
    parser.add_argument("--statements", action="store_true", help="the statements a run makes (pg_stat_statements)")
    parser.add_argument(
        "--pooler", action="store_true", help="part 1 on PostgreSQL only: direct, and through PgBouncer (transaction)"
    )
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    runs = 40 if args.quick else args.runs
    postgres_cluster.require = lambda: None  # type: ignore[assignment]
    if postgres_cluster.unavailable():
        raise SystemExit(postgres_cluster.unavailable())
    if args.statements:
        _preload_statements(postgres_cluster.cluster())
        STATEMENTS["on"] = True
    if args.ab:
        _ab(Path(args.ab), [int(w) for w in args.workers.split(",")], rounds, runs, args.sessions)
        return
    if args.pooler:
        _pooler([int(w) for w in args.workers.split(",")], rounds, runs, args.sessions)
        return
    print(f"# bench_scale on {platform.node()} ({os.cpu_count()} cores), {datetime.now(UTC).isoformat()[:16]}Z")
    print(f"python {platform.python_version()}, {rounds} round(s), median\n")

    print(f"## 1. runs/s through the queue ({runs} runs over {args.sessions} sessions, 20 ms per model turn)\n")
    print(
        "| workers | store | runs/s | worker CPU ms/run (whole life) | worker CPU ms/run (runs only) | server CPU ms/run |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    db_costs: dict[int, list[list[float]]] = {}
    parts: dict[tuple[int, str], list[float]] = {}
    for workers in (1, 2, 4):
        for label, dsn_of in (("PostgreSQL", postgres_cluster.new_database), ("SQLite", lambda: None)):
            costs = db_costs.setdefault(workers, []) if label == "PostgreSQL" else None
            profile = Path(args.profile) if args.profile and label == "PostgreSQL" else None
            results = [_fleet_round(dsn_of(), workers, runs, args.sessions, costs, profile) for _ in range(rounds)]
            rate, life, busy, server = (
                statistics.median(getattr(r, name) for r in results)
                for name in ("rate", "worker_ms", "worker_busy_ms", "server_ms")
            )
            print(f"| {workers} | {label} | {rate:.1f} | {life:.0f} | {busy:.0f} | {server:.0f} |")
            parts[(workers, label)] = [statistics.median(r.busy_parts_ms[i] for r in results) for i in range(3)]

    print("\nWorker CPU ms per measured run, by thread (medians; threads that ended meanwhile are not counted):\n")
    print("| workers | store | main thread (event loop) | other threads | of both: system time |")
    print("|---:|---|---:|---:|---:|")
    for (workers, label), (main, other, system) in parts.items():
        print(f"| {workers} | {label} | {main:.1f} | {other:.1f} | {system:.1f} |")

    print(f"\n## 4. what one run costs PostgreSQL (part 1's fleets; per run, median of rounds; {runs} runs)\n")
    print("| workers | " + " | ".join(DB_COST) + " | lifecycle notices | peak client connections |")
    print("|---:|" + "---:|" * (len(DB_COST) + 2))
    for workers, costs in db_costs.items():
        cells = [statistics.median(c[i] for c in costs) for i in range(len(DB_COST) + 2)]
        per_run = [f"{v / runs:,.1f}" for v in cells[: len(DB_COST) + 1]]
        print(f"| {workers} | " + " | ".join(per_run) + f" | {cells[-1]:.0f} (whole fleet) |")

    print("\n## 2. append and replay (runs of 50 steps, each step's events one append_many)\n")
    print("| store | appends (events/s) | replay (events/s) |")
    print("|---|---:|---:|")
    n_runs = 20 if args.quick else 60

    def measure(make: Callable[[], SqliteEventStore | PostgresRunStorage]) -> tuple[float, float]:
        results: list[tuple[float, float]] = []
        for _ in range(rounds):
            storage = make()
            try:
                results.append(asyncio.run(_append_and_replay(storage, n_runs, 50)))
            finally:
                storage.close()
        return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)

    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(1000))
        lite_a, lite_r = measure(lambda: SqliteEventStore(Path(tmp) / f"s{next(counter)}.db"))
    pg_a, pg_r = measure(lambda: PostgresRunStorage(postgres_cluster.new_database()))
    print(f"| SQLite | {lite_a:,.0f} | {lite_r:,.0f} |")
    print(f"| PostgreSQL | {pg_a:,.0f} | {pg_r:,.0f} |")

    print("\n## 3. commit-to-client latency, another process's handle (follow_run)\n")
    print("| reader | p50 ms | p99 ms | events |")
    print("|---|---:|---:|---:|")
    n_events = 100 if args.quick else 400
    for notices in (True, False):
        dsn = postgres_cluster.new_database()
        writing, reading = PostgresRunStorage(dsn), PostgresRunStorage(dsn)
        try:
            seen = asyncio.run(_latency(writing, reading, n_events, notices=notices))
        finally:
            writing.close()
            reading.close()
        label = "LISTEN/NOTIFY" if notices else f"poll only ({streaming.POLL_INTERVAL_S * 1000:.0f} ms)"
        print(f"| {label} | {_pct(seen, 0.5) * 1000:.1f} | {_pct(seen, 0.99) * 1000:.1f} | {len(seen)} |")
    postgres_cluster.stop_cluster()


def _ab(before: Path, workers: list[int], rounds: int, runs: int, sessions: int) -> None:
    """Part 1 on PostgreSQL, `before`'s package against this checkout's, in alternating rounds."""
    here = Path(__file__).resolve().parents[1] / "src"
    print(f"## PostgreSQL fleets, {runs} runs over {sessions} sessions, before = {before}, after = {here}\n")
    print(
        "| round | workers | tree | runs/s | worker CPU ms/run (runs only) | worker CPU ms/run (whole life) |", end=""
    )
    print(" server CPU ms/run | transactions/run | load |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    rows: dict[tuple[int, str], list[Fleet]] = {}
    per_run_tx: dict[tuple[int, str], list[float]] = {}
    for n in range(rounds):
        for count in workers:
            for label, src in (("before", before), ("after", here)):
                SOURCE["src"] = str(src)
                costs: list[list[float]] = []
                fleet = _fleet_round(postgres_cluster.new_database(), count, runs, sessions, costs)
                rows.setdefault((count, label), []).append(fleet)
                per_run_tx.setdefault((count, label), []).append(costs[0][0] / runs)
                print(
                    f"| {n + 1} | {count} | {label} | {fleet.rate:.1f} | {fleet.worker_busy_ms:.0f} | "
                    f"{fleet.worker_ms:.0f} | {fleet.server_ms:.0f} | {costs[0][0] / runs:.1f} | "
                    f"{os.getloadavg()[0]:.1f} |"
                )
    SOURCE.clear()
    print("\nmedians:\n")
    print(
        "| workers | tree | runs/s | worker CPU ms/run (runs only) | of it: event loop / other threads | transactions/run |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for (count, label), fleets in rows.items():
        loop, other = (statistics.median(f.busy_parts_ms[i] for f in fleets) for i in range(2))
        print(
            f"| {count} | {label} | {statistics.median(f.rate for f in fleets):.1f} | "
            f"{statistics.median(f.worker_busy_ms for f in fleets):.0f} | {loop:.1f} / {other:.1f} | "
            f"{statistics.median(per_run_tx[count, label]):.1f} |"
        )
    postgres_cluster.stop_cluster()


POOLER_MODES = ("direct", "pgbouncer", "pgbouncer + direct LISTEN")
POOLER_SIZE = 10


def _pooler(workers: list[int], rounds: int, runs: int, sessions: int) -> None:
    """Part 1 on PostgreSQL, in alternating rounds: the processes on the database directly, through a PgBouncer in
    transaction mode (`POOLER_SIZE` server connections; `store.pooler: transaction`, no direct connection: the
    workers poll every 0.2 s), and the same with a direct connection for LISTEN (`store.listen_dsn_env`)."""
    from tests.support import pgbouncer

    if (why := pgbouncer.unavailable()) is not None:
        raise SystemExit(why)
    cluster = postgres_cluster.cluster()
    print(f"## PostgreSQL fleets, {runs} runs over {sessions} sessions: directly and through PgBouncer\n")
    print("| round | workers | reached | runs/s | worker CPU ms/run (runs only) | server CPU ms/run |", end="")
    print(" PgBouncer CPU ms/run | transactions/run | peak connections to PostgreSQL | load |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    rows: dict[tuple[int, str], list[tuple[Fleet, float, float]]] = {}
    made = 0
    for n in range(rounds):
        for count in workers:
            for mode in POOLER_MODES:
                made += 1
                direct = postgres_cluster.database_in(cluster, f"pooler_{os.getpid()}_{made}")
                costs: list[list[float]] = []
                pooler_ms = 0.0
                if mode == "direct":
                    fleet = _fleet_round(direct, count, runs, sessions, costs)
                else:
                    name = direct.rsplit("dbname=", 1)[1]
                    with pgbouncer.transaction_pooler(cluster, name, pool_size=POOLER_SIZE) as pooler:
                        before = _proc_cpu_s(pooler.pid)
                        listen = mode.endswith("LISTEN")
                        fleet = _fleet_round(
                            direct,
                            count,
                            runs,
                            sessions,
                            costs,
                            store_dsn=pooler.dsn,
                            store_options=", pooler: transaction" + (", listen_dsn_env: PG_DIRECT" if listen else ""),
                            store_env={"PG_DIRECT": direct} if listen else {},
                        )
                        pooler_ms = (_proc_cpu_s(pooler.pid) - before) / (runs + sessions) * 1000
                tx, peak = costs[0][0] / runs, costs[0][-1]
                rows.setdefault((count, mode), []).append((fleet, pooler_ms, tx))
                print(
                    f"| {n + 1} | {count} | {mode} | {fleet.rate:.1f} | {fleet.worker_busy_ms:.0f} | "
                    f"{fleet.server_ms:.0f} | {pooler_ms:.1f} | {tx:.1f} | {peak:.0f} | {os.getloadavg()[0]:.1f} |"
                )
    print("\nmedians:\n")
    print("| workers | reached | runs/s | worker CPU ms/run (runs only) | server CPU ms/run | PgBouncer CPU ms/run |")
    print("|---:|---|---:|---:|---:|---:|")
    for (count, mode), results in rows.items():
        print(
            f"| {count} | {mode} | {statistics.median(f.rate for f, _, _ in results):.1f} | "
            f"{statistics.median(f.worker_busy_ms for f, _, _ in results):.0f} | "
            f"{statistics.median(f.server_ms for f, _, _ in results):.0f} | "
            f"{statistics.median(ms for _, ms, _ in results):.1f} |"
        )
    postgres_cluster.stop_cluster()


if __name__ == "__main__":
    main()

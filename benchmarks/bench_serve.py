"""Load on `bearagent serve` over loopback (issue 19): N concurrent SSE clients following M concurrent runs.

A real server process, a scripted model answering each turn after 50 ms. M sessions get a run each at once; N clients
(N/M per run) follow the runs' SSE streams from the moment the run is accepted. So that the clients are connected
before the runs commit anything (else the figure is mostly how long 200 connections take to open), each session's
measured run is queued behind a first run whose model takes `--gate-ms` (2.5 s) to answer: the 50 measured runs then
start together, with their 200 followers connected (`--gate-ms 0`: the clients connect after the run started, as the
first version of this benchmark did). Measured: delivery latency of every
committed event (the stored event's `occurred_at` to the client's receipt, same clock), split into events committed
after the client's stream was open ("live": what the server's fan-out costs) and before it (caught up from the log:
that includes the client's own connection time); runs/s (first POST to the last terminal event); and no lost events:
every client must receive the same id sequence as a replay of the finished run, seqs non-decreasing, ending with the
terminal event. Baseline in the same run: one client following one run alone on the same server (5 rounds).

The clients run in a process of their own (`--role clients`, started by this script), so what they cost is measured
apart: the CPU seconds of the client process and of the server process (from /proc) during the load round are
printed beside the latencies (the server's up to the moment every stream ended: the check of each stream against
its run's replay, which the server answers afterwards, is not counted). `--profile FILE` runs the server under
cProfile and writes its stats to FILE (the event loop's thread: the store's SQLite threads are not in it).

Run: `uv run python benchmarks/bench_serve.py [--clients 200] [--runs 50] [--quick] [--profile serve.prof]
[--server-src DIR]` (`--server-src`: the server runs the package of another tree's `src/`, for a before/after in one
sitting; the clients are this checkout's).
Issue 37's load: `--clients 1000 --runs 1000 --steps 5 --model-ms 200 --gate-ms 20000` (1,000 sessions, each a
5-turn run, 1,000 SSE clients); the throughput is printed beside its ideal (the model's time only: runs x steps x
model-ms spread over the server's concurrency). "Commit-to-client" is the stored event's `occurred_at` (stamped
just before its commit) to the client's receipt: it slightly overstates the commit-to-client time, never understates.

`--stalls` gives the server process a `sitecustomize` (on its `PYTHONPATH` only) that times every event-loop
callback and every garbage collection, and prints after the round what stopped the loop: the collections by
generation (count, total, longest) and the callbacks of 20 ms or more, by what ran (a task's coroutine, and the
innermost one it awaits when the callback ended). Its own cost (a timer around every callback) is in the round's
figures.

`--sessions N [--active K]` (issue 37) measures memory instead: one server, its resident memory (VmRSS) once up
(the baseline), after N sessions are created (per idle session), and at its peak while K of them (default 100)
each run at once against a scripted model holding its turn 3 s (per active run, beside the idle figure); then every
run must succeed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server.test_http_api import TOKEN
from tests.support.run_ws import agent_md, scripted_workspace

Frame = tuple[str, str, int | None, float]
"""(id, type, seq, receipt wall time) of one committed frame."""


# ---- the clients (a process of their own) -------------------------------------------------------------------------


async def follow(client: httpx.AsyncClient, run_id: str) -> tuple[float, list[Frame]]:
    """When the stream was open (headers received), and every committed frame of the run's SSE stream.

    A bare HTTP/1.1 reader on its own connection (asyncio streams; chunked transfer encoding; `id:`/`event:`/`data:`
    lines), not httpx + httpx-sse: 200 of those cost the client process more CPU than the server spends on the
    streams, and a frame waiting in the client's event loop counts as the server's latency."""
    url = client.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    request = (
        f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nhost: {url.host}:{url.port}\r\n"
        f"authorization: {client.headers['authorization']}\r\naccept: text/event-stream\r\n\r\n"
    )
    writer.write(request.encode())
    got: list[Frame] = []
    try:
        status = await reader.readline()
        assert b" 200 " in status, status
        while (await reader.readline()) not in (b"\r\n", b""):
            pass  # headers (uvicorn streams the body with chunked transfer encoding)
        opened = time.time()
        buffer = b""
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                break
            buffer += await reader.readexactly(size + 2)
            buffer = buffer[:-2]  # the CRLF after the chunk
            received = time.time()
            *frames, buffer = buffer.split(b"\n\n")
            for raw in frames:
                fields = dict(line.split(b": ", 1) for line in raw.split(b"\n") if b": " in line)
                kind = fields.get(b"event", b"").decode()
                if not kind or kind == "token":
                    continue  # a keep-alive comment; tokens are live only, with no id of their own
                seq = json.loads(fields[b"data"]).get("seq")
                got.append((fields.get(b"id", b"").decode(), kind, seq, received))
    finally:
        writer.close()
    return opened, got


async def occurred(client: httpx.AsyncClient, run_id: str) -> tuple[dict[int, float], float]:
    """When each stored event of the run happened (by sequence), and when the run started executing."""
    page = (await client.get(f"/v1/runs/{run_id}/events")).json()
    at = {e["sequence"]: datetime.fromisoformat(e["occurred_at"]).timestamp() for e in page["events"]}
    started = [at[e["sequence"]] for e in page["events"] if e["event_type"] == "RunStarted"]
    return at, started[0]


def _p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(int(len(ordered) * q) - 1, 0)] if len(ordered) > 1 else ordered[0]


async def loop_lag(out: list[float], every_s: float = 0.005) -> None:
    """How late the client's own event loop wakes a 5 ms sleep (ms): a frame that arrived meanwhile waited as long
    in the client before it was read, which the latency counts against the server."""
    while True:
        start = time.perf_counter()
        await asyncio.sleep(every_s)
        out.append((time.perf_counter() - start - every_s) * 1000)


async def one_round(
    client: httpx.AsyncClient, runs: int, clients: int, *, gate: bool, ran: Callable[[], None] = lambda: None
) -> dict[str, float | int | str]:
    """Create the sessions, send their runs and follow them; `ran()` is called once every stream ended, before the
    streams are checked against each run's replay (so the server CPU the parent counts leaves the check out)."""
    # at most 64 requests in flight (1,000 at once were connections the loaded server reset); the streams are not
    # bounded: every client must be connected when its run commits
    gate_requests = asyncio.Semaphore(64)

    async def post(url: str, body: dict[str, str]) -> httpx.Response:
        async with gate_requests:
            return (await client.post(url, json=body)).raise_for_status()

    sessions = await asyncio.gather(*(post("/v1/workspaces/bench/sessions", {}) for _ in range(runs)))
    per_run = max(clients // runs, 1)
    cpu0, t0, t0_wall = time.process_time(), time.perf_counter(), time.time()

    async def run_and_follow(session: str) -> tuple[str, list[tuple[float, list[Frame]]]]:
        if gate:  # the session's first run holds the measured one in the session's queue (see the module docstring)
            await post(f"/v1/sessions/{session}/runs", {"prompt": "gate"})
        accepted = await post(f"/v1/sessions/{session}/runs", {"prompt": "hi"})
        accepted_at.append(time.time())
        run_id = accepted.json()["run_id"]
        return run_id, list(await asyncio.gather(*(follow(client, run_id) for _ in range(per_run))))

    accepted_at: list[float] = []
    lags: list[float] = []
    lagging = asyncio.ensure_future(loop_lag(lags))
    results = await asyncio.gather(*(run_and_follow(s.json()["id"]) for s in sessions))
    lagging.cancel()
    elapsed, client_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ran()
    live: list[float] = []
    caught_up: list[float] = []
    timed: list[tuple[float, float, str]] = []  # (committed at, latency ms, frame type) of every delivery
    lost = 0
    first_start, last_end = float("inf"), 0.0
    for run_id, streams in results:
        times, started = await occurred(client, run_id)
        first_start = min(first_start, started)
        replay = [f[:3] for f in (await follow(client, run_id))[1]]
        for opened, frames in streams:
            seqs = [f[2] or 0 for f in frames]
            ok = [f[:3] for f in frames] == replay and seqs == sorted(seqs) and frames[-1][1] in {"run.succeeded"}
            lost += 0 if ok else 1
            last_end = max(last_end, frames[-1][3])
            for _, kind, seq, received in frames:
                if seq in times:
                    latency = (received - times[seq]) * 1000
                    (live if times[seq] >= opened else caught_up).append(latency)
                    timed.append((times[seq], latency, kind))
    every = live + caught_up
    # the tail, split: commits made while runs were still being sent (the burst of POSTs and stream connections)
    # and after the last was accepted; and which frames the slowest 1% were
    burst_end = max(accepted_at, default=0.0)
    during = [t[1] for t in timed if t[0] <= burst_end]
    after = [t[1] for t in timed if t[0] > burst_end]
    slowest = sorted(timed, key=lambda t: t[1])[-max(len(timed) // 100, 1) :]
    kinds: dict[str, int] = {}
    for _, _, kind in slowest:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "p50": statistics.median(every),
        "p99": _p(every, 0.99),
        "live_p50": statistics.median(live) if live else float("nan"),
        "live_p99": _p(live, 0.99),
        "live": len(live),
        "caught_up_p99": _p(caught_up, 0.99),
        "caught_up": len(caught_up),
        "events": len(every),
        "runs_per_s": runs / (last_end - first_start),
        "elapsed_s": elapsed,
        "client_cpu_s": client_cpu,
        "client_lag_p99": _p(lags, 0.99),
        "client_lag_max": max(lags, default=float("nan")),
        "streams": sum(len(s) for _, s in results),
        "bad_streams": lost,
        "burst_p99": _p(during, 0.99),
        "burst": len(during),
        "after_p99": _p(after, 0.99),
        "after": len(after),
        "burst_s": burst_end - t0_wall,
        "slowest_kinds": json.dumps(dict(sorted(kinds.items(), key=lambda kv: -kv[1]))),
    }


async def clients_role(base: str, runs: int, clients: int, *, gate: bool) -> None:
    """Run the baseline and the load round against `base`; one JSON line per phase on stdout, waiting for a line on
    stdin before the load round (so the parent can read the server's CPU counters around it)."""
    # idle connections are dropped after 2 s, before the server's 5 s keep-alive closes them: with both at 5 s (httpx's
    # default) a POST could go out on a connection the server was closing, and fail with a ReadError (it did, once
    # in a few 300-run rounds, more often with the server paused by a sampling profiler)
    limits = httpx.Limits(max_connections=clients + runs + 50, keepalive_expiry=2.0)
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) as client:
        base_rounds = [await one_round(client, 1, 1, gate=gate) for _ in range(5 if not gate else 3)]
        print(json.dumps({"phase": "baseline", "rounds": base_rounds}), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    # a new client: the baseline's pooled connections sat idle past the server's keep-alive and were closed
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) as client:
        ran = lambda: print(json.dumps({"phase": "ran"}), flush=True)  # noqa: E731
        print(json.dumps({"phase": "load", **(await one_round(client, runs, clients, gate=gate, ran=ran))}), flush=True)


# ---- the server and the orchestration -----------------------------------------------------------------------------


@dataclass
class Served:
    base: str
    proc: subprocess.Popen[str]


STALL_PROBE = """\
import asyncio.events, atexit, gc, json, os, sys, time

_OUT = os.environ.get("BENCH_STALLS_OUT")
if _OUT and "serve" in sys.argv:
    _calls, _gcs, _started = [], [], [0.0]
    _run = asyncio.events.Handle._run

    def _what(handle):
        task = getattr(handle._callback, "__self__", None)
        if not isinstance(task, asyncio.Task):
            return getattr(handle._callback, "__qualname__", type(handle._callback).__name__)
        inner = task.get_coro()
        while getattr(inner, "cr_await", None) is not None and hasattr(inner.cr_await, "cr_await"):
            inner = inner.cr_await
        return f"{task.get_coro().__qualname__} <- {getattr(inner, '__qualname__', '?')}"

    def _timed(self):
        start = time.perf_counter()
        try:
            return _run(self)
        finally:
            took = time.perf_counter() - start
            if took >= 0.02:
                _calls.append((took * 1000, _what(self)))

    def _collected(phase, info):
        if phase == "start":
            _started[0] = time.perf_counter()
        else:
            _gcs.append((info["generation"], (time.perf_counter() - _started[0]) * 1000))

    asyncio.events.Handle._run = _timed
    gc.callbacks.append(_collected)
    atexit.register(lambda: open(_OUT, "w").write(json.dumps({"calls": _calls, "gcs": _gcs})))
"""
"""`--stalls`: the server's `sitecustomize` (see the module docstring). A callback is named after it ran, and only
when it took 20 ms or more, so the probe costs little more than a clock read around each."""


def print_stalls(found: Path) -> None:
    """What stopped the server's event loop, from the file its `STALL_PROBE` wrote at exit."""
    data = json.loads(found.read_text())
    for generation in (0, 1, 2):
        took = [ms for g, ms in data["gcs"] if g == generation]
        if took:
            print(
                f"  stalls: {len(took)} collections of generation {generation}, {sum(took):.0f} ms in all, the longest "
                f"{max(took):.1f} ms"
            )
    calls: list[tuple[float, str]] = [(float(ms), str(name)) for ms, name in data["calls"]]
    by_name: dict[str, list[float]] = {}
    for ms, name in calls:
        by_name.setdefault(name, []).append(ms)
    print(f"  stalls: {len(calls)} loop callbacks of 20 ms or more, {sum(ms for ms, _ in calls):.0f} ms in all")
    for name, took in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:8]:
        print(f"    {len(took):4d} x, {sum(took):7.0f} ms, longest {max(took):6.1f} ms: {name}")


server_src: Path | None = None
"""`--server-src`: the `src/` directory whose package the server process runs (first on its PYTHONPATH)."""


def serve(tmp: Path, config: str, profile: Path | None, concurrency: int, stalls: Path | None = None) -> Served:
    home = tmp / "home"
    (home / "bearagent").mkdir(parents=True, exist_ok=True)
    (tmp / "server.yaml").write_text(config)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "BEARAGENT_SERVE_TOKEN": TOKEN,
    }
    if server_src is not None:
        env["PYTHONPATH"] = str(server_src)
    if stalls is not None:
        (tmp / "stall_probe").mkdir(exist_ok=True)
        (tmp / "stall_probe" / "sitecustomize.py").write_text(STALL_PROBE)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp / "stall_probe"), env.get("PYTHONPATH")) if p)
        env["BENCH_STALLS_OUT"] = str(stalls)
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    argv = [sys.executable, *profiler, "-m", "bearagent", "serve", "--port", "0", "--config", str(tmp / "server.yaml")]
    argv += ["--concurrency", str(concurrency)]  # every run at once (the in-process worker's default is 16)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        if match:
            # the rest of its output goes to server.log: a pipe nobody reads fills and blocks the server
            threading.Thread(target=_to_file, args=(proc, tmp / "server.log"), daemon=True).start()
            return Served(match.group(1), proc)
        if proc.poll() is not None:
            raise SystemExit(f"serve exited {proc.returncode}: {line}{proc.stderr.read()}")
    proc.kill()
    raise SystemExit("serve did not start")


def _to_file(proc: subprocess.Popen[str], path: Path) -> None:
    """Copy the server's stdout and stderr to `path` until it exits."""

    def copy(stream: IO[str]) -> None:
        with path.open("a") as out:
            for line in stream:
                out.write(line)
                out.flush()

    for stream in (proc.stderr, proc.stdout):
        if stream is not None:
            threading.Thread(target=copy, args=(stream,), daemon=True).start()


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def orchestrate(args: argparse.Namespace, clients: int, runs: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    # every session has a scripted provider of its own, which starts at the script's first turn: a run is `--steps`
    # model turns (a Read of a small file each, then the answer), each answered after `--model-ms`
    gate = f'  - {{text: "gate", delay_ms: {args.gate_ms}}}\n' if args.gate_ms > 0 else ""
    read = f"  - {{tool_calls: [{{name: Read, arguments: {{file_path: notes.txt}}}}], delay_ms: {args.model_ms}}}\n"
    script = "turns:\n" + gate + read * (args.steps - 1) + f'  - {{text: "ok", delay_ms: {args.model_ms}}}\n'
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
    ws = scripted_workspace(tmp / "bench", script, agents=agents)
    (ws / "notes.txt").write_text("a small file the model reads at each step\n")
    concurrency = args.concurrency or max(runs, 16)
    config = (
        f"workspaces:\n  - {{id: bench, path: {ws}}}\n"
        "limits: {max_active_runs_per_caller: 100000, max_sse_per_caller: 100000, "
        f"max_connections: {clients + runs + 500}}}\n"
    )
    stalls = tmp / "stalls.json" if args.stalls else None
    srv = serve(tmp, config, Path(args.profile).resolve() if args.profile else None, concurrency, stalls)
    role = [sys.executable, __file__, "--role", "clients", "--base", srv.base]
    role += ["--clients", str(clients), "--runs", str(runs), "--gate-ms", str(args.gate_ms)]
    try:
        with subprocess.Popen(role, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as load:
            assert load.stdin is not None and load.stdout is not None
            baseline = json.loads(load.stdout.readline())["rounds"]
            server0 = cpu_seconds(srv.proc.pid)
            load.stdin.write("go\n")
            load.stdin.flush()
            assert json.loads(load.stdout.readline())["phase"] == "ran"  # every stream ended; the check follows
            server_cpu = cpu_seconds(srv.proc.pid) - server0
            result = json.loads(load.stdout.readline())
    finally:
        # SIGINT, not SIGTERM: uvicorn re-raises the signal it stopped on, and only SIGINT's (a KeyboardInterrupt)
        # leaves cProfile the chance to write its stats
        srv.proc.send_signal(signal.SIGINT)
        srv.proc.wait(timeout=60)
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, ", end="")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load_avg}")
    print(f"server: {'the package in ' + str(server_src) if server_src else 'this checkout'}")
    b50 = statistics.median(float(b["p50"]) for b in baseline)
    b99 = statistics.median(float(b["p99"]) for b in baseline)
    print(f"baseline (1 client, 1 run, median of {len(baseline)}): p50 {b50:.1f} ms, p99 {b99:.1f} ms")
    print(
        f"load ({clients} clients, {runs} runs): p50 {result['p50']:.1f} ms, p99 {result['p99']:.1f} ms over "
        f"{result['events']} deliveries; live (committed after the stream opened) p50 {result['live_p50']:.1f} ms, "
        f"p99 {result['live_p99']:.1f} ms over {result['live']}; caught up p99 {result['caught_up_p99']:.1f} ms over "
        f"{result['caught_up']}"
    )
    # the model's time only: every run's steps back to back, `concurrency` runs at once
    ideal = min(runs, concurrency) / (args.steps * args.model_ms / 1000)
    print(
        f"  throughput {result['runs_per_s']:.1f} runs/s = {100 * result['runs_per_s'] / ideal:.0f}% of the ideal "
        f"{ideal:.1f} runs/s ({runs} runs x {args.steps} model turns x {args.model_ms} ms over a concurrency of "
        f"{concurrency}; target >= 80%); server CPU {1000 * server_cpu / runs:.1f} ms per run"
    )
    print(
        f"  {result['runs_per_s']:.1f} runs/s, {result['elapsed_s']:.2f} s; CPU during the round: server "
        f"{server_cpu:.2f} s, clients {result['client_cpu_s']:.2f} s; {result['bad_streams']} of {result['streams']} "
        "streams lost or reordered"
    )
    print(
        f"  the client process's own event loop was late by up to {result['client_lag_max']:.1f} ms (p99 "
        f"{result['client_lag_p99']:.1f} ms): frames waited that long in the client"
    )
    print(
        f"  p99 of the commits made while runs were still being sent (the first {result['burst_s']:.1f} s): "
        f"{result['burst_p99']:.1f} ms over {result['burst']}; after: {result['after_p99']:.1f} ms over "
        f"{result['after']}; the slowest 1% by frame: {result['slowest_kinds']}"
    )
    if stalls is not None:
        print_stalls(stalls)
    if args.profile:
        print(f"server profile: {args.profile} (python -m pstats {args.profile})")


def rss_kib(pid: int) -> int:
    """Resident memory of a process, KiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit(f"no VmRSS for process {pid}")


def sessions_mode(sessions: int, active: int) -> None:
    """Memory per idle session and per active run of one server (see the module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-sessions-"))
    script = "turns:\n" + '  - {text: "ok", delay_ms: 3000}\n' * 2
    ws = scripted_workspace(tmp / "bench", script, agents={"main": agent_md("Main.", mode="primary")})
    config = (
        f"workspaces:\n  - {{id: bench, path: {ws}}}\n"
        "limits: {max_active_runs_per_caller: 100000, max_sse_per_caller: 100000}\n"
    )
    srv = serve(tmp, config, None, max(active, 16))
    headers = {"authorization": f"Bearer {TOKEN}"}
    try:
        with httpx.Client(base_url=srv.base, headers=headers, timeout=120) as c:
            c.get("/v1/workspaces/bench/sessions").raise_for_status()  # the workspace's runtime is up
            time.sleep(0.5)
            up = rss_kib(srv.proc.pid)
            started = time.monotonic()
            ids = [c.post("/v1/workspaces/bench/sessions", json={}).json()["id"] for _ in range(sessions)]
            made_s = time.monotonic() - started
            time.sleep(0.5)
            idle = rss_kib(srv.proc.pid)
            run_ids = [
                c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "q"}).json()["run_id"] for sid in ids[:active]
            ]
            peak = idle
            ended: dict[str, str] = {}
            deadline = time.monotonic() + 600
            while len(ended) < len(run_ids) and time.monotonic() < deadline:
                peak = max(peak, rss_kib(srv.proc.pid))
                for run_id in [r for r in run_ids if r not in ended][:20]:
                    status = c.get(f"/v1/runs/{run_id}").json()["status"]
                    if status in ("succeeded", "failed", "cancelled", "interrupted", "waiting"):
                        ended[run_id] = status
                time.sleep(0.05)
            failed = [(r, ended.get(r, "not ended in 600 s")) for r in run_ids if ended.get(r) != "succeeded"]
    finally:
        srv.proc.send_signal(signal.SIGINT)
        srv.proc.wait(timeout=60)
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, ", end="")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load_avg}")
    print(f"server up (baseline): {up / 1024:.1f} MiB resident")
    print(
        f"{sessions} idle sessions (made in {made_s:.1f} s): {idle / 1024:.1f} MiB, "
        f"{(idle - up) / sessions:.1f} KiB per idle session (target <= 100 KiB)"
    )
    print(
        f"{active} runs at once: peak {peak / 1024:.1f} MiB, {(peak - idle) / active:.1f} KiB per active run "
        f"(target <= 1024 KiB); {active - len(failed)} of {active} succeeded"
    )
    if failed:
        raise SystemExit(f"runs that did not succeed: {failed[:5]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="40 clients, 10 runs")
    parser.add_argument("--profile", help="run the server under cProfile, stats to this file")
    parser.add_argument(
        "--stalls", action="store_true", help="time the server's loop callbacks and collections; print what stalled"
    )
    parser.add_argument("--steps", type=int, default=1, help="model turns per run (a Read each, then the answer)")
    parser.add_argument("--model-ms", type=int, default=50, help="how long the scripted model takes per turn")
    parser.add_argument(
        "--concurrency", type=int, default=0, help="the server's `--concurrency` (default: every run at once)"
    )
    parser.add_argument(
        "--gate-ms",
        type=int,
        default=2500,
        help="how long each session's first run holds the measured one queued while the clients connect (0: none, "
        "the clients connect after the run started)",
    )
    parser.add_argument(
        "--server-src",
        help="run the server from this src/ directory (first on its PYTHONPATH), e.g. an older tree's "
        "(`git worktree add /tmp/before REV`, then `--server-src /tmp/before/src`): before and after in one sitting",
    )
    parser.add_argument("--sessions", type=int, default=0, help="memory mode: create this many sessions")
    parser.add_argument("--active", type=int, default=100, help="memory mode: runs at once (<= --sessions)")
    parser.add_argument("--role", choices=["orchestrator", "clients"], default="orchestrator", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global server_src
    server_src = Path(args.server_src).resolve() if args.server_src else None
    clients, runs = (40, 10) if args.quick else (args.clients, args.runs)
    if args.sessions:
        sessions_mode(args.sessions, min(args.active, args.sessions))
    elif args.role == "clients":
        asyncio.run(clients_role(args.base, runs, clients, gate=args.gate_ms > 0))
    else:
        orchestrate(args, clients, runs)


if __name__ == "__main__":
    main()

"""Load on `bearagent serve` over loopback (issue 19): N concurrent SSE clients following M concurrent runs.

A real server process (the tests' `start()`), a scripted model answering each turn after 50 ms. M sessions get a
run each at once; N clients (N/M per run) follow the runs' SSE streams from the moment the run is accepted.
Measured: delivery latency of every committed event (the stored event's `occurred_at` to the client's receipt,
same clock), runs/s (first POST to the last terminal event), and no lost events: every client must receive the
same id sequence as a replay of the finished run, seqs non-decreasing, ending with the terminal event. Baseline in
the same run: one client following one run alone on the same server (5 rounds).

Run: `uv run python benchmarks/bench_serve.py [--clients 200] [--runs 50] [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from httpx_sse import aconnect_sse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.server.test_http_api import TOKEN, start
from tests.support.run_ws import agent_md, scripted_workspace

SSE = {"accept": "text/event-stream"}


async def follow(client: httpx.AsyncClient, run_id: str) -> list[tuple[str, str, int | None, float]]:
    """(id, type, seq, receipt wall time) of every committed frame of the run's SSE stream."""
    got: list[tuple[str, str, int | None, float]] = []
    async with aconnect_sse(client, "GET", f"/v1/runs/{run_id}/events", headers=SSE) as source:
        async for sse in source.aiter_sse():
            if sse.event == "token":
                continue  # live only, no id of their own (an SSE client repeats the last id on them)
            got.append((sse.id, sse.event, json.loads(sse.data).get("seq"), time.time()))
    return got


async def occurred(client: httpx.AsyncClient, run_id: str) -> dict[int, float]:
    page = (await client.get(f"/v1/runs/{run_id}/events")).json()
    return {e["sequence"]: datetime.fromisoformat(e["occurred_at"]).timestamp() for e in page["events"]}


async def one_round(client: httpx.AsyncClient, runs: int, clients: int) -> dict[str, object]:
    sessions = await asyncio.gather(*(client.post("/v1/workspaces/bench/sessions", json={}) for _ in range(runs)))
    per_run = max(clients // runs, 1)
    t0 = time.perf_counter()

    async def run_and_follow(session: str) -> tuple[str, list[list[tuple[str, str, int | None, float]]]]:
        accepted = await client.post(f"/v1/sessions/{session}/runs", json={"prompt": "hi"})
        run_id = accepted.json()["run_id"]
        return run_id, list(await asyncio.gather(*(follow(client, run_id) for _ in range(per_run))))

    results = await asyncio.gather(*(run_and_follow(s.json()["id"]) for s in sessions))
    elapsed = time.perf_counter() - t0
    latencies: list[float] = []
    lost = 0
    for run_id, streams in results:
        times = await occurred(client, run_id)
        replay = [f[:3] for f in await follow(client, run_id)]
        for frames in streams:
            seqs = [f[2] or 0 for f in frames]
            ok = [f[:3] for f in frames] == replay and seqs == sorted(seqs) and frames[-1][1] in {"run.succeeded"}
            lost += 0 if ok else 1
            latencies += [(recv - times[seq]) * 1000 for _, _, seq, recv in frames if seq in times]
    latencies.sort()
    return {
        "p50": statistics.median(latencies),
        "p99": latencies[int(len(latencies) * 0.99) - 1] if len(latencies) > 1 else latencies[0],
        "events": len(latencies),
        "runs_per_s": runs / elapsed,
        "streams": sum(len(s) for _, s in results),
        "bad_streams": lost,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="40 clients, 10 runs")
    args = parser.parse_args()
    clients, runs = (40, 10) if args.quick else (args.clients, args.runs)
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    script = "turns:\n" + '  - {text: "ok", delay_ms: 50}\n' * (runs + 10)
    ws = scripted_workspace(tmp / "bench", script, agents={"main": agent_md("Main.", mode="primary")})
    config = (
        f"workspaces:\n  - {{id: bench, path: {ws}}}\n"
        "limits: {max_active_runs_per_caller: 10000, max_sse_per_caller: 100000}\n"
    )
    srv = start(tmp, config=config)
    limits = httpx.Limits(max_connections=clients + runs + 50)
    headers = {"authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx.AsyncClient(base_url=srv.base, headers=headers, timeout=120, limits=limits) as client:
            base = [await one_round(client, 1, 1) for _ in range(5)]
            load = await one_round(client, runs, clients)
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)
    print(f"machine: {platform.machine()}, {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}")
    b50 = statistics.median(float(str(b["p50"])) for b in base)
    b99 = statistics.median(float(str(b["p99"])) for b in base)
    print(f"baseline (1 client, 1 run, median of 5): p50 {b50:.1f} ms, p99 {b99:.1f} ms")
    print(
        f"load ({clients} clients, {runs} runs): p50 {float(str(load['p50'])):.1f} ms, "
        f"p99 {float(str(load['p99'])):.1f} ms, {load['events']} deliveries, "
        f"{float(str(load['runs_per_s'])):.1f} runs/s, {load['bad_streams']} of {clients} streams lost or reordered"
    )


if __name__ == "__main__":
    asyncio.run(main())

"""Scale-out as real processes: one API-only server (`serve --workers 0`), three `bearagent worker` processes on one
store, runs over several sessions, and one worker killed with SIGKILL in the middle. Every run must end succeeded,
the runs of each session in submission order, no event lost (each log is whole and consistent), and the killed
worker's runs resumed by the others."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.server.test_http_api import start
from tests.support import postgres_cluster
from tests.support.run_ws import agent_md, scripted_workspace

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
SESSIONS = 8
RUNS_PER_SESSION = 3
SCRIPT = "turns:\n" + "".join(f'  - text: "answer {n}"\n    delay_ms: 250\n' for n in range(1, RUNS_PER_SESSION + 1))


def _worker(root: Path, home: Path, extra: dict[str, str]) -> subprocess.Popen[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        **extra,
    }
    return subprocess.Popen(
        [BEARAGENT, "worker", "-w", str(root), "--concurrency", "3", "--poll", "0.1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(240)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_three_workers_one_killed_every_run_succeeds_in_session_order(tmp_path: Path, backend: str) -> None:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "fleet", SCRIPT, agents=agents)
    home = tmp_path / "home"
    extra: dict[str, str] = {}
    if backend == "postgres":  # every process on one PostgreSQL database, chosen by the user's config
        postgres_cluster.require()
        extra["BEARAGENT_PG_DSN"] = postgres_cluster.new_database()
        (home / "bearagent").mkdir(parents=True)
        (home / "bearagent" / "config.yaml").write_text("store: {backend: postgres, dsn_env: BEARAGENT_PG_DSN}\n")
    config = f"workspaces:\n  - {{id: fleet, path: {root}}}\nlimits: {{max_active_runs_per_caller: 100}}\n"
    server = start(tmp_path, "--workers", "0", config=config, env=extra)
    workers = [_worker(root, home, extra) for _ in range(3)]
    try:
        with server.client() as c:
            sessions = [c.post("/v1/workspaces/fleet/sessions", json={}).json()["id"] for _ in range(SESSIONS)]
            sent: dict[str, list[str]] = {s: [] for s in sessions}
            for n in range(RUNS_PER_SESSION):
                for s in sessions:
                    accepted = c.post(f"/v1/sessions/{s}/runs", json={"prompt": f"question {n + 1}"})
                    assert accepted.status_code == 202, accepted.text
                    assert accepted.json()["status"] == "queued"  # answered at once, before any worker ran it
                    sent[s].append(accepted.json()["run_id"])
            all_runs = [r for runs in sent.values() for r in runs]
            # kill one worker while runs execute
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = sum(1 for r in all_runs if c.get(f"/v1/runs/{r}").json()["status"] == "succeeded")
                if done >= len(all_runs) // 4:
                    break
                time.sleep(0.1)
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait(timeout=10)
            deadline = time.monotonic() + 150
            finals: dict[str, dict[str, object]] = {}
            while time.monotonic() < deadline and len(finals) < len(all_runs):
                for r in all_runs:
                    if r not in finals:
                        run = c.get(f"/v1/runs/{r}").json()
                        if run["status"] in ("succeeded", "failed", "cancelled"):
                            finals[r] = run
                time.sleep(0.2)
            assert len(finals) == len(all_runs), f"{len(all_runs) - len(finals)} runs never finished"
            assert {r: (f["status"], f.get("error")) for r, f in finals.items() if f["status"] != "succeeded"} == {}
            interrupted = 0
            for s, runs in sent.items():
                # each session's answers in submission order: run n got the session's n-th scripted answer
                assert [finals[r]["final_text"] for r in runs] == [
                    f"answer {n}" for n in range(1, RUNS_PER_SESSION + 1)
                ], s
                starts: list[str] = []
                for r in runs:
                    events = c.get(f"/v1/runs/{r}/events").json()["events"]
                    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
                    types = [e["event_type"] for e in events]
                    assert types[0] == "RunCreated" and types[1] == "RunStarted" and types[-1] == "RunSucceeded"
                    interrupted += types.count("RunInterrupted")
                    starts.append(events[1]["occurred_at"])
                    ended = events[-1]["occurred_at"]
                    assert starts[-1] <= ended
                # one at a time: each run of the session started after the previous one ended
                ends = [c.get(f"/v1/runs/{r}/events").json()["events"][-1]["occurred_at"] for r in runs]
                assert all(ends[i] <= starts[i + 1] for i in range(len(runs) - 1)), s
            # the killed worker held runs (it had 3 slots and a full queue): they were interrupted and resumed
            assert 1 <= interrupted <= 3
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
        server.proc.terminate()
        server.proc.wait(timeout=20)

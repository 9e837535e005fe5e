"""The server's run concurrency limit is an explicit setting (issue 37): `bearagent serve --workers N --concurrency C`
executes at most N x C runs at once, and a run beyond it is accepted (202) and waits `queued` until a slot frees,
then runs; the per-caller limit (`limits.max_active_runs_per_caller`) is the other explicit setting, and refuses with
429 instead (below). A real server process; the scripted model holds every turn until the
test creates a file, so "two running, the third queued" is a state, not a race."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from tests.server.test_http_api import Server, start
from tests.support.run_ws import agent_md, scripted_workspace

RELEASE = "release-held-turns"
SCRIPT = f"""
turns:
  - text: "held answer"
    wait_for_file: {RELEASE}
    wait_timeout_ms: 120000
"""


def _serve(tmp_path: Path, *, concurrency: int, per_caller: int) -> tuple[Path, Server]:
    """A real server over a workspace whose turns wait for `RELEASE`: one in-process worker running `concurrency`
    runs at once, `per_caller` the caller's limit of active runs."""
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    config = f"workspaces:\n  - {{id: ws, path: {root}}}\nlimits: {{max_active_runs_per_caller: {per_caller}}}\n"
    return root, start(tmp_path, "--workers", "1", "--concurrency", str(concurrency), config=config)


def _statuses(c: httpx.Client, runs: list[str]) -> list[str]:
    return [c.get(f"/v1/runs/{r}").json()["status"] for r in runs]


def _until(c: httpx.Client, runs: list[str], done: Callable[[list[str]], bool], within_s: float) -> list[str]:
    deadline = time.monotonic() + within_s
    statuses = _statuses(c, runs)
    while not done(statuses) and time.monotonic() < deadline:
        time.sleep(0.1)
        statuses = _statuses(c, runs)
    return statuses


@pytest.mark.slow
def test_a_run_beyond_the_servers_concurrency_waits_queued_and_runs_when_a_slot_frees(tmp_path: Path) -> None:
    root, server = _serve(tmp_path, concurrency=2, per_caller=100)
    try:
        with server.client() as c:
            sessions = [c.post("/v1/workspaces/ws/sessions", json={}).json()["id"] for _ in range(3)]
            accepted = [c.post(f"/v1/sessions/{s}/runs", json={"prompt": "q"}) for s in sessions]
            assert [a.status_code for a in accepted] == [202, 202, 202]  # beyond the limit is accepted, not refused
            runs = [a.json()["run_id"] for a in accepted]
            statuses = _until(c, runs, lambda s: s.count("running") == 2, 60)
            assert sorted(statuses) == ["queued", "running", "running"], statuses
            time.sleep(1.0)  # the third stays queued while both slots are held (the worker polls every 0.5 s)
            assert sorted(_statuses(c, runs)) == ["queued", "running", "running"]
            deadline = time.monotonic() + 20  # /health is cached for 2 s
            worker = c.get("/health").json()["worker"]
            while worker["in_flight"] != 2 and time.monotonic() < deadline:
                time.sleep(0.2)
                worker = c.get("/health").json()["worker"]
            assert (worker["concurrency"], worker["in_flight"]) == (2, 2), worker
            (root / ".bearagent" / RELEASE).touch()
            finals = _until(c, runs, lambda s: all(x == "succeeded" for x in s), 60)
            assert finals == ["succeeded"] * 3, finals
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=20)


@pytest.mark.slow
def test_runs_beyond_the_per_caller_limit_are_refused_until_one_ends(tmp_path: Path) -> None:
    """One run executing in the server, two queued behind it (read from the store): three are the caller's limit,
    a fourth is refused with 429 and nothing recorded; once they end, the caller may send again."""
    root, server = _serve(tmp_path, concurrency=1, per_caller=3)
    try:
        with server.client() as c:
            sessions = [c.post("/v1/workspaces/ws/sessions", json={}).json()["id"] for _ in range(5)]
            accepted = [c.post(f"/v1/sessions/{s}/runs", json={"prompt": "q"}) for s in sessions[:3]]
            assert [a.status_code for a in accepted] == [202, 202, 202]
            runs = [a.json()["run_id"] for a in accepted]
            statuses = _until(c, runs, lambda s: s.count("running") == 1, 60)
            assert sorted(statuses) == ["queued", "queued", "running"], statuses
            refused = c.post(f"/v1/sessions/{sessions[3]}/runs", json={"prompt": "q"})
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert error["code"] == "rate_limit.active_runs"
            assert "limits.max_active_runs_per_caller" in error["message"]
            assert c.get(f"/v1/sessions/{sessions[3]}").json()["status"] == "active"  # nothing was queued
            (root / ".bearagent" / RELEASE).touch()
            finals = _until(c, runs, lambda s: all(x == "succeeded" for x in s), 60)
            assert finals == ["succeeded"] * 3, finals
            again = [c.post(f"/v1/sessions/{s}/runs", json={"prompt": "q"}) for s in sessions[3:]]
            assert [a.status_code for a in again] == [202, 202], [a.text for a in again]
            later = _until(c, [a.json()["run_id"] for a in again], lambda s: all(x == "succeeded" for x in s), 60)
            assert later == ["succeeded"] * 2, later
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=20)

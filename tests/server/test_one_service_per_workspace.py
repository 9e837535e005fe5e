"""One service per workspace, through a real `bearagent serve`: the caller travels with the run, so every caller of
a workspace shares its store handle, writer, providers and MCP connections (issue 30).

The stdio MCP server is a wrapper script under `tmp_path` that notes its pid in a file of its own before it hands
over to the demo server, so the count is this test's alone (safe beside other tests starting the demo server).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from tests.server.test_http_api import Server, start
from tests.support.config_ws import isolated_env, load
from tests.support.mcp_helpers import DEMO
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.trust import trust, workspace_trust_surface

CALLERS = 50
SCRIPT = """
turns:
  - text: "done"
"""
WRAPPER = """
import os, runpy, sys
with open({starts!r}, "a", encoding="utf-8") as f:
    f.write(f"{{os.getpid()}}\\n")
sys.argv = [{demo!r}, "stdio"]
runpy.run_path({demo!r}, run_name="__main__")
"""
RUN_TIMEOUT_S = 120.0
"""50 runs on a 2-core machine shared with other tests: generous, it bounds a hang, not the product's speed."""


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    starts = tmp_path / "mcp-starts.txt"
    wrapper = tmp_path / "counting_mcp.py"
    wrapper.write_text(WRAPPER.format(starts=str(starts), demo=str(DEMO)))
    config = (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n  demo: {{command: {sys.executable}, args: [{wrapper}], startup_timeout_s: 30}}\n"
    )
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", mcp="[demo]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents, config=config)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, starts


def _serve(tmp_path: Path, root: Path, *args: str) -> Server:
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  proxy: {{trusted: [127.0.0.1/32], subject_header: X-Forwarded-User, scopes_header: X-Forwarded-Scopes,
          workspaces_header: X-Forwarded-Workspaces}}
limits: {{max_active_runs_per_caller: 20}}
"""
    return start(tmp_path, *args, config=config)


@pytest.fixture
def stopper() -> Iterator[list[Server]]:
    servers: list[Server] = []
    yield servers
    for srv in servers:
        srv.proc.terminate()
        srv.proc.wait(timeout=30)


def _as(server: Server, subject: str) -> httpx.Client:
    headers = {
        "x-forwarded-user": subject,
        "x-forwarded-scopes": "runs:read,runs:write",
        "x-forwarded-workspaces": "ws",
    }
    return httpx.Client(base_url=server.base, headers=headers, timeout=60)


def _send(server: Server, subject: str) -> tuple[str, str]:
    """A session of `subject` and a run in it: (session's subject, run id)."""
    with _as(server, subject) as c:
        session = c.post("/v1/workspaces/ws/sessions", json={})
        assert session.status_code == 201, session.text
        run = c.post(f"/v1/sessions/{session.json()['id']}/runs", json={"prompt": f"hello from {subject}"})
        assert run.status_code == 202, run.text
        return str(session.json()["subject_ref"]), str(run.json()["run_id"])


def _finished(server: Server, subject: str, run_id: str) -> dict[str, object]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    with _as(server, subject) as c:
        while time.monotonic() < deadline:
            run = c.get(f"/v1/runs/{run_id}").json()
            if run.get("status") in ("succeeded", "failed", "cancelled"):
                return run
            time.sleep(0.1)
    raise AssertionError(f"run {run_id} of {subject} did not finish in {RUN_TIMEOUT_S}s")


def _starts(starts: Path) -> list[str]:
    return starts.read_text().split() if starts.exists() else []


@pytest.mark.slow
def test_fifty_callers_of_one_workspace_share_one_mcp_server_process(tmp_path: Path, stopper: list[Server]) -> None:
    root, starts = _workspace(tmp_path)
    server = _serve(tmp_path, root)
    stopper.append(server)
    subjects = [f"caller-{i:02d}" for i in range(CALLERS)]

    def send(subject: str) -> tuple[str, str]:
        return _send(server, subject)

    def finished(subject: str, sent: tuple[str, str]) -> dict[str, object]:
        return _finished(server, subject, sent[1])

    with ThreadPoolExecutor(max_workers=10) as pool:
        sent = list(pool.map(send, subjects))
        runs = list(pool.map(finished, subjects, sent))
    assert [owner for owner, _ in sent] == subjects  # each session is its caller's own
    assert {r["status"] for r in runs} == {"succeeded"}, [r for r in runs if r["status"] != "succeeded"][:3]
    with _as(server, subjects[0]) as c:  # and stays so: a caller lists only its own sessions
        assert [s["subject_ref"] for s in c.get("/v1/workspaces/ws/sessions").json()["sessions"]] == [subjects[0]]
    assert len(_starts(starts)) == 1, _starts(starts)


def test_an_api_only_server_accepts_runs_without_starting_mcp(tmp_path: Path, stopper: list[Server]) -> None:
    root, starts = _workspace(tmp_path)
    server = _serve(tmp_path, root, "--workers", "0")
    stopper.append(server)
    accepted = [_send(server, f"caller-{i}") for i in range(10)]
    with _as(server, "caller-0") as c:
        first = c.get(f"/v1/runs/{accepted[0][1]}").json()
    assert first["status"] == "queued"
    assert _starts(starts) == []

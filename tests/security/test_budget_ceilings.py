"""Budgets have a ceiling (issue 28, items 11 and 12): a workspace's config or an API caller (`runs:write`) may lower
them, never raise them above the user's own (user config, `--max-*` flags) or the server operator's. Real `bearagent
run` processes and a real `bearagent serve`; the scripted model asks for five tool calls."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
from tests.server.test_http_api import start
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
FIVE_READS = "turns:\n" + "  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]\n" * 5 + "  - text: done\n"
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}


def _workspace(root: Path, budgets: str | None) -> Path:
    config = CONFIG + (f"budgets: {budgets}\n" if budgets else "")
    root = scripted_workspace(root, FIVE_READS, agents=AGENTS, config=config)
    (root / "notes.md").write_text("notes\n")
    return root


def _user(home: Path, budgets: str | None) -> None:
    (home / "bearagent").mkdir(parents=True, exist_ok=True)
    if budgets:
        (home / "bearagent" / "config.yaml").write_text(f"budgets: {budgets}\n")


def _tool_calls(root: Path) -> int:
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        (n,) = conn.execute("SELECT count(*) FROM events WHERE event_type = 'ToolCallCompleted'").fetchone()
    return int(n)


def _run(root: Path, home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BEARAGENT, "run", "-w", str(root), *flags, "read the notes five times"],
        env=isolated_env(home),
        capture_output=True,
        text=True,
        timeout=120,  # generous: a loaded machine starts the CLI slowly
        stdin=subprocess.DEVNULL,
    )


def test_a_workspace_cannot_raise_the_users_budget(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _user(home, "{max_tool_calls: 2}")
    root = _workspace(tmp_path / "ws", "{max_tool_calls: 1000, max_model_iterations: 100000}")
    result = _run(root, home)
    assert result.returncode == 3, (result.stdout, result.stderr)  # a budget stopped it
    assert _tool_calls(root) == 2, "the user's 2, not the workspace's 1000"


def test_a_workspace_cannot_raise_the_defaults_either(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _user(home, None)
    root = _workspace(tmp_path / "ws", "{max_tool_calls: 100000000}")
    result = _run(root, home, "--json")
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout)["run_id"]
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE run_id = ? AND event_type = 'RunCreated'", (run_id,)
        ).fetchone()
    assert json.loads(payload)["budget_limits"]["max_tool_calls"] == 200, "the default is the ceiling"


def test_a_workspace_may_lower_and_the_users_flag_may_raise(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _user(home, "{max_tool_calls: 2}")
    lowered = _workspace(tmp_path / "low", "{max_tool_calls: 1}")
    assert _run(lowered, home).returncode == 3
    assert _tool_calls(lowered) == 1
    raised = _workspace(tmp_path / "flag", "{max_tool_calls: 1000}")
    result = _run(raised, home, "--max-tool-calls", "5")  # the user's own choice on the command line
    assert result.returncode == 0, result.stderr
    assert _tool_calls(raised) == 5


def _wait(client: httpx.Client, run_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 120  # generous: a loaded machine
    while time.monotonic() < deadline:
        run = client.get(f"/v1/runs/{run_id}").json()
        if run.get("status") in ("succeeded", "failed", "cancelled"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish")


def test_an_api_caller_cannot_raise_the_operators_budget(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", None)
    _user(tmp_path / "home", "{max_tool_calls: 2}")  # the operator's config (`start` uses tmp_path/home)
    server = start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {root}}}\n")
    try:
        with server.client() as c:
            sid = c.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
            for asked in ({"max_tool_calls": 1000}, {"max_tool_calls": 3}, {"max_model_iterations": 10**6}):
                refused = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read", "budgets": asked})
                assert refused.status_code == 403, refused.text
                error = refused.json()["error"]
                assert error["code"].endswith("budget_above_ceiling") and "ceiling" in error["message"]
            lowered = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read", "budgets": {"max_tool_calls": 1}})
            assert lowered.status_code == 202, lowered.text
            run = _wait(c, lowered.json()["run_id"])
            assert run["status"] == "failed"
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)
    assert _tool_calls(root) == 1

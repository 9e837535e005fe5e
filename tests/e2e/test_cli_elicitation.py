"""An MCP server's question mid-call in a headless `bearagent run --wait-approvals`, answered from another process
with `bearagent approvals list` / `approvals answer` (a real MCP server that asks, tests/support/mcp_servers/asker.py):
the waiting run lists the question, a bad answer is refused naming the field, a good one reaches the server, a
second is refused; without --wait-approvals the question is declined at once and the model reads it, as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.server.test_http_elicitation import asker_workspace
from tests.support.config_ws import isolated_env

pytestmark = pytest.mark.timeout(180)


def _cli(root: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        cwd=root,
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _question(root: Path, env: Mapping[str, str], seen: set[str]) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listed = _cli(root, env, "approvals", "list", "--json")
        if listed.returncode != 0 and "state.db is missing" in listed.stderr:  # the run has not stored itself yet
            time.sleep(0.2)
            continue
        assert listed.returncode == 0, listed.stderr
        for row in json.loads(listed.stdout):
            if row.get("kind") == "elicitation" and row["approval_id"] not in seen:
                return row
        time.sleep(0.2)
    raise AssertionError("no question listed")


def test_a_headless_waiting_run_is_answered_from_another_process(tmp_path: Path) -> None:
    root = asker_workspace(tmp_path)
    env = isolated_env(tmp_path / "home")
    run = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "--json", "--wait-approvals", "deploy it"],
        cwd=root,
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = _question(root, env, set())
        assert first["reason"] == "Really deploy to staging?" and first["tool"] == "MCP asker"
        run_id, qid = str(first["run_id"]), str(first["approval_id"])
        bad = _cli(root, env, "approvals", "answer", run_id, qid, "accept", "--content", '{"proceed": 3}')
        assert bad.returncode != 0 and "'proceed'" in bad.stderr, bad.stderr
        wrong = _cli(root, env, "approvals", "answer", run_id, qid, "allow")
        assert wrong.returncode != 0 and "accept, decline or cancel" in wrong.stderr, wrong.stderr
        good = _cli(root, env, "approvals", "answer", run_id, qid, "accept", "--content", '{"proceed": true}')
        assert good.returncode == 0, good.stderr
        again = _cli(root, env, "approvals", "answer", run_id, qid, "decline")
        assert again.returncode != 0 and "already answered" in again.stderr, again.stderr
        second = _question(root, env, {qid})
        cancelled = _cli(root, env, "approvals", "answer", run_id, str(second["approval_id"]), "cancel")
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err
    assert json.loads(out)["status"] == "succeeded", out
    shown = _cli(root, env, "runs", "export", run_id, "--format", "jsonl")
    assert "deploy staging: accept proceed=True" in shown.stdout and "deploy prod: cancel" in shown.stdout


def test_without_wait_approvals_the_question_is_declined_with_a_note(tmp_path: Path) -> None:
    root = asker_workspace(tmp_path)
    env = isolated_env(tmp_path / "home")
    done = _cli(root, env, "run", "--json", "deploy it")
    assert done.returncode == 0, done.stderr
    shown = _cli(root, env, "runs", "export", json.loads(done.stdout)["run_id"], "--format", "jsonl")
    assert "deploy staging: decline" in shown.stdout and "ElicitationRequested" not in shown.stdout

"""Seed 002's record names through a real `bearagent serve` and the Python API: sessions carry `agent_name` and
`active_agent_name`, runs `error_code` and `error_message` (beside the older names) and the client's own `metadata`,
bounded and refused with a clear 400 when it breaks the rule."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.server.test_http_api import start, wait_for
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.domain.errors import BearAgentError

pytestmark = pytest.mark.timeout(120)  # a real server process and its runs

SCRIPT = """
turns:
  - text: "first"
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "never reached"
"""
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}


def test_seed_names_and_run_metadata_over_http(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    (root / "notes.md").write_text("notes\n")
    server = start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {root}}}\n")
    try:
        with server.client() as c:
            session = c.post("/v1/workspaces/ws/sessions", json={}).json()
            assert session["agent_name"] == session["agent"] == "main"
            assert session["active_agent_name"] == session["active_agent"]
            sid = session["id"]
            run = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hi", "metadata": {"ticket": "T-1", "n": 2}})
            assert run.status_code == 202, run.text
            record: dict[str, Any] = wait_for(c, run.json()["run_id"])
            assert record["metadata"]["ticket"] == "T-1" and record["metadata"]["n"] == 2
            assert record["metadata"]["model_ref"] == "workspace/scripted"  # the runtime's own keys stay
            assert record["error_code"] is None and record["error_message"] is None

            for bad, why in (
                ({"api_token": "x"}, "looks sensitive"),
                ({"depth": 3}, "the runtime's own"),
                ({f"k{i}": i for i in range(40)}, "at most 32"),
                ({"long": "x" * 2000}, "longer than 1024"),
            ):
                refused = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hi", "metadata": bad})
                assert refused.status_code == 400, refused.text
                error = refused.json()["error"]
                assert error["code"] == "invalid_request.metadata" and why in error["message"], error

            failing = c.post(
                f"/v1/sessions/{sid}/runs", json={"prompt": "read", "budgets": {"max_model_iterations": 1}}
            )
            failed: dict[str, Any] = wait_for(c, failing.json()["run_id"], status="failed")
            assert failed["error_code"] == failed["error"]["code"] and failed["error_code"].startswith("budget.")
            assert failed["error_message"] == failed["error"]["message"]
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)


def test_run_metadata_through_the_python_api(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    with open_ws(root, tmp_path / "home") as ws:
        result = asyncio.run(ws.run("hi", metadata={"ticket": "T-2"}))
        info = ws.run_info(str(result.run_id))
        assert info.request is not None and info.request.metadata == {"ticket": "T-2"}
        assert info.request.initiator_ref is not None and info.request.initiator_ref.startswith("local:")
        with pytest.raises(BearAgentError) as caught:
            asyncio.run(ws.run("hi", metadata={"password": "x"}))
        assert caught.value.info.code == "invalid_request.metadata"

"""Running an action has one owner (`WorkspaceRuntime.action_request`): a `kind: command` action with a `model` and
`allowed-tools` runs the same through a real `bearagent serve` as through `bearagent action run` (issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pytest
from tests.server.test_http_api import BEARAGENT, JWT_SECRET, gateway_token, start, wait_for
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

CONFIG = """
default_model: scripted
permission_mode: dontAsk
models:
  scripted: {provider: scripted, script: script.yaml}
  reviewer: {provider: scripted, script: reviewer.yaml}
"""
DEFAULT_SCRIPT = """
turns:
  - text: "the default model answered"
"""
REVIEWER_SCRIPT = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo from-command"}}]
  - text: "the command's model answered"
"""
COMMAND = "---\ndescription: Greets.\nmodel: reviewer\nallowed-tools: Bash(echo:*)\n---\nSay hello to $1.\n"
CLI_TIMEOUT_S = 120
"""A whole `bearagent` process on a loaded 2-core machine: bounds a hang, not the product's speed."""


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = scripted_workspace(tmp_path / "ws", DEFAULT_SCRIPT, config=CONFIG)
    write(root, ".bearagent/reviewer.yaml", REVIEWER_SCRIPT)
    write(root, ".claude/commands/greet.md", COMMAND)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))  # allowed-tools widen: trust
    return root, home


def _content(payload: Mapping[str, object]) -> str:
    """A tool result's content (ids and durations differ between two runs; what the tool said does not)."""
    result = payload.get("result")
    return str(cast(Mapping[str, object], result).get("content")) if isinstance(result, Mapping) else ""


def _what_ran(root: Path, home: Path, run_id: str) -> dict[str, object]:
    """What decides a run's behaviour, from its log: goal, agent, model, request, tool outcomes, final text."""
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        events = [e.model_dump(mode="json") for e in ws.events(run_id)]
    created = next(e["payload"] for e in events if e["event_type"] == "RunCreated")
    started = next(e["payload"] for e in events if e["event_type"] == "RunStarted")
    plan = started.get("plan") or created
    outcomes = [
        (e["event_type"], _content(e["payload"]))
        for e in events
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")
    ]
    final = next(e["payload"]["final_text"] for e in events if e["event_type"] == "RunSucceeded")
    request = created["request"]
    return {
        "goal": created["goal"],
        "agent": created["agent_name"],
        "model_ref": plan["model_ref"],
        "model_override": request["model_override"],
        "allowed_tools": request["allowed_tools"],
        "trigger_ref": created["trigger_ref"],
        "outcomes": outcomes,
        "final": final,
    }


@pytest.mark.slow
def test_a_command_action_runs_the_same_over_http_and_the_cli(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)
    cli = subprocess.run(
        [BEARAGENT, "action", "run", "greet", "Ada", "-w", str(root), "--json"],
        env={**isolated_env(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert cli.returncode == 0, cli.stderr
    cli_run = json.loads(cli.stdout)["run_id"]

    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    server = start(tmp_path, config=config)
    try:
        token = gateway_token("alice", "runs:read runs:write actions:run", ["ws"])
        with server.client(token) as c:
            accepted = c.post("/v1/workspaces/ws/actions/greet/runs", json={"inputs": {"arguments": "Ada"}})
            assert accepted.status_code == 202, accepted.text
            http_run = accepted.json()["run_id"]
            wait_for(c, http_run)
            missing = c.post("/v1/workspaces/ws/actions/nope/runs", json={})
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found.action"
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)

    over_cli = _what_ran(root, home, cli_run)
    over_http = _what_ran(root, home, http_run)
    assert over_cli == over_http
    assert over_http["model_override"] == "reviewer" and over_http["allowed_tools"] == ["Bash(echo:*)"]
    assert over_http["final"] == "the command's model answered"  # the command's model, not the default one
    assert over_http["outcomes"] and over_http["outcomes"][0][0] == "ToolCallCompleted"  # pyright: ignore[reportIndexIssue]
    assert "Say hello to Ada." in str(over_http["goal"])

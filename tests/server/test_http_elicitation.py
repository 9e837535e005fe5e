"""An MCP server's question mid-call (MCP elicitation) during a run served over HTTP, through a real `bearagent serve`
and a real MCP server that asks (tests/support/mcp_servers/asker.py): the question is listed with the approvals,
answered once through the approvals API (a bad answer is a 422 naming the field, a second one a 409, another
subject or workspace cannot see it), the server gets the answer, the log keeps who answered what, and the run's SSE
stream shows the question and its answer."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from httpx_sse import connect_sse
from tests.server.test_http_api import Server, gateway_token, start, wait_for
from tests.support.config_ws import isolated_env
from tests.support.mcp_helpers import server_in_workspace
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.cli import main

pytestmark = pytest.mark.timeout(180)  # a real server process, an MCP server per run

SCRIPT = """
turns:
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: staging}}]
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: prod}}]
  - text: "done"
"""
JWT_SECRET = "gateway-shared-secret-for-tests-0123456789"
ALICE = "runs:read runs:write approvals:write"


def asker_workspace(tmp: Path, script: str = SCRIPT) -> Path:
    agents = {"main": agent_md("Main.", mode="primary", tools="[]", mcp="[asker]")}
    root = scripted_workspace(tmp / "ws", script, agents=agents, config=CONFIG)
    (root / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"asker": {"command": sys.executable, "args": [str(server_in_workspace(root, "asker.py"))]}}}
        )
    )
    trusted = CliRunner().invoke(main, ["trust", "-w", str(root)], env=isolated_env(tmp / "home"))
    assert trusted.exit_code == 0, trusted.output
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("elicit")
    root = asker_workspace(tmp)
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    srv = start(tmp, config=config)
    try:
        yield srv
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def next_question(client: httpx.Client, run_id: str, after: set[str] = frozenset()) -> dict[str, object]:  # pyright: ignore[reportArgumentType]
    """The run's next question listed with the workspace's approvals (polls: the MCP server starts first)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for item in client.get("/v1/workspaces/ws/approvals").json()["approvals"]:
            if item["run_id"] == run_id and item.get("kind") == "elicitation" and item["approval_id"] not in after:
                return item
        run = client.get(f"/v1/runs/{run_id}").json()
        assert run["status"] in ("queued", "running"), run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} asked no question")


def start_run(client: httpx.Client) -> str:
    sid = client.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
    accepted = client.post(f"/v1/sessions/{sid}/runs", json={"prompt": "deploy it"})
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["run_id"])


@pytest.mark.slow
def test_a_servers_question_is_answered_over_the_approvals_api(server: Server) -> None:
    alice = gateway_token("alice", ALICE, ["ws"])
    reader = gateway_token("alice", "runs:read runs:write", ["ws"])  # alice again, without approvals:write
    bob = gateway_token("bob", ALICE, ["ws"])
    elsewhere = gateway_token("alice", ALICE, ["other"])
    with server.client(alice) as a, server.client(reader) as r, server.client(bob) as b, server.client(elsewhere) as e:
        run_id = start_run(a)
        first = next_question(a, run_id)
        assert first["server"] == "asker" and first["reason"] == "Really deploy to staging?"
        assert first["status"] == "pending" and first["choices"] == ["accept", "decline", "cancel"]
        schema = first["requested_schema"]
        assert isinstance(schema, dict) and set(schema["properties"]) == {"proceed", "reason"}  # pyright: ignore[reportUnknownArgumentType]
        assert a.get(f"/v1/runs/{run_id}").json()["status"] == "running"  # its call holds the question open
        url = f"/v1/runs/{run_id}/approvals/{first['approval_id']}"

        # a hostile peer: another subject, another workspace's token, a token without approvals:write
        assert b.post(url, json={"decision": "accept", "content": {"proceed": True}}).status_code == 404
        assert all(x["run_id"] != run_id for x in b.get("/v1/workspaces/ws/approvals").json()["approvals"])
        assert e.post(url, json={"decision": "accept", "content": {"proceed": True}}).status_code == 404
        denied = r.post(url, json={"decision": "accept", "content": {"proceed": True}})
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission.scope"

        # answers that do not fit the form name the field
        bad = a.post(url, json={"decision": "accept", "content": {"proceed": "yes"}})
        assert bad.status_code == 422, bad.text
        assert bad.json()["error"]["code"] == "validation.elicitation_content"
        assert "'proceed'" in bad.json()["error"]["message"]
        unknown = a.post(url, json={"decision": "accept", "content": {"proceed": True, "force": True}})
        assert unknown.status_code == 422 and "'force'" in unknown.json()["error"]["message"]
        missing = a.post(url, json={"decision": "accept", "content": {"reason": "x"}})
        assert missing.status_code == 422 and "'proceed'" in missing.json()["error"]["message"]
        tool_choice = a.post(url, json={"decision": "allow_once"})
        assert tool_choice.status_code == 422 and "accept, decline or cancel" in tool_choice.json()["error"]["message"]

        answered = a.post(url, json={"decision": "accept", "content": {"proceed": True, "reason": "staging is fine"}})
        assert answered.status_code == 202, answered.text
        assert answered.json()["answered_by"] == "alice" and answered.json()["continuing"] is True
        again = a.post(url, json={"decision": "decline"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "conflict.already_answered"

        second = next_question(a, run_id, {str(first["approval_id"])})
        assert second["reason"] == "Really deploy to prod?"
        declined = a.post(f"/v1/runs/{run_id}/approvals/{second['approval_id']}", json={"decision": "decline"})
        assert declined.status_code == 202, declined.text
        run = wait_for(a, run_id)
        assert run["final_text"] == "done"

        events = a.get(f"/v1/runs/{run_id}/events").json()["events"]
        results = [e["payload"]["result"]["content"] for e in events if e["event_type"] == "ToolCallCompleted"]
        assert "deploy staging: accept proceed=True reason=staging is fine" in results[0]
        assert "deploy prod: decline" in results[1]
        resolved = [e["payload"] for e in events if e["event_type"] == "ElicitationResolved"]
        assert all(x["waited_ms"] > 0 for x in resolved)  # the wait is not the run's wall time (reducer)
        assert [(x["action"], x["answered_by"], x.get("content")) for x in resolved] == [
            ("accept", "alice", {"proceed": True, "reason": "staging is fine"}),
            ("decline", "alice", None),
        ]
        history = a.get(f"/v1/runs/{run_id}/approvals").json()["approvals"]
        assert [(h["kind"], h["status"], h["decision"]) for h in history] == [
            ("elicitation", "answered", "accept"),
            ("elicitation", "answered", "decline"),
        ]
        late = a.post(url, json={"decision": "cancel"})
        assert late.status_code == 409

        # the run's SSE stream shows each question and its answer
        seen: list[tuple[str, dict[str, object]]] = []
        with connect_sse(a, "GET", f"/v1/runs/{run_id}/events") as source:
            for sse in source.iter_sse():
                if sse.event.startswith("elicitation."):
                    seen.append((sse.event, json.loads(sse.data)))
        assert [(k, d.get("action"), d.get("answered_by")) for k, d in seen] == [
            ("elicitation.requested", None, None),
            ("elicitation.resolved", "accept", "alice"),
            ("elicitation.requested", None, None),
            ("elicitation.resolved", "decline", "alice"),
        ]
        assert seen[0][1]["elicitation_id"] == first["approval_id"] and seen[0][1]["server"] == "asker"

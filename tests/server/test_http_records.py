"""Seed 002's records through a real `bearagent serve`: session messages, RunSteps, the fields runs and sessions
carry (`initiator_ref`, `trigger_ref`, `metadata`, `auth_context`, `status`, `last_run_at`), scopes and isolation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest
from tests.server.test_http_api import JWT_SECRET, Server, gateway_token, start, wait_for
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "All read."
  - text: "second answer"
"""
ALICE = "runs:read runs:write actions:run"


def _at(value: object) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("records")
    root = scripted_workspace(
        tmp / "ws", SCRIPT, agents={"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    )
    write(root, "notes.md", "hello notes\n")
    write(root, ".bearagent/actions/greet.md", "---\ndescription: Greets.\n---\nRead the notes.\n")
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


def test_sessions_and_runs_carry_their_record_fields(server: Server) -> None:
    with server.client(gateway_token("alice", ALICE, ["ws"])) as a:
        session = a.post("/v1/workspaces/ws/sessions", json={"title": "notes"}).json()
        assert session["subject_ref"] == "alice" and session["status"] == "active"
        assert session["last_run_at"] is None
        assert session["auth_context"] == {
            "subject_ref": "alice",
            "scopes": sorted(ALICE.split()),
            "workspace_access": ["ws"],
            "auth_source": "jwt",
            "metadata": {},
        }
        run_id = a.post(f"/v1/sessions/{session['id']}/runs", json={"prompt": "read the notes"}).json()["run_id"]
        run = wait_for(a, run_id)
        assert run["workspace_id"] == "ws" and run["initiator_ref"] == "alice" and run["trigger_ref"] is None
        assert run["trigger_type"] == "message"
        metadata = run["metadata"]
        assert isinstance(metadata, dict) and metadata["model_ref"] == "workspace/scripted" and metadata["depth"] == 0
        again = a.get(f"/v1/sessions/{session['id']}").json()
        assert _at(again["last_run_at"]) == _at(run["created_at"]) and again["status"] == "active"
        assert again["auth_context"] == session["auth_context"]
        action = a.post("/v1/workspaces/ws/actions/greet/runs", json={})
        detached = wait_for(a, action.json()["run_id"])
        assert detached["trigger_type"] == "api_action" and detached["trigger_ref"] == "greet"
        assert detached["initiator_ref"] == "alice" and detached["session_id"] is None


def test_session_messages_are_the_conversation_as_records(server: Server) -> None:
    alice = gateway_token("alice", ALICE, ["ws"])
    bob = gateway_token("bob", ALICE, ["ws"])
    no_read = gateway_token("alice", "actions:run", ["ws"])
    with server.client(alice) as a, server.client(bob) as b, server.client(no_read) as n:
        sid = a.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
        first = a.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read the notes"}).json()["run_id"]
        wait_for(a, first)
        second = a.post(f"/v1/sessions/{sid}/runs", json={"prompt": "and now?"}).json()["run_id"]
        wait_for(a, second)
        messages = a.get(f"/v1/sessions/{sid}/messages").json()["messages"]
        assert [(m["role"], m["run_id"]) for m in messages] == [
            ("user", first),
            ("assistant", first),
            ("tool", first),
            ("assistant", first),
            ("user", second),
            ("assistant", second),
        ]
        assert all(m["session_id"] == sid for m in messages) and len({m["id"] for m in messages}) == 6
        assert messages[0]["content"] == [{"type": "text", "text": "read the notes"}]
        call = messages[1]["content"][1]
        assert call["type"] == "tool-call" and call["tool_name"] == "Read"
        assert call["arguments"] == {"file_path": "notes.md"}
        result = messages[2]["content"][0]
        assert result["type"] == "tool-result" and result["tool_call_id"] == call["tool_call_id"]
        assert "hello notes" in result["result"] and result["is_error"] is False
        assert messages[5]["content"] == [{"type": "text", "text": "second answer"}]
        assert messages[1]["metadata"]["event_type"] == "ModelCallCompleted"
        assert [m["created_at"] for m in messages] == sorted(m["created_at"] for m in messages)
        assert b.get(f"/v1/sessions/{sid}/messages").status_code == 404
        assert n.get(f"/v1/sessions/{sid}/messages").status_code == 403


def test_run_steps_are_a_step_level_projection(server: Server) -> None:
    alice = gateway_token("alice", ALICE, ["ws"])
    bob = gateway_token("bob", ALICE, ["ws"])
    with server.client(alice) as a, server.client(bob) as b:
        sid = a.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
        run_id = a.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read the notes"}).json()["run_id"]
        wait_for(a, run_id)
        body = a.get(f"/v1/runs/{run_id}/steps").json()
        steps = body["steps"]
        assert body["status"] == "succeeded"
        assert [(s["seq"], s["step_type"], s["status"]) for s in steps] == [
            (1, "model_call", "succeeded"),
            (2, "tool_call", "succeeded"),
            (3, "model_call", "succeeded"),
        ]
        tool = steps[1]
        assert tool["name"] == "Read" and tool["agent_name"] == "main" and tool["run_id"] == run_id
        assert tool["input"]["arguments"] == {"file_path": "notes.md"}
        assert "hello notes" in tool["output"]["content"]
        assert tool["started_at"] <= tool["ended_at"] and tool["started_seq"] < tool["ended_seq"]
        assert steps[0]["output"]["text"] == "Reading." and steps[2]["output"]["text"] == "All read."
        events = a.get(f"/v1/runs/{run_id}/events").json()["events"]
        by_seq = {e["sequence"]: e for e in events}
        assert by_seq[tool["started_seq"]]["event_type"] == "ToolCallRequested"
        assert by_seq[tool["ended_seq"]]["event_type"] == "ToolCallCompleted"
        assert b.get(f"/v1/runs/{run_id}/steps").status_code == 404
        assert a.get("/v1/runs/not-a-run/steps").status_code == 404

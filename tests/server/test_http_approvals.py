"""Approvals over HTTP through a real `bearagent serve`: a server run that asks waits, the approval is listed and
answered over HTTP, the run finishes in the background; double, late and misdirected answers are 409; scopes and
isolation; a waiting run cancelled, rejected against and interrupted; the run's SSE stream shows the wait and the
answer (`approval.requested` / `approval.resolved`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse
from tests.server.test_http_api import Server, gateway_token, start, wait_for
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

WRITE = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""
JWT_SECRET = "gateway-shared-secret-for-tests-0123456789"
ALICE = "runs:read runs:write approvals:write"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    tmp = tmp_path_factory.mktemp("approvals")
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    root = scripted_workspace(tmp / "ws", WRITE, agents=agents, config=CONFIG + "permission_mode: default\n")
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    srv = start(tmp, config=config)
    try:
        yield srv, root
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def until_waiting(client: httpx.Client, run_id: str) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run = client.get(f"/v1/runs/{run_id}").json()
        if run["status"] == "waiting":
            return run
        assert run["status"] in ("queued", "running"), run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not start waiting")


def waiting_run(client: httpx.Client, **body: object) -> tuple[str, str]:
    sid = client.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
    accepted = client.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write it", **body})
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["run_id"]
    until_waiting(client, run_id)
    return sid, run_id


def test_a_run_that_asks_waits_and_an_answer_over_http_finishes_it(server: tuple[Server, Path]) -> None:
    srv, root = server
    alice = gateway_token("alice", ALICE, ["ws"])
    with srv.client(alice) as a:
        _, run_id = waiting_run(a)
        assert not (root / "out.txt").exists()
        listed = a.get("/v1/workspaces/ws/approvals").json()["approvals"]
        (approval,) = [x for x in listed if x["run_id"] == run_id]
        assert approval["tool"] == "Write" and approval["arguments"]["file_path"] == "out.txt"
        assert approval["reason"] and approval["suggested_rule"] and approval["requested_at"]
        assert approval["status"] == "pending" and approval["decision"] is None
        assert a.get(f"/v1/runs/{run_id}").json()["pending_approval"]["approval_id"] == approval["approval_id"]
        answered = a.post(f"/v1/runs/{run_id}/approvals/{approval['approval_id']}", json={"decision": "allow_once"})
        assert answered.status_code == 202, answered.text
        assert answered.json()["continuing"] is True and answered.json()["answered_by"] == "alice"
        run = wait_for(a, run_id)
        assert run["final_text"] == "Done."
        assert (root / "out.txt").read_text() == "made\n"
        again = a.post(f"/v1/runs/{run_id}/approvals/{approval['approval_id']}", json={"decision": "deny"})
        assert again.status_code == 409
        assert set(again.json()["error"]) == {"category", "code", "message", "retryable"}
        assert again.json()["error"]["code"] == "conflict.no_pending_approval"
        history = a.get(f"/v1/runs/{run_id}/approvals").json()["approvals"]
        assert [(h["status"], h["decision"], h["answered_by"]) for h in history] == [
            ("answered", "allow_once", "alice")
        ]
        assert all(x["run_id"] != run_id for x in a.get("/v1/workspaces/ws/approvals").json()["approvals"])
        (root / "out.txt").unlink()


def test_wrong_answers_scopes_and_other_subjects(server: tuple[Server, Path]) -> None:
    srv, root = server
    alice = gateway_token("alice", ALICE, ["ws"])
    reader = gateway_token("alice", "runs:read runs:write", ["ws"])  # alice again, without approvals:write
    bob = gateway_token("bob", ALICE, ["ws"])
    elsewhere = gateway_token("alice", ALICE, ["other"])
    with srv.client(alice) as a, srv.client(reader) as r, srv.client(bob) as b, srv.client(elsewhere) as e:
        _, run_id = waiting_run(a)
        (approval,) = [x for x in a.get("/v1/workspaces/ws/approvals").json()["approvals"] if x["run_id"] == run_id]
        url = f"/v1/runs/{run_id}/approvals/{approval['approval_id']}"
        denied = r.post(url, json={"decision": "allow_once"})
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission.scope"
        assert [x["run_id"] for x in r.get("/v1/workspaces/ws/approvals").json()["approvals"]].count(run_id) == 1
        assert b.post(url, json={"decision": "allow_once"}).status_code == 404  # not hers to see
        assert all(x["run_id"] != run_id for x in b.get("/v1/workspaces/ws/approvals").json()["approvals"])
        assert b.get(f"/v1/runs/{run_id}/approvals").status_code == 404
        assert e.post(url, json={"decision": "allow_once"}).status_code == 404
        assert e.get("/v1/workspaces/ws/approvals").status_code == 404
        wrong = a.post(f"/v1/runs/{run_id}/approvals/ap_000000000000", json={"decision": "allow_once"})
        assert wrong.status_code == 409 and wrong.json()["error"]["code"] == "conflict.wrong_approval"
        assert approval["approval_id"] in wrong.json()["error"]["message"]  # says what the run waits for
        invalid = a.post(url, json={"decision": "maybe"})
        assert invalid.status_code == 422
        assert a.post(url, json={"decision": "deny", "message": "not now"}).status_code == 202
        run = wait_for(a, run_id)
        assert not (root / "out.txt").exists()  # denied: the call never ran, the model was told
        events = a.get(f"/v1/runs/{run_id}/events").json()["events"]
        resolved = [e["payload"] for e in events if e["event_type"] == "ApprovalResolved"]
        seals = [r.pop("seal") for r in resolved]  # the server user's seal over the answer (trust/seals.py)
        assert resolved == [
            {"approval_id": approval["approval_id"], "decision": "deny", "answered_by": "alice", "message": "not now"}
        ]
        assert len(seals[0]) == 64
        assert run["final_text"] == "Done."


def test_without_wait_approvals_the_call_is_denied_at_once(server: tuple[Server, Path]) -> None:
    srv, root = server
    with srv.client() as c:
        sid = c.post("/v1/workspaces/ws/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write it", "wait_approvals": False}).json()
        run = wait_for(c, run_id["run_id"])
        assert run["pending_approval"] is None and not (root / "out.txt").exists()
        types = [e["event_type"] for e in c.get(f"/v1/runs/{run_id['run_id']}/events").json()["events"]]
        assert "ApprovalRequested" not in types and "ToolCallFailed" in types


def test_a_waiting_run_is_cancelled_rejected_against_and_interrupted(server: tuple[Server, Path]) -> None:
    srv, root = server
    with srv.client() as c:
        _, run_id = waiting_run(c)
        cancelled = c.post(f"/v1/runs/{run_id}/cancel")
        assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
        assert c.get(f"/v1/runs/{run_id}").json()["status"] == "cancelled"
        sid, waiting = waiting_run(c)
        busy = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "again", "strategy": "reject"})
        assert busy.status_code == 400 and busy.json()["error"]["code"] == "invalid_request.session_busy"
        assert "waiting for approval" in busy.json()["error"]["message"]
        replaced = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "instead", "strategy": "interrupt"})
        assert replaced.status_code == 202, replaced.text
        assert c.get(f"/v1/runs/{waiting}").json()["status"] == "cancelled"
        wait_for(c, replaced.json()["run_id"])
    assert not (root / "out.txt").exists()


def _frames(client: httpx.Client, run_id: str, *, last_event_id: str | None = None) -> Iterator[ServerSentEvent]:
    headers = {"accept": "text/event-stream"}
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    with connect_sse(client, "GET", f"/v1/runs/{run_id}/events", headers=headers) as source:
        yield from source.iter_sse()


def test_the_run_stream_shows_the_wait_and_the_answer_without_polling(server: tuple[Server, Path]) -> None:
    srv, root = server
    with srv.client() as c:
        _, run_id = waiting_run(c)
        seen: list[tuple[str, dict[str, object]]] = []
        for sse in _frames(c, run_id):  # the stream stays open while the run waits
            if sse.event == "token":
                continue
            data = json.loads(sse.data)
            seen.append((sse.id, data))
            if sse.event == "approval.requested":
                assert data["run_id"] == run_id and data["tool_name"] == "Write"
                assert data["arguments"] == {"file_path": "out.txt", "content": "made\n"}
                assert data["choices"] == ["allow_once", "allow_always", "deny"] and data["suggested_rule"]
                assert sse.id == f"{data['seq']}-1"
                answered = c.post(f"/v1/runs/{run_id}/approvals/{data['approval_id']}", json={"decision": "allow_once"})
                assert answered.status_code == 202, answered.text
        types = [str(d["type"]) for _, d in seen]
        assert types == [
            "run.started",
            "step",
            "tool_call",
            "approval.requested",
            "approval.resolved",
            "tool_result",
            "step",
            "final",
            "run.succeeded",
        ]
        asked, resolved = seen[3][1], seen[4][1]
        assert resolved["approval_id"] == asked["approval_id"] and resolved["decision"] == "allow_once"
        assert resolved["answered_by"] == "local" and resolved["tool_call_id"] == asked["tool_call_id"]
        assert resolved["tool_call_id"] == seen[2][1]["id"]
        # resumed right after the request: the answer is the next frame, exactly once
        rest = [json.loads(s.data)["type"] for s in _frames(c, run_id, last_event_id=seen[3][0]) if s.event != "token"]
        assert rest == types[4:]
    (root / "out.txt").unlink()

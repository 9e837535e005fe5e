"""`POST /v1/sessions/{id}/rewind` and `/fork` on a real `bearagent serve` process: a dry run changes nothing, a
file changed since by someone else is named in a 409 problem body, `force` overwrites it, the conversation's
rewind is a fact in the log, a fork is a new session from a point of the log (files restored on request), and the
routes keep the scopes and the isolation of the other session routes; `GET /v1/sessions/{id}/messages` follows the
rewinds and the fork's origin, and `GET /v1/runs/{id}/diff` shows a run's file changes. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.test_http_api import JWT_SECRET, Server, gateway_token, start, wait_for
from tests.support import postgres_cluster
from tests.support.run_ws import agent_md, scripted_workspace


def _write(text: str) -> str:
    call = {"name": "Write", "arguments": {"file_path": "notes.txt", "content": text}}
    return f"  - tool_calls: [{json.dumps(call)}]\n"


SCRIPT = (
    "turns:\n"
    + _write("from run one\n")
    + "  - text: one done\n"
    + _write("from run two\n")
    + "  - text: two done\n"
    + "".join(f"  - text: more {i}\n" for i in range(6))
)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """A server over the workspace's SQLite log, or over a PostgreSQL database (`BEARAGENT_DATABASE_URL`)."""
    env: dict[str, str] = {}
    if request.param == "postgres":
        postgres_cluster.require()
        env["BEARAGENT_DATABASE_URL"] = postgres_cluster.new_database()
    root = scripted_workspace(
        tmp_path / "alpha", SCRIPT, agents={"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    )
    config = f"""
workspaces:
  - {{id: alpha, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    srv = start(tmp_path, config=config, env=env)
    try:
        yield srv, root
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


@pytest.mark.slow
def test_rewind_and_fork_a_session_over_http(served: tuple[Server, Path]) -> None:
    server, root = served
    notes = root / "notes.txt"
    with server.client() as c:
        sid = c.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        r1 = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write one"}).json()["run_id"]
        wait_for(c, r1)
        r2 = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write two"}).json()["run_id"]
        wait_for(c, r2)
        assert notes.read_text() == "from run two\n"

        diff = c.get(f"/v1/runs/{r2}/diff")
        assert diff.status_code == 200, diff.text
        (changed,) = diff.json()["files"]
        assert changed["path"] == "notes.txt" and changed["action"] == "modified" and changed["tool_name"] == "Write"
        assert "-from run one\n+from run two\n" in changed["diff"] and diff.json()["cut"] == []
        call = changed["tool_call_id"]
        assert c.get(f"/v1/runs/{r2}/diff", params={"tool_call_id": call[:8]}).json()["tool_call_id"] == call
        missing = c.get(f"/v1/runs/{r2}/diff", params={"tool_call_id": "ffffffff"})
        assert missing.status_code == 404 and "ffffffff" in missing.json()["error"]["message"], missing.text

        dry = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": r2, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert dry.json()["changes"] == [{"path": "notes.txt", "action": "restore", "changed_since": False}]
        assert dry.json()["conversation"] == {"run_id": r2, "sequence": None}
        assert notes.read_text() == "from run two\n"

        notes.write_text("edited by hand\n")
        refused = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": r2})
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["category"] == "conflict" and "notes.txt" in error["message"] and "force" in error["message"]
        assert notes.read_text() == "edited by hand\n"  # nothing changed

        forced = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": r2, "force": True})
        assert forced.status_code == 200, forced.text
        assert forced.json()["forced"] == ["notes.txt"]
        assert notes.read_text() == "from run one\n"
        types = [e["event_type"] for e in c.get(f"/v1/runs/{r2}/events").json()["events"]]
        assert types[-2:] == ["FilesRewound", "ConversationRewound"]
        again = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": r2})
        assert again.status_code == 200 and again.json()["nothing_to_do"] is True, again.text
        # the session's messages are the rewound conversation (run one's); every run's on request
        listed = c.get(f"/v1/sessions/{sid}/messages").json()["messages"]
        assert {m["run_id"] for m in listed} == {r1} and listed[0]["content"][0]["text"] == "write one"
        everything = c.get(f"/v1/sessions/{sid}/messages", params={"include_rewound": "true"}).json()["messages"]
        assert {m["run_id"] for m in everything} == {r1, r2}
        assert [m["id"] for m in everything if m["run_id"] == r1] == [m["id"] for m in listed]

        # code only, to before run one: the file it created goes
        code = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": r1, "restore": "code"})
        assert code.status_code == 200 and code.json()["conversation"] is None, code.text
        assert not notes.exists()

        # a fork after run one, its files restored to that point
        fork = c.post(f"/v1/sessions/{sid}/fork", json={"run_id": r1, "restore_files": True})
        assert fork.status_code == 201, fork.text
        new = fork.json()
        assert new["id"] != sid and new["forked_from"] == {"session_id": sid, "run_id": r1, "sequence": None}
        assert new["restored"] == [{"path": "notes.txt", "action": "create", "changed_since": False}]
        assert notes.read_text() == "from run one\n"
        run = c.post(f"/v1/sessions/{new['id']}/runs", json={"prompt": "go on"}).json()["run_id"]
        wait_for(c, run)
        # the fork's messages: its origin's through run one, then its own run's
        forked = c.get(f"/v1/sessions/{new['id']}/messages").json()["messages"]
        assert [m["run_id"] for m in forked] == [r1] * len(listed) + [run] * (len(forked) - len(listed))
        assert forked[len(listed)]["content"][0]["text"] == "go on"

        bad = c.post(f"/v1/sessions/{sid}/fork", json={"run_id": r1, "sequence": 999})
        assert bad.status_code == 400 and "has no event 999" in bad.json()["error"]["message"], bad.text
        unknown = c.post(f"/v1/sessions/{sid}/rewind", json={"run_id": "nope"})
        assert unknown.status_code == 404, unknown.text

        paths = c.get("/openapi.json").json()["paths"]
        assert "/v1/sessions/{session_id}/rewind" in paths and "/v1/sessions/{session_id}/fork" in paths


@pytest.mark.slow
def test_scopes_and_isolation(served: tuple[Server, Path]) -> None:
    server, _ = served
    alice = gateway_token("alice", "runs:read runs:write", ["alpha"])
    bob = gateway_token("bob", "runs:read runs:write", ["alpha"])
    alice_reader = gateway_token("alice", "runs:read", ["alpha"])
    with server.client(alice) as a, server.client(bob) as b, server.client(alice_reader) as r:
        sid = a.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        mine = a.post(f"/v1/sessions/{sid}/runs", json={"prompt": "mine"}).json()["run_id"]
        wait_for(a, mine)
        assert r.get(f"/v1/runs/{mine}/diff").status_code == 200  # reading is runs:read
        assert b.get(f"/v1/runs/{mine}/diff").status_code == 404  # not his: not found
        for route in ("rewind", "fork"):
            assert b.post(f"/v1/sessions/{sid}/{route}", json={}).status_code == 404  # not hers: not found
            denied = r.post(f"/v1/sessions/{sid}/{route}", json={})
            assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission.scope"
        fork = a.post(f"/v1/sessions/{sid}/fork", json={})
        assert fork.status_code == 201, fork.text
        assert b.get(f"/v1/sessions/{fork.json()['id']}").status_code == 404  # the fork is alice's too
        assert a.get(f"/v1/sessions/{fork.json()['id']}").status_code == 200

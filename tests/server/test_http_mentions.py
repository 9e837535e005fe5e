"""`@path` mentions over HTTP (`POST /v1/sessions/{id}/runs`), through a real `bearagent serve` on 127.0.0.1: the
CLI's rule (service/mentions.py) attaches the file, `"mentions": false` sends the prompt as typed, a path out of the
workspace is refused before anything runs, and the response names what was attached and what was cut."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.test_http_api import SCRIPT, Server, start, wait_for
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.service.mentions import MAX_FILE_BYTES


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "alpha", SCRIPT, agents=agents)
    write(root, "notes.txt", "the secret word is pelican\n")
    write(root, "big.txt", "x" * (MAX_FILE_BYTES + 10))
    write(tmp_path, "outside.txt", "outside the workspace\n")
    srv = start(tmp_path, config=f"workspaces:\n  - {{id: alpha, path: {root}}}\n")
    try:
        yield srv, root
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def _user_texts(server: Server, sid: str) -> list[str]:
    with server.client() as c:
        messages = c.get(f"/v1/sessions/{sid}/messages").json()["messages"]
    return [str(m) for m in messages if m.get("role") == "user"]


def test_a_mention_attaches_the_file_and_false_sends_the_prompt_as_typed(served: tuple[Server, Path]) -> None:
    server, _ = served
    with server.client() as c:
        sid = c.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        accepted = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "explain @notes.txt"})
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["attached"] == ["notes.txt"] and accepted.json()["notes"] == []
        wait_for(c, accepted.json()["run_id"])
        plain = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "explain @notes.txt", "mentions": False})
        assert plain.status_code == 202, plain.text
        assert plain.json()["attached"] == []
        wait_for(c, plain.json()["run_id"])
    first, second = _user_texts(server, sid)
    assert "pelican" in first and '<file path="notes.txt">' in first
    assert "pelican" not in second and "@notes.txt" in second


def test_a_path_out_of_the_workspace_is_refused_and_a_long_file_is_cut_with_a_note(
    served: tuple[Server, Path],
) -> None:
    server, _ = served
    with server.client() as c:
        sid = c.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        refused = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "read @../outside.txt"})
        assert refused.status_code == 400, refused.text
        body = refused.json()
        assert "mention_refused" in str(body) and "../outside.txt" in str(body), body
        assert c.get("/v1/workspaces/alpha/runs").json()["runs"] == []  # nothing was queued
        cut = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "summarise @big.txt"})
        assert cut.status_code == 202, cut.text
        assert cut.json()["attached"] == ["big.txt"] and any("big.txt" in n for n in cut.json()["notes"])
        wait_for(c, cut.json()["run_id"])
    assert "outside the workspace" not in "".join(_user_texts(server, sid))

"""`bearagent serve` as a real server process on 127.0.0.1: auth, scopes, isolation, sessions, background runs,
events as JSON and as resumable SSE, cancellation, strategies, actions, listings, errors and limits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from httpx_sse import connect_sse
from tests.support.config_ws import write
from tests.support.run_ws import agent_md, scripted_workspace

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
TOKEN = "local-test-token-3c1e"
JWT_SECRET = "gateway-shared-secret-for-tests-0123456789"
SCRIPT = """
turns:
  - text: "first answer"
  - text: "second answer"
  - text: "third answer"
  - text: "fourth answer"
"""
# the slow turn is held until the test creates RELEASE beside the script (never, for a run the test cancels): a fixed
# delay raced the test, which a loaded machine can make slower than the delay
RELEASE = "release-slow-turn"
SLOW = f"""
turns:
  - text: "slow answer"
    wait_for_file: {RELEASE}
    wait_timeout_ms: 120000
  - text: "after the slow one"
"""


@dataclass
class Server:
    base: str
    proc: subprocess.Popen[str]

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)


def start(tmp_path: Path, *args: str, config: str | None = None, env: dict[str, str] | None = None) -> Server:
    home = tmp_path / "home"
    (home / "bearagent").mkdir(parents=True, exist_ok=True)
    extra: list[str] = []
    if config is not None:
        path = tmp_path / "server.yaml"
        path.write_text(config)
        extra = ["--config", str(path)]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "BEARAGENT_SERVE_TOKEN": TOKEN,
        **(env or {}),
    }
    proc = subprocess.Popen(
        [BEARAGENT, "serve", "--port", "0", *extra, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        if match:
            return Server(match.group(1), proc)
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {line}{proc.stderr.read()}")
    proc.kill()
    raise AssertionError("serve did not start")


@pytest.fixture
def workspaces(tmp_path: Path) -> tuple[Path, Path]:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    one = scripted_workspace(tmp_path / "alpha", SCRIPT, agents=agents)
    two = scripted_workspace(tmp_path / "beta", SLOW, agents=agents)
    write(one, ".bearagent/actions/greet.md", "---\ndescription: Greets.\n---\nSay hello.\n")
    return one, two


@pytest.fixture
def server(tmp_path: Path, workspaces: tuple[Path, Path]) -> Iterator[Server]:
    config = f"""
workspaces:
  - {{id: alpha, path: {workspaces[0]}, name: Alpha, external_ref: "gh:acme/alpha"}}
  - {{id: beta, path: {workspaces[1]}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    srv = start(tmp_path, config=config)
    try:
        yield srv
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def gateway_token(sub: str, scopes: str, workspaces: list[str]) -> str:
    claims = {"sub": sub, "scope": scopes, "workspaces": workspaces, "aud": "bearagent", "exp": int(time.time()) + 600}
    return jwt.encode(claims, JWT_SECRET, algorithm="HS256")


def wait_for(client: httpx.Client, run_id: str, status: str = "succeeded") -> dict[str, object]:
    # a scripted run ends within a second on an idle machine; the bound only allows for a loaded one (the server and
    # its runs share two cores with the other xdist worker and whatever else runs), it is not a speed figure
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run = client.get(f"/v1/runs/{run_id}").json()
        if run.get("status") in ("succeeded", "failed", "cancelled"):
            assert run["status"] == status, run
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


def test_health_needs_no_token_and_everything_else_does(server: Server) -> None:
    with server.client(None) as anonymous:
        assert anonymous.get("/health").json()["status"] == "ok"
        refused = anonymous.get("/v1/workspaces")
        assert refused.status_code == 401
        assert refused.json()["error"]["category"] == "authentication"
    with server.client("wrong") as bad:
        assert bad.get("/v1/workspaces").status_code == 401
    with server.client() as local:
        listed = local.get("/v1/workspaces").json()["workspaces"]
        assert [w["id"] for w in listed] == ["alpha", "beta"]
        assert listed[0]["external_ref"] == "gh:acme/alpha" and "root_path" in listed[0]  # local token: admin
        assert local.get("/openapi.json").json()["openapi"].startswith("3.1")


def test_a_session_runs_in_the_background_and_its_events_come_as_json(server: Server) -> None:
    with server.client() as c:
        session = c.post("/v1/workspaces/alpha/sessions", json={"title": "first"})
        assert session.status_code == 201, session.text
        sid = session.json()["id"]
        assert session.json()["title"] == "first"
        accepted = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hello"})
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        run = wait_for(c, run_id)
        assert run["workspace_id"] == "alpha" and run["final_text"] == "first answer"
        budgets = run["budgets"]
        assert isinstance(budgets, dict) and budgets["max_model_iterations"]["used"] == 1  # pyright: ignore[reportUnknownMemberType]
        page = c.get(f"/v1/runs/{run_id}/events").json()
        types = [e["event_type"] for e in page["events"]]
        assert types[0] == "RunCreated" and types[-1] == "RunSucceeded"
        later = c.get(f"/v1/runs/{run_id}/events", params={"after": 2}).json()["events"]
        assert [e["sequence"] for e in later] == list(range(3, len(types) + 1))
        again = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "and again"})
        assert wait_for(c, again.json()["run_id"])["final_text"] == "second answer"
        listed = c.get("/v1/workspaces/alpha/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [sid]


def test_sse_is_resumable_by_last_event_id_without_gaps_or_duplicates(server: Server) -> None:
    with server.client() as c:
        sid = c.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hello"}).json()["run_id"]
        wait_for(c, run_id)
        with connect_sse(c, "GET", f"/v1/runs/{run_id}/events") as source:
            whole = [(sse.id, sse.event, sse.data) for sse in source.iter_sse() if sse.id]
        assert whole[0][1] == "run.started" and whole[-1][1] == "run.succeeded"
        for sse_id, kind, data in whole:
            event = json.loads(data)
            assert event["type"] == kind and event["run_id"] == run_id and sse_id.startswith(f"{event['seq']}-")
        for cut in range(1, len(whole)):  # drop the connection after every event in turn, then resume
            resumed_from = whole[cut - 1][0]
            with connect_sse(c, "GET", f"/v1/runs/{run_id}/events", headers={"last-event-id": resumed_from}) as source:
                rest = [(sse.id, sse.event, sse.data) for sse in source.iter_sse() if sse.id]
            assert whole[:cut] + rest == whole


def test_sse_of_a_live_run_ends_with_its_terminal_event(server: Server, workspaces: tuple[Path, Path]) -> None:
    with server.client() as c:
        sid = c.post("/v1/workspaces/beta/sessions", json={}).json()["id"]
        run_id = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "slowly"}).json()["run_id"]
        kinds: list[str] = []
        with connect_sse(c, "GET", f"/v1/runs/{run_id}/events") as source:
            for sse in source.iter_sse():
                if not kinds:  # the stream is open on a live run (its model turn is held): now let it answer
                    assert c.get(f"/v1/runs/{run_id}").json()["status"] == "running"
                    (workspaces[1] / ".bearagent" / RELEASE).touch()
                kinds.append(sse.event)
        assert kinds[0] == "run.started" and kinds[-1] == "run.succeeded" and "token" in kinds


def test_a_run_can_be_cancelled_and_strategies_decide_a_second_message(
    server: Server, workspaces: tuple[Path, Path]
) -> None:
    # the slow turn is held until both slow runs are cancelled: each can only end by being cancelled, however slow
    # the machine; then the replacing run (which asks the same first turn again) is let through
    with server.client() as c:
        sid = c.post("/v1/workspaces/beta/sessions", json={}).json()["id"]
        first = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "slowly"}).json()["run_id"]
        busy = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "now", "strategy": "reject"})
        assert busy.status_code == 400 and busy.json()["error"]["code"] == "invalid_request.session_busy"
        assert c.post(f"/v1/runs/{first}/cancel").status_code == 202
        wait_for(c, first, "cancelled")
        sid2 = c.post("/v1/workspaces/beta/sessions", json={}).json()["id"]
        slow = c.post(f"/v1/sessions/{sid2}/runs", json={"prompt": "slowly"}).json()["run_id"]
        replaced = c.post(f"/v1/sessions/{sid2}/runs", json={"prompt": "instead", "strategy": "interrupt"}).json()
        wait_for(c, slow, "cancelled")
        assert c.get(f"/v1/runs/{replaced['run_id']}").json()["status"] in ("queued", "running")
        (workspaces[1] / ".bearagent" / RELEASE).touch()
        wait_for(c, replaced["run_id"])


def test_callers_see_only_their_workspaces_and_sessions(server: Server) -> None:
    alice = gateway_token("alice", "runs:read runs:write", ["alpha"])
    bob = gateway_token("bob", "runs:read runs:write", ["alpha"])
    reader = gateway_token("carol", "runs:read", ["alpha"])
    with server.client(alice) as a, server.client(bob) as b, server.client(reader) as r:
        assert [w["id"] for w in a.get("/v1/workspaces").json()["workspaces"]] == ["alpha"]
        assert "root_path" not in a.get("/v1/workspaces").json()["workspaces"][0]
        assert a.post("/v1/workspaces/beta/sessions", json={}).status_code == 404  # not 403: it does not exist for her
        sid = a.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        run_id = a.post(f"/v1/sessions/{sid}/runs", json={"prompt": "mine"}).json()["run_id"]
        wait_for(a, run_id)
        assert b.get(f"/v1/sessions/{sid}").status_code == 404
        assert b.get(f"/v1/runs/{run_id}").status_code == 404
        assert b.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hijack"}).status_code == 404
        assert b.get("/v1/workspaces/alpha/sessions").json()["sessions"] == []
        denied = r.post("/v1/workspaces/alpha/sessions", json={})
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "permission.scope"
        assert r.post("/v1/workspaces/alpha/actions/greet/runs", json={}).status_code == 403


def test_actions_and_listings(server: Server) -> None:
    with server.client() as c:
        assert [a["name"] for a in c.get("/v1/workspaces/alpha/actions").json()["actions"]] == ["greet"]
        accepted = c.post("/v1/workspaces/alpha/actions/greet/runs", json={"inputs": {}})
        assert accepted.status_code == 202, accepted.text
        run = wait_for(c, accepted.json()["run_id"])
        assert run["trigger_type"] == "api_action" and run["session_id"] is None
        assert "main" in [a["name"] for a in c.get("/v1/workspaces/alpha/agents").json()["agents"]]
        assert "Read" in [t["name"] for t in c.get("/v1/workspaces/alpha/tools").json()["tools"]]
        assert c.get("/v1/workspaces/alpha/skills").status_code == 200


def test_errors_are_json_with_the_right_status(server: Server) -> None:
    with server.client() as c:
        missing = c.get("/v1/runs/not-a-run")
        assert missing.status_code == 404 and set(missing.json()["error"]) == {
            "category",
            "code",
            "message",
            "retryable",
        }
        sid = c.post("/v1/workspaces/alpha/sessions", json={}).json()["id"]
        invalid = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": ""})
        assert invalid.status_code == 422 and invalid.json()["error"]["category"] == "validation"
        huge = c.post(
            f"/v1/sessions/{sid}/runs", content=b"x" * 2_000_000, headers={"content-type": "application/json"}
        )
        assert huge.status_code == 413
        unknown = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "hi", "agent": "nobody"})
        assert unknown.status_code == 404 and "nobody" in unknown.json()["error"]["message"]


def test_an_untrusted_workspace_is_refused_with_the_trust_command(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", SCRIPT)
    write(
        ws,
        ".bearagent/config.yaml",
        "default_model: evil\nmodels:\n  evil: {provider: openai, base_url: 'http://127.0.0.1:9/v1'}\n",
    )
    srv = start(tmp_path, "-w", str(ws))
    try:
        with srv.client() as c:
            refused = c.post("/v1/workspaces/ws/sessions", json={})
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission.untrusted_workspace"
            assert "bearagent trust -w" in refused.json()["error"]["message"]
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def test_a_non_loopback_bind_without_gateway_auth_is_refused(tmp_path: Path, workspaces: tuple[Path, Path]) -> None:
    result = subprocess.run(
        [BEARAGENT, "serve", "--host", "0.0.0.0", "-w", str(workspaces[0])],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "BEARAGENT_HOME": str(tmp_path / "h")},
        check=False,
    )
    assert result.returncode == 2 and "refusing to bind 0.0.0.0" in result.stderr

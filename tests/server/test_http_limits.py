"""Limits and proxy identity through a real `bearagent serve`: SSE connections per caller (429 beyond), streams
closed after an idle timeout, identity headers believed only from the configured proxy addresses."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from tests.server.test_http_api import BEARAGENT, SCRIPT, TOKEN, Server, gateway_token, start
from tests.support.run_ws import agent_md, scripted_workspace

JWT_SECRET = "gateway-shared-secret-for-tests-0123456789"
IDLE_S = 2.0
PROXY = {"x-forwarded-user": "carol", "x-forwarded-scopes": "runs:read,runs:write", "x-forwarded-workspaces": "ws"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("limits")
    root = scripted_workspace(tmp / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")})
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
  proxy: {{trusted: [127.0.0.1/32], subject_header: X-Forwarded-User, scopes_header: X-Forwarded-Scopes,
          workspaces_header: X-Forwarded-Workspaces}}
limits: {{max_sse_per_caller: 2, sse_idle_timeout_s: {IDLE_S}}}
"""
    srv = start(tmp, config=config)
    try:
        yield srv
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


def from_address(server: Server, address: str, headers: dict[str, str]) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=server.base, headers=headers, transport=transport, timeout=30)


SSE = {"accept": "text/event-stream"}


def test_sse_connections_per_caller_are_limited(server: Server) -> None:
    alice = gateway_token("alice", "runs:read", ["ws"])
    bob = gateway_token("bob", "runs:read", ["ws"])
    with server.client(alice) as a, server.client(bob) as b, ExitStack() as streams:
        for _ in range(2):
            opened = streams.enter_context(a.stream("GET", "/v1/workspaces/ws/events", headers=SSE))
            assert opened.status_code == 200
        refused = a.get("/v1/workspaces/ws/events", headers=SSE)
        assert refused.status_code == 429
        assert refused.json()["error"] == {
            "category": "rate_limit",
            "code": "rate_limit.sse_connections",
            "message": refused.json()["error"]["message"],
            "retryable": True,
        }
        with b.stream("GET", "/v1/workspaces/ws/events", headers=SSE) as other:
            assert other.status_code == 200  # the limit is per caller
        streams.close()  # both of alice's streams end: their slots come back
        deadline = time.monotonic() + 10
        while True:
            with a.stream("GET", "/v1/workspaces/ws/events", headers=SSE) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "the slots of closed streams were not given back"
            time.sleep(0.1)


@pytest.mark.slow
def test_an_idle_stream_is_closed_after_the_idle_timeout(server: Server) -> None:
    with server.client(TOKEN) as c:
        started = time.monotonic()
        with c.stream("GET", "/v1/workspaces/ws/events", headers=SSE) as stream:
            assert stream.status_code == 200
            body = b"".join(stream.iter_bytes())
        took = time.monotonic() - started
        assert body == b"" and IDLE_S - 0.2 <= took < IDLE_S + 8, took
        time.sleep(0.3)
        sid = c.post("/v1/workspaces/ws/sessions", json={}).json()["id"]  # the slot came back: more can be opened
        for _ in range(2):
            with c.stream("GET", "/v1/workspaces/ws/events", headers=SSE) as stream:
                assert stream.status_code == 200
        assert sid


def test_proxy_identity_is_believed_only_from_the_configured_addresses(server: Server) -> None:
    with from_address(server, "127.0.0.1", PROXY) as trusted:
        listed = trusted.get("/v1/workspaces")
        assert listed.status_code == 200 and [w["id"] for w in listed.json()["workspaces"]] == ["ws"]
        session = trusted.post("/v1/workspaces/ws/sessions", json={}).json()
        assert session["subject_ref"] == "carol" and session["auth_context"]["auth_source"] == "proxy"
        assert session["auth_context"]["scopes"] == ["runs:read", "runs:write"]
        assert trusted.post("/v1/workspaces/ws/actions/greet/runs", json={}).status_code == 403  # no actions:run
    forged = {**PROXY, "x-forwarded-for": "127.0.0.1"}
    with from_address(server, "127.0.0.2", forged) as untrusted:
        refused = untrusted.get("/v1/workspaces")
        assert refused.status_code == 401 and refused.json()["error"]["category"] == "authentication"
        assert "auth.proxy.trusted" in refused.json()["error"]["message"]
        with_token = untrusted.get("/v1/workspaces", headers={"authorization": f"Bearer {TOKEN}"})
        assert with_token.status_code == 401  # the headers are refused, not ignored, even beside a token
    with from_address(server, "127.0.0.2", {"authorization": f"Bearer {TOKEN}"}) as direct:
        assert direct.get("/v1/workspaces").status_code == 200  # a token works from anywhere
    with from_address(server, "127.0.0.1", {"x-forwarded-user": "dave"}) as no_scopes:
        assert no_scopes.get("/v1/workspaces").status_code == 403  # no scopes header: no scopes


def test_a_proxy_section_without_trusted_addresses_is_refused(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT)
    config = tmp_path / "server.yaml"
    config.write_text(f"workspaces:\n  - {{id: ws, path: {root}}}\nauth:\n  proxy: {{subject_header: X-User}}\n")
    result = subprocess.run(
        [BEARAGENT, "serve", "--port", "0", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "BEARAGENT_HOME": str(tmp_path / "h")},
        check=False,
    )
    assert result.returncode == 2 and "auth.proxy.trusted" in result.stderr

"""The caller's whole context (seed 002's CallerContext) through a real `bearagent serve`: the configured JWT
claims and proxy headers become `metadata`, and the session's and run's `auth_context` snapshot keeps
`workspace_access` and `metadata`; a metadata name that looks like a secret stops the server. And a CLI run records
the local user as its `initiator_ref`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import jwt
import pytest
from click.testing import CliRunner
from tests.server.test_http_api import BEARAGENT, JWT_SECRET, SCRIPT, start, wait_for
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.cli import main

pytestmark = pytest.mark.timeout(120)  # a real server process and its runs

AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}


def test_jwt_claims_and_proxy_headers_become_the_recorded_metadata(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    config = f"""
workspaces:
  - {{id: ws, path: {root}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent, metadata_claims: [tenant, plan, groups]}}
  proxy: {{trusted: [127.0.0.1/32], metadata_headers: [X-Tenant]}}
"""
    server = start(tmp_path, config=config)
    claims = {
        "sub": "user:7",
        "scope": "runs:read runs:write",
        "workspaces": ["ws"],
        "aud": "bearagent",
        "exp": int(time.time()) + 600,
        "tenant": "acme",
        "plan": 3,
        "groups": ["a", "b"],  # not a scalar: left out
        "email": "x@example.com",  # not configured: left out
    }
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    try:
        with server.client(token) as c:
            session = c.post("/v1/workspaces/ws/sessions", json={})
            assert session.status_code == 201, session.text
            snapshot = session.json()["auth_context"]
            assert snapshot == {
                "subject_ref": "user:7",
                "scopes": ["runs:read", "runs:write"],
                "workspace_access": ["ws"],
                "auth_source": "jwt",
                "metadata": {"tenant": "acme", "plan": "3"},
            }
            run = c.post(f"/v1/sessions/{session.json()['id']}/runs", json={"prompt": "hi"}).json()
            record = wait_for(c, run["run_id"])
            assert record["auth_context"] == snapshot and record["initiator_ref"] == "user:7"
        proxied = {"x-forwarded-user": "carol", "x-forwarded-scopes": "runs:write", "x-forwarded-workspaces": "ws"}
        with httpx.Client(base_url=server.base, headers={**proxied, "x-tenant": "t" * 1000}, timeout=30) as p:
            made = p.post("/v1/workspaces/ws/sessions", json={})
            assert made.status_code == 201, made.text
            context = made.json()["auth_context"]
            assert context["auth_source"] == "proxy" and context["workspace_access"] == ["ws"]
            assert context["metadata"] == {"X-Tenant": "t" * 256}  # bounded
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)


def test_a_metadata_name_that_looks_like_a_secret_stops_the_server(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    config = tmp_path / "server.yaml"
    config.write_text(
        f"workspaces:\n  - {{id: ws, path: {root}}}\n"
        f"auth:\n  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], metadata_claims: [tenant, refresh_token]}}\n"
    )
    env = isolated_env(tmp_path / "home", BEARAGENT_SERVE_TOKEN="t")
    result = subprocess.run(
        [BEARAGENT, "serve", "--port", "0", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "auth.jwt.metadata_claims: 'refresh_token' looks sensitive" in result.stderr


def test_a_cli_run_records_the_local_user_as_its_initiator(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    env = isolated_env(tmp_path / "home")
    assert CliRunner().invoke(main, ["run", "-w", str(root), "hi"], env=env).exit_code == 0
    listed = CliRunner().invoke(main, ["runs", "list", "-w", str(root), "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    (run,) = json.loads(listed.output)
    assert run["request"]["initiator_ref"] == f"local:{os.getuid()}"

"""OAuth for remote MCP servers through the real `bearagent` executable and a real run: a local MCP server with its own
authorization server (tests/support/mcp_servers/oauth_server.py, 127.0.0.1) requires a token. Before a login the
server is failed with a message naming `bearagent mcp login`; `mcp login` registers a client, sends the user to the
authorization URL (followed here as a browser would) and receives the code on its loopback redirect; the agent's tool
call carries the token; an expired token is refreshed silently; `mcp logout` forgets it."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Generator
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, load
from tests.support.mcp_helpers import free_port, wait_for_port
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "oauth_server.py"
LIFETIME_S = 3600

SCRIPT = """
turns:
  - tool_calls: [{name: mcp__secure__whoami, arguments: {}}]
  - text: "done"
"""


class OAuthServer:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc = proc
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.port = port
        self.log = log

    def grants(self) -> list[dict[str, object]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


@pytest.fixture
def server(tmp_path: Path) -> Generator[OAuthServer]:
    port = free_port()
    log = tmp_path / "grants.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), str(log), str(LIFETIME_S)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc)
        yield OAuthServer(proc, port, log)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _workspace(tmp_path: Path, url: str) -> tuple[Path, Path]:
    config = (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n  secure: {{transport: http, url: '{url}', startup_timeout_s: 20}}\n"
    )
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", mcp="[secure]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents, config=config)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _cli(*args: str, root: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BEARAGENT, *args], cwd=root, env=isolated_env(home), capture_output=True, text=True, timeout=120
    )


def _status(root: Path, home: Path) -> dict[str, object]:
    done = _cli("mcp", "list", "--json", root=root, home=home)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[0]


def _login(root: Path, home: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [BEARAGENT, "mcp", "login", "secure", "--no-browser", "--timeout", "60"],
        cwd=root,
        env=isolated_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if line.strip().startswith("http://"):
                # the "browser": the authorization server approves at once and redirects to the loopback listener
                with urllib.request.urlopen(line.strip(), timeout=30) as answer:
                    assert answer.status == 200
                    assert b"logged in" in answer.read()
                break
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(seen) + err)


def _whoami(root: Path, home: Path) -> str:
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("who am I?")
        assert result.status == "succeeded", result.error
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    done = [e["payload"]["result"] for e in events if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")]
    assert done and done[0]["tool_name"] == "mcp__secure__whoami", done
    return str(done[0]["content"])


def test_login_call_refresh_logout(server: OAuthServer, tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, server.url)

    # no login yet: the server answers 401 and the message says how to fix it
    before = _status(root, home)
    assert before["state"] == "failed"
    assert "401" in str(before["error"])
    assert "bearagent mcp login secure" in str(before["fix"])

    done = _login(root, home)
    assert done.returncode == 0, done.stderr
    assert "Logged in to secure (1 tool(s))" in done.stdout
    assert "code_challenge_method=S256" in done.stderr and "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in done.stderr
    grants = server.grants()
    assert [g["grant"] for g in grants] == ["register", "authorization_code"]
    stored = list((home / "bearagent" / "mcp-oauth").glob("secure-*.json"))
    assert len(stored) == 1
    assert stat.S_IMODE(os.stat(stored[0]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(stored[0].parent).st_mode) == 0o700
    data = json.loads(stored[0].read_text())
    assert data["tokens"]["access_token"].startswith("at-1-") and data["tokens"]["refresh_token"]

    # the agent's tool call carries the token (generation 1: no refresh needed yet)
    assert _status(root, home)["state"] == "ready"
    assert "token generation 1" in _whoami(root, home)

    # the access token expires (its stored expiry is moved to the past, as an hour passing would): the next
    # session refreshes it without a browser
    data = json.loads(stored[0].read_text())
    assert time.time() + LIFETIME_S - 60 < data["expires_at"] <= time.time() + LIFETIME_S
    stored[0].write_text(json.dumps({**data, "expires_at": time.time() - 1}))
    assert "token generation 2" in _whoami(root, home)
    assert [g["grant"] for g in server.grants()][-1] == "refresh_token"
    assert json.loads(stored[0].read_text())["tokens"]["access_token"].startswith("at-2-")

    out = _cli("mcp", "logout", "secure", root=root, home=home)
    assert out.returncode == 0 and "Logged out of secure" in out.stdout
    assert f"The tokens were revoked at http://127.0.0.1:{server.port}/revoke" in out.stdout, out
    assert [(g["grant"], g["token"]) for g in server.grants()[-2:]] == [("revoke", "rt-2-"), ("revoke", "at-2-")]
    assert not stored[0].exists()
    after = _status(root, home)
    assert after["state"] == "failed" and "bearagent mcp login secure" in str(after["fix"])
    again = _cli("mcp", "logout", "secure", root=root, home=home)
    assert again.returncode == 0 and "not logged in" in again.stdout


def test_a_pre_registered_client_and_a_fixed_callback_port(tmp_path: Path) -> None:
    # Claude Code's `.mcp.json` `oauth: {clientId, callbackPort}`: no dynamic registration, the redirect on that port
    port, callback = free_port(), free_port()
    log = tmp_path / "grants.jsonl"
    argv = [sys.executable, str(SERVER), str(port), str(log), str(LIFETIME_S), "-", "bear-app", str(callback)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, proc)
        server = OAuthServer(proc, port, log)
        root, home = _workspace(tmp_path, server.url)
        entry = {"type": "http", "url": server.url, "oauth": {"clientId": "bear-app", "callbackPort": callback}}
        (root / ".bearagent" / "config.yaml").write_text(
            (root / ".bearagent" / "config.yaml").read_text().split("mcp_servers:")[0]
        )
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"secure": entry}}))
        trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

        done = _login(root, home)
        assert done.returncode == 0, done.stderr
        assert "client_id=bear-app" in done.stderr
        assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{callback}%2Fcallback" in done.stderr
        assert [g["grant"] for g in server.grants()] == ["authorization_code"]  # nothing registered
        assert "client bear-app, token generation 1" in _whoami(root, home)

        with socket.socket() as busy:  # the fixed port taken: a clear error naming it, no other port tried
            # the login's own callback connection may leave the port in TIME_WAIT, which a plain bind refuses; a
            # listening socket still takes the port from the next login (Linux refuses a second bind beside a listener)
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            busy.bind(("127.0.0.1", callback))
            busy.listen()
            taken = _cli("mcp", "login", "secure", "--no-browser", "--timeout", "5", root=root, home=home)
        assert taken.returncode == 1
        assert f"127.0.0.1:{callback}" in taken.stderr and "oauth.callbackPort" in taken.stderr
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_logout_without_a_revocation_endpoint_says_the_tokens_were_not_revoked(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, "http://127.0.0.1:9/mcp")
    done = _cli("mcp", "list", "--json", root=root, home=home)
    assert done.returncode == 0
    store = next(iter(json.loads(done.stdout)), None)
    assert store is not None
    from bearagent.mcp.oauth import token_path

    path = token_path(home / "bearagent", "secure", "http://127.0.0.1:9/mcp")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "tokens": {"access_token": "a", "token_type": "Bearer"}}))
    out = _cli("mcp", "logout", "secure", root=root, home=home)
    assert out.returncode == 0 and "Logged out of secure" in out.stdout and not path.exists()
    assert "NOT revoked" in out.stderr and "did not advertise a revocation endpoint" in out.stderr


def test_login_to_a_stdio_server_is_a_clear_error(tmp_path: Path) -> None:
    config = f"mcp_servers:\n  local: {{command: {sys.executable}, args: ['-c', 'pass']}}\n"
    root = scripted_workspace(tmp_path / "ws", SCRIPT, config=config)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    done = _cli("mcp", "login", "local", "--no-browser", root=root, home=home)
    assert done.returncode != 0
    assert "is a stdio server" in done.stderr and "fix:" in done.stderr
    unknown = _cli("mcp", "login", "nope", "--no-browser", root=root, home=home)
    assert unknown.returncode != 0 and "no MCP server named 'nope'" in unknown.stderr

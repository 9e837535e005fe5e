"""`sandbox: {network: [hosts]}`: the sandboxed shell reaches only the listed hosts, through the host proxy (issue 14).

Real runs with a scripted model through `open_workspace`, against an HTTP server this test starts on the host's
127.0.0.1 (never the internet). The sandbox keeps its own network namespace, so the server is reachable only
through the proxy (`bearagent.sandbox.proxy`) and the forwarder inside the sandbox (`_forward.py`).
"""

from __future__ import annotations

import asyncio
import http.server
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import cast

import pytest
import yaml
from tests.support.config_ws import isolated_env, write
from tests.support.host_probes import processes_with
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.domain._base import JsonMapping, thaw_json_mapping
from bearagent.plugins.manager import PluginHost
from bearagent.sandbox.probe import find_bwrap
from bearagent.sandbox.proxy import MAX_HEAD, HostProxy, host_allowed
from bearagent.sandbox.settings import loosening, merge_sandbox, normalise_host_entry, parse_sandbox

needs_bwrap = pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or find_bwrap(None) is None
    or os.environ.get("BEARAGENT_SANDBOX", "off") != "off",
    reason="the real runs need Linux and bubblewrap (scripts/ci-extras.sh installs it), and not to run inside a "
    "BearAgent sandbox (bubblewrap cannot nest there)",
)
MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Bash, Read]")}
LISTED = 'sandbox: {network: ["127.0.0.1"]}\n'

CLIENT = """
import http.client, os, socket, sys, urllib.error, urllib.parse, urllib.request

what, port = sys.argv[1], int(sys.argv[2])
if what == "denied":
    try:
        urllib.request.urlopen(f"http://localhost:{port}/denied", timeout=10)
        print("REACHED")
    except urllib.error.HTTPError as exc:
        print(exc.code, exc.read().decode())
elif what == "tunnel":
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    conn.set_tunnel("127.0.0.1", port)
    conn.request("GET", "/tunnel")
    print("TUNNEL", conn.getresponse().read().decode())
elif what == "direct":
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        print("CONNECTED")
    except OSError as exc:
        print("REFUSED", type(exc).__name__)
"""


class Server:
    """An HTTP server on the host's 127.0.0.1 that answers every GET with `body:<path>` and records the paths."""

    def __init__(self) -> None:
        paths: list[str] = []
        self.paths = paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = f"body:{self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    try:
        yield srv
    finally:
        srv.close()


def run_bash(
    ws: Path, home: Path, commands: Sequence[str], *, user_config: str | None = None
) -> list[dict[str, object]]:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": c}} for c in commands]},
        {"text": "done"},
    ]
    scripted_workspace(ws, yaml.safe_dump({"turns": turns}, sort_keys=False), agents=MAIN, config=CONFIG)
    (ws / "client.py").write_text(CLIENT)
    if user_config is not None:
        write(home / "bearagent", "config.yaml", user_config)
    with open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace:
        result = workspace.run_sync("go")
        assert result.status == "succeeded", result.error
        return [
            cast(dict[str, object], thaw_json_mapping(cast(JsonMapping, e.payload["result"])))
            for e in workspace.events(str(result.run_id))
            if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
        ]


def _stdout(result: Mapping[str, object]) -> str:
    return str(cast(Mapping[str, object], result.get("data") or {}).get("stdout", ""))


# ---- real runs ------------------------------------------------------------------------------------------------


@needs_bwrap
def test_a_listed_host_is_reached_through_the_proxy_and_nothing_else(tmp_path: Path, server: Server) -> None:
    port = server.port
    fetch = f"python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/ok').read())\""
    results = run_bash(
        tmp_path / "ws",
        tmp_path / "home",
        [
            fetch,
            f"python3 client.py tunnel {port}",
            f"python3 client.py denied {port}",
            f"python3 client.py direct {port}",
            "echo $HTTP_PROXY $HTTPS_PROXY $ALL_PROXY NO_PROXY=[$NO_PROXY]",
        ],
        user_config=LISTED,
    )
    assert _stdout(results[0]).strip() == "b'body:/ok'", results[0]
    assert _stdout(results[1]).strip() == "TUNNEL body:/tunnel", results[1]  # CONNECT (how HTTPS goes)
    denied = _stdout(results[2])
    assert denied.startswith("403 ") and "'localhost'" in denied and "sandbox.network" in denied, results[2]
    assert _stdout(results[3]).startswith("REFUSED"), results[3]  # a client that ignores the proxy: no network
    proxy = _stdout(results[4]).split()
    assert proxy[0].startswith("http://127.0.0.1:") and proxy[:3] == [proxy[0]] * 3 and proxy[3] == "NO_PROXY=[]"
    assert server.paths == ["/ok", "/tunnel"]  # the denied request never reached the server


@needs_bwrap
def test_no_forwarder_survives_the_call(tmp_path: Path, server: Server) -> None:
    marker = f"fwd-marker-{uuid.uuid4().hex[:8]}"
    results = run_bash(
        tmp_path / "ws",
        tmp_path / "home",
        [f"echo {marker}; (sleep 30 &) ; ps -eo args | grep -c '[.]bearagent-forward.py'"],
        user_config=LISTED,
    )
    assert _stdout(results[0]).split()[-1] != "0"  # the forwarder ran during the call
    deadline = time.monotonic() + 15  # gone within milliseconds; generous for a loaded machine (a survivor sleeps 30 s)
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


@needs_bwrap
def test_the_default_has_no_proxy_and_no_network(tmp_path: Path, server: Server) -> None:
    results = run_bash(
        tmp_path / "ws",
        tmp_path / "home",
        [
            "env | grep -ci '^[a-z_]*proxy='; ls /tmp/.bearagent-proxy.sock 2>&1 | grep -c 'No such'",
            f"python3 client.py direct {server.port}",
        ],
    )
    assert _stdout(results[0]).split() == ["0", "1"], results[0]
    assert _stdout(results[1]).startswith("REFUSED"), results[1]
    assert server.paths == []


# ---- the settings --------------------------------------------------------------------------------------------


def test_host_entries_are_validated() -> None:
    out, problems = parse_sandbox({"network": ["PyPI.org.", "*.GitHub.com", "10.0.0.1", "[::1]"]}, level="user")
    assert problems == [] and out["network"] == ("pypi.org", "*.github.com", "10.0.0.1", "::1")
    for bad in ("https://pypi.org", "pypi.org:443", "pypi.org/simple", "*", "a..b", "10.0.0.999", "", "-x.com"):
        assert normalise_host_entry(bad) is None, bad
    out, problems = parse_sandbox({"network": ["pypi.org", "https://github.com", 3]}, level="workspace")
    assert "network" not in out and len(problems) == 1
    assert problems[0].field == "sandbox.network" and "'https://github.com', 3 are not hosts" in problems[0].message
    assert parse_sandbox({"network": []}, level="user")[0] == {"network": "deny"}


@pytest.mark.parametrize(
    ("user", "workspace", "merged"),
    [
        (None, ("a.com",), ("a.com",)),  # without a user value the workspace's applies (trust gates it)
        (("a.com", "b.com"), None, ("a.com", "b.com")),
        (("a.com", "b.com"), ("a.com",), ("a.com",)),  # a subset narrows
        (("a.com",), ("a.com", "evil.com"), ("a.com",)),  # never widens: hosts the user did not list are dropped
        (("a.com",), ("evil.com",), "deny"),
        (("*.a.com",), ("x.a.com", "a.com"), ("x.a.com",)),  # the wildcard covers subdomains, not the apex
        (("a.com",), "allow", ("a.com",)),
        (("a.com",), "deny", "deny"),
        ("allow", ("a.com",), ("a.com",)),
        ("deny", ("a.com",), "deny"),
    ],
)
def test_the_user_host_list_is_a_ceiling(
    user: str | tuple[str, ...] | None, workspace: str | tuple[str, ...] | None, merged: str | tuple[str, ...]
) -> None:
    layers: list[tuple[str, Mapping[str, object]]] = []
    if user is not None:
        layers.append(("user", {"network": user}))
    if workspace is not None:
        layers.append(("workspace", {"network": workspace}))
    assert merge_sandbox(layers).network == merged


def test_a_host_list_is_reported_as_loosening() -> None:
    assert loosening({"sandbox": {"network": ("pypi.org", "*.github.com")}}) == [
        "sandbox.network: [pypi.org, *.github.com]"
    ]
    assert loosening({"sandbox": {"network": "deny"}}) == []


# ---- the proxy on its own ------------------------------------------------------------------------------------


def test_host_matching() -> None:
    hosts = ("pypi.org", "*.github.com", "127.0.0.1", "::1")
    assert host_allowed("PyPI.org", hosts) and host_allowed("pypi.org.", hosts)
    assert host_allowed("api.github.com", hosts) and host_allowed("a.b.github.com", hosts)
    assert not host_allowed("github.com", hosts)  # not the apex
    assert not host_allowed("evilgithub.com", hosts) and not host_allowed("pypi.org.evil.com", hosts)
    assert host_allowed("127.0.0.1", hosts) and host_allowed("[::1]", hosts)
    assert not host_allowed("127.0.0.2", hosts) and not host_allowed("localhost", hosts)
    assert not host_allowed("2130706433", ("127.0.0.1",))  # another spelling of the address is a name, unlisted
    assert not host_allowed("*.github.com", hosts)


def test_the_proxy_refuses_bad_and_oversized_requests(tmp_path: Path) -> None:
    async def ask(path: str, data: bytes) -> bytes:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(data)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        return answer

    async def scenario() -> list[bytes]:
        path = str(tmp_path / "p.sock")
        proxy = HostProxy(("127.0.0.1",))
        await proxy.start(path)
        try:
            assert os.stat(path).st_mode & 0o077 == 0
            return [
                await ask(path, b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n"),
                await ask(path, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n"),
                await ask(path, b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n"),
                await ask(path, b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"a" * MAX_HEAD + b"\r\n\r\n"),
                await ask(path, b"nonsense\r\n\r\n"),
            ]
        finally:
            await proxy.close()

    answers = asyncio.run(scenario())
    assert [a.split(b" ", 2)[1] for a in answers] == [b"400", b"403", b"400", b"431", b"400"]
    assert b"'example.com'" in answers[1] and b"sandbox.network" in answers[1]

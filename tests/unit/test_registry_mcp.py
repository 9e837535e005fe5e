"""McpRegistry: config.yaml mcp_servers and .mcp.json."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.config_ws import load, only, write


def test_config_and_mcp_json_entries_with_precedence(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "mcp_servers:\n  time: {command: uvx, args: [mcp-server-time], startup_timeout_s: 20, call_timeout_s: 60}\n",
    )
    write(
        tmp_path,
        ".mcp.json",
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "other"},
                    "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"A": "${TOKEN}"}},
                }
            }
        ),
    )
    ws = load(tmp_path, tmp_path / "home")
    time = ws.mcp.resolved("time")
    assert (
        time
        and time.item.command == "uvx"
        and time.item.args == ("mcp-server-time",)
        and time.item.startup_timeout_s == 20
    )
    assert [c.source.id for c in time.shadows] == ["compat:.mcp.json"]
    docs = ws.mcp.get("docs")
    assert docs and docs.transport == "http" and docs.headers == {"A": "${TOKEN}"}
    assert ws.mcp.for_use(docs, {"TOKEN": "t"}).headers == {"A": "t"}


def test_streamable_http_alias_and_unsupported_transport(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "mcp_servers:\n  a: {type: streamable-http, url: 'http://127.0.0.1:1/mcp'}\n  b: {type: sse, url: 'http://x'}\n  c: {args: [x]}\n  d: {command: x, comand: y}\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert ws.mcp.get("a") and ws.mcp.get("a").transport == "http"  # type: ignore[union-attr]
    assert "stdio and streamable HTTP" in only(ws.mcp.diagnostics, "mcp.unsupported_transport").message
    assert "neither `command`" in only(ws.mcp.diagnostics, "mcp.invalid").message
    assert "did you mean 'command'" in only(ws.mcp.diagnostics, "config.unknown_key").message


def test_broken_mcp_json_names_line_and_compat_off_ignores_it(tmp_path: Path) -> None:
    write(tmp_path, ".mcp.json", '{\n  "mcpServers": {,\n}')
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.mcp.diagnostics, "config.json_syntax")
    assert d.line == 2
    write(tmp_path, ".bearagent/config.yaml", "compat: false\n")
    ws = load(tmp_path, tmp_path / "home")
    assert not ws.mcp.diagnostics


def test_an_empty_mcp_json_declares_nothing(tmp_path: Path) -> None:
    # also the read-only placeholder the sandbox leaves while a sandboxed MCP server or hook runs
    (tmp_path / ".mcp.json").write_text("")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.mcp.all() == [] and not ws.mcp.diagnostics


def test_mcp_json_timeout_is_milliseconds(tmp_path: Path) -> None:
    write(tmp_path, ".mcp.json", json.dumps({"mcpServers": {"s": {"command": "x", "timeout": 5000}}}))
    ws = load(tmp_path, tmp_path / "home")
    assert ws.mcp.get("s") and ws.mcp.get("s").call_timeout_s == 5.0  # type: ignore[union-attr]


def test_mcp_json_oauth_client_id_and_callback_port(tmp_path: Path) -> None:
    url = "http://127.0.0.1:1/mcp"
    servers = {
        "ok": {"type": "http", "url": url, "oauth": {"clientId": "app-1", "callbackPort": 8976, "scopes": "x"}},
        "port": {"type": "http", "url": url, "oauth": {"callbackPort": 70000}},
        "kind": {"type": "http", "url": url, "oauth": "app-1"},
    }
    write(tmp_path, ".mcp.json", json.dumps({"mcpServers": servers}))
    ws = load(tmp_path, tmp_path / "home")
    ok = ws.mcp.get("ok")
    assert ok is not None and (ok.oauth_client_id, ok.oauth_callback_port) == ("app-1", 8976)
    assert ws.mcp.get("port") is None and ws.mcp.get("kind") is None  # a wrong value skips the server, named
    messages = [d.message for d in ws.mcp.diagnostics if d.code == "mcp.invalid"]
    assert any("mcpServers.port.oauth.callbackPort must be a port number" in m for m in messages), messages
    assert any("mcpServers.kind.oauth must be a mapping" in m for m in messages), messages
    assert "oauth.scopes" in only(ws.mcp.diagnostics, "config.unknown_key").message

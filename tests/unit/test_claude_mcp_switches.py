"""Claude Code's MCP server switches in `.claude/settings*.json`: `enabledMcpjsonServers`,
`disabledMcpjsonServers`, `enableAllProjectMcpServers`, `allowedMcpServers`, `deniedMcpServers` decide which servers
load; a server left out is named with the key and file that left it out; a wrong shape stops the run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.config_ws import load, write

from bearagent.domain._base import JsonValue
from bearagent.trust import workspace_trust_surface

MCP_JSON = {
    "mcpServers": {
        "github": {"command": "gh-mcp"},
        "memory": {"command": "memory-mcp"},
        "notes": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }
}
USER_CONFIG = "mcp_servers:\n  mine: {command: my-mcp}\n"


def _ws(tmp_path: Path, settings: dict[str, JsonValue], local: dict[str, JsonValue] | None = None) -> Path:
    root = tmp_path / "ws"
    write(root, ".mcp.json", json.dumps(MCP_JSON))
    write(root, ".claude/settings.json", json.dumps(settings))
    if local is not None:
        write(root, ".claude/settings.local.json", json.dumps(local))
    write(tmp_path / "home" / "bearagent", "config.yaml", USER_CONFIG)
    return root


def _names(tmp_path: Path, root: Path) -> list[str]:
    return sorted(s.name for s in load(root, tmp_path / "home").mcp.all())


def test_without_switches_every_server_loads(tmp_path: Path) -> None:
    assert _names(tmp_path, _ws(tmp_path, {})) == ["github", "memory", "mine", "notes"]


def test_enabled_loads_only_the_named_project_servers_and_disabled_wins(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"enabledMcpjsonServers": ["github", "memory"]}, {"disabledMcpjsonServers": ["memory"]})
    assert _names(tmp_path, root) == ["github", "mine"]  # the user's own server is not a project server
    loaded = load(root, tmp_path / "home")
    off = {d.subject: d for d in loaded.diagnostics() if d.code == "mcp.server_switched_off"}
    assert set(off) == {"memory", "notes"}
    assert "disabledMcpjsonServers names it" in off["memory"].message
    assert off["memory"].source == str(root / ".claude/settings.local.json")
    assert "enabledMcpjsonServers lists only github, memory" in off["notes"].message
    assert off["notes"].severity == "info"
    surface = json.dumps([item.key for item in workspace_trust_surface(loaded).items])
    assert "notes" not in surface and "github" in surface  # a server left out is not asked about


def test_enable_all_overrides_the_enabled_list(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"enabledMcpjsonServers": ["github"], "enableAllProjectMcpServers": True})
    assert _names(tmp_path, root) == ["github", "memory", "mine", "notes"]


def test_denied_and_allowed_servers_by_name_cover_every_source(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"deniedMcpServers": [{"serverName": "mine"}]})
    assert _names(tmp_path, root) == ["github", "memory", "notes"]
    root = _ws(tmp_path, {"allowedMcpServers": [{"serverName": "memory"}, {"serverName": "mine"}]})
    assert _names(tmp_path, root) == ["memory", "mine"]


def test_a_wrong_shape_is_an_error_that_names_the_key(tmp_path: Path) -> None:
    root = _ws(
        tmp_path,
        {
            "disabledMcpjsonServers": "memory",
            "deniedMcpServers": [{"serverUrl": "https://x.example/*"}],
            "enableAllProjectMcpServers": "yes",
        },
    )
    loaded = load(root, tmp_path / "home")
    errors = {d.field: d for d in loaded.diagnostics() if d.severity == "error"}
    assert set(errors) >= {"disabledMcpjsonServers", "deniedMcpServers", "enableAllProjectMcpServers"}
    assert "must be a list of server names" in errors["disabledMcpjsonServers"].message
    assert "matches servers by name only, not by serverUrl" in errors["deniedMcpServers"].message
    assert loaded.has_errors()

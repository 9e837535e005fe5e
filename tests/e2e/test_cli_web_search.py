"""WebSearch through a real `bearagent run`: the user's `web_search:` config picks the service (a local 127.0.0.1
server speaking Brave's API stands in for it), the key comes from its environment variable, the model reads cited
results; a workspace that points the search at its own endpoint needs `bearagent trust` first."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace
from tests.support.search_server import search_server

from bearagent.cli import main

MAIN = {"main": agent_md("Main agent.", mode="primary")}
SCRIPT = json.dumps(
    {
        "turns": [
            {
                "tool_calls": [
                    {"name": "WebSearch", "arguments": {"query": "bear facts", "blocked_domains": ["spam.example"]}}
                ]
            },
            {"text": "done"},
        ]
    }
)
BRAVE_ANSWER = {
    "web": {
        "results": [
            {"title": "Bear facts", "url": "https://bears.example/facts", "description": "Bears are large."},
            {"title": "Spam", "url": "https://spam.example/x", "description": "buy"},
        ]
    }
}


def invoke(args: list[str], home: Path, **env: str) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home, **env), prog_name="bearagent")


def _tool_results(root: Path, home: Path, run_id: str) -> list[dict[str, object]]:
    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], home)
    assert events.exit_code == 0, events.output
    return [
        e["payload"]["result"]
        for e in map(json.loads, events.output.splitlines())
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")
    ]


def test_web_search_uses_the_users_configured_service(tmp_path: Path) -> None:
    with search_server() as server:
        server.reply = lambda _: (200, json.dumps(BRAVE_ANSWER).encode())
        write(tmp_path / "bearagent", "config.yaml", f"web_search: {{provider: brave, base_url: '{server.url}'}}\n")
        root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=MAIN)
        result = invoke(["run", "-w", str(root), "--json", "search"], tmp_path, BRAVE_API_KEY="brave-secret")
        assert result.exit_code == 0, result.output
        assert "brave-secret" not in result.output
        (seen,) = server.seen
        assert seen.path == "/res/v1/web/search" and seen.query["q"] == ["bear facts"]
        assert seen.headers["x-subscription-token"] == "brave-secret"
    (outcome,) = _tool_results(root, tmp_path, json.loads(result.output)["run_id"])
    assert outcome["status"] == "succeeded", outcome
    content = str(outcome["content"])
    assert "[Bear facts](https://bears.example/facts)" in content and "Bears are large." in content
    assert "spam.example" not in content


def test_without_a_configured_service_the_call_fails_naming_the_key(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=MAIN)
    result = invoke(["run", "-w", str(root), "--json", "search"], tmp_path)
    assert result.exit_code == 0, result.output
    (outcome,) = _tool_results(root, tmp_path, json.loads(result.output)["run_id"])
    assert outcome["status"] == "failed" and "web_search: {provider: brave}" in str(outcome["content"])


def test_a_workspace_endpoint_for_the_search_needs_trust(tmp_path: Path) -> None:
    with search_server() as server:
        server.reply = lambda _: (200, json.dumps({"results": []}).encode())
        config = CONFIG + f"web_search: {{provider: searxng, base_url: '{server.url}'}}\n"
        root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=MAIN, config=config)
        refused = invoke(["run", "-w", str(root), "search"], tmp_path)
        assert refused.exit_code == 2, refused.output
        assert "web_search.base_url" in refused.output and "bearagent trust" in refused.output
        assert server.seen == []
        trusted = invoke(["trust", "-w", str(root)], tmp_path)
        assert trusted.exit_code == 0, trusted.output
        again = invoke(["run", "-w", str(root), "--json", "search"], tmp_path)
        assert again.exit_code == 0, again.output
        (seen,) = server.seen
        assert seen.path == "/search" and seen.query["format"] == ["json"]

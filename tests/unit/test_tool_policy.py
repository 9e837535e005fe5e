"""Policy defaults per permission mode and side-effect class, allowlists, mode parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bearagent.domain.errors import BearAgentError
from bearagent.tools.builtin import native_tools
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import DEFAULT_PERMISSION_MODE, ToolPolicy, parse_permission_mode

SPECS = {t.spec.name: t.spec for t in native_tools()}
ROOT = Path("/ws")
ARGS: dict[str, dict[str, object]] = {
    "Read": {"file_path": "a"},
    "Write": {"file_path": "a", "content": ""},
    "Bash": {"command": "make"},
    "WebFetch": {"url": "https://example.com"},
}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("default", {"Read": "allow", "Write": "ask", "Bash": "ask", "WebFetch": "ask"}),
        ("acceptEdits", {"Read": "allow", "Write": "allow", "Bash": "allow", "WebFetch": "allow"}),
        ("plan", {"Read": "allow", "Write": "deny", "Bash": "deny", "WebFetch": "allow"}),
        ("dontAsk", {"Read": "allow", "Write": "deny", "Bash": "deny", "WebFetch": "deny"}),
        ("bypassPermissions", {"Read": "allow", "Write": "allow", "Bash": "allow", "WebFetch": "allow"}),
    ],
)
def test_mode_defaults(mode: str, expected: dict[str, str]) -> None:
    policy = ToolPolicy(mode=mode)  # type: ignore[arg-type]
    for tool, outcome in expected.items():
        assert policy.decide(SPECS[tool], ARGS[tool], ROOT).outcome == outcome, (mode, tool)  # type: ignore[arg-type]


def test_default_mode_is_accept_edits() -> None:
    assert DEFAULT_PERMISSION_MODE == "acceptEdits"
    assert ToolPolicy().decide(SPECS["Bash"], ARGS["Bash"], ROOT).outcome == "allow"  # type: ignore[arg-type]


def test_rules_beat_mode_defaults() -> None:
    policy = ToolPolicy(mode="dontAsk", rules=PermissionRules.parse(allow=["Bash(make)"], deny=["Read(.env)"]))
    assert policy.decide(SPECS["Bash"], {"command": "make"}, ROOT).outcome == "allow"
    assert policy.decide(SPECS["Bash"], {"command": "make && rm x"}, ROOT).outcome == "deny"
    denied = policy.decide(SPECS["Read"], {"file_path": ".env"}, ROOT)
    assert denied.outcome == "deny" and denied.rule == "Read(.env)"


def test_mode_denial_says_which_rule_to_add() -> None:
    decision = ToolPolicy(mode="plan").decide(SPECS["Write"], {"file_path": "docs/a.md", "content": ""}, ROOT)
    assert decision.outcome == "deny"
    assert '"Edit(/docs/a.md)"' in decision.reason and "permissions.allow" in decision.reason


def test_allowlist_with_star_and_disallowed_removed_first() -> None:
    policy = ToolPolicy(tools=["*"], disallowed_tools=["Bash"])
    assert policy.available("Read") and not policy.available("Bash")
    only = ToolPolicy(tools=["Read", "Grep", "mcp__github"])
    assert only.available("Grep") and not only.available("Write")
    assert only.available("mcp__github__create_issue") and not only.available("mcp__gitlab__x")
    assert ToolPolicy(tools=None).available("Write")


def test_tool_entries_with_specifiers_become_rules() -> None:
    policy = ToolPolicy(mode="dontAsk", tools=["Bash(git *)", "Read"], disallowed_tools=["Bash(git push *)"])
    assert policy.available("Bash")
    assert policy.decide(SPECS["Bash"], {"command": "git status"}, ROOT).outcome == "allow"
    assert policy.decide(SPECS["Bash"], {"command": "git push"}, ROOT).outcome == "deny"


def test_chat_workspace_denies_everything_and_says_how_to_fix() -> None:
    decision = ToolPolicy(workspace_kind="chat").decide(SPECS["Read"], ARGS["Read"], ROOT)  # type: ignore[arg-type]
    assert decision.outcome == "deny" and "kind: project" in decision.reason


def test_permission_mode_parsing() -> None:
    assert parse_permission_mode("manual") == "default"
    assert parse_permission_mode("acceptEdits") == "acceptEdits"
    with pytest.raises(BearAgentError, match=r"'yolo' is not a permission mode\. Use one of: default, acceptEdits"):
        parse_permission_mode("yolo", where="agents/build.md: policy.permission_mode")

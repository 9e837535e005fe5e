"""Claude Code's permission rule spellings mean what they mean there (reference: trust-sandbox-commands.md §5.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bearagent.domain._base import JsonValue
from bearagent.tools.permissions import PermissionRules

ROOT = Path("/ws")


@pytest.mark.parametrize(
    ("deny", "tool", "arguments", "denied"),
    [
        ("Bash(npm run test:*)", "Bash", {"command": "npm run test"}, True),
        ("Bash(npm run test:*)", "Bash", {"command": "npm run test -- -k x"}, True),
        ("Bash(npm run test:*)", "Bash", {"command": "npm run testing"}, False),
        ("Bash(curl:*)", "Bash", {"command": "echo hi && curl https://x.example"}, True),
        ("Bash(curl:*)", "Bash", {"command": "timeout 5 curl https://x.example"}, True),
        ("Bash(ls*)", "Bash", {"command": "lsof"}, True),
        ("Bash(ls *)", "Bash", {"command": "lsof"}, False),
        ("Read(./.env)", "Read", {"file_path": ".env"}, True),
        ("Read(./.env)", "Read", {"file_path": "sub/.env"}, False),
        ("Read(.env)", "Read", {"file_path": "sub/.env"}, True),
        ("Read(./.env)", "Edit", {"file_path": ".env", "old_string": "a", "new_string": "b"}, True),
        ("Read(./.env)", "Write", {"file_path": "/ws/.env", "content": ""}, True),
        ("Read(./.env)", "Write", {"file_path": "other.txt", "content": ""}, False),
        ("Edit(src/**)", "Write", {"file_path": "src/a/b.py", "content": ""}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://EXAMPLE.com/x"}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://api.example.com/x"}, False),
        ("WebFetch(domain:*.example.com)", "WebFetch", {"url": "https://a.b.example.com/"}, True),
        ("WebFetch(domain:*.example.com)", "WebFetch", {"url": "https://example.com/"}, False),
        ("WebFetch(domain:api*.example.com)", "WebFetch", {"url": "https://api2.example.com/"}, True),
        ("WebFetch(domain:api*.example.com)", "WebFetch", {"url": "https://api.evil.example.com/"}, False),
        ("mcp__time__get_current_time", "mcp__time__get_current_time", {}, True),
        ("mcp__time__get_current_time", "mcp__time__convert_time", {}, False),
        ("mcp__time", "mcp__time__convert_time", {}, True),
        ("mcp__time__*", "mcp__time__convert_time", {}, True),
        ("Agent(code-reviewer)", "Task", {"subagent_type": "code-reviewer", "prompt": "x"}, True),
        ("Task(code-reviewer)", "Task", {"subagent_type": "explore", "prompt": "x"}, False),
        ("Skill(deploy *)", "Skill", {"name": "deploy prod"}, True),
    ],
)
def test_deny_rules(deny: str, tool: str, arguments: dict[str, JsonValue], denied: bool) -> None:
    rules = PermissionRules.parse(deny=[deny], root=ROOT)
    match = rules.evaluate(tool, arguments, ROOT)
    assert (match is not None and match.decision == "deny") is denied


def test_a_read_deny_does_not_make_a_read_allow_cover_edits() -> None:
    rules = PermissionRules.parse(allow=["Read(./docs/**)"], root=ROOT)
    assert rules.evaluate("Edit", {"file_path": "docs/a.md", "old_string": "a", "new_string": "b"}, ROOT) is None
    match = rules.evaluate("Read", {"file_path": "docs/a.md"}, ROOT)
    assert match is not None and match.decision == "allow"


def test_deny_beats_ask_beats_allow_whatever_the_order() -> None:
    rules = PermissionRules.parse(allow=["Bash(git *)"], ask=["Bash(git push:*)"], deny=["Bash(git push --force:*)"])
    assert rules.evaluate("Bash", {"command": "git status"}, ROOT).decision == "allow"  # type: ignore[union-attr]
    assert rules.evaluate("Bash", {"command": "git push origin"}, ROOT).decision == "ask"  # type: ignore[union-attr]
    forced = rules.evaluate("Bash", {"command": "git push --force origin"}, ROOT)
    assert forced is not None and forced.decision == "deny"


def test_an_allow_glob_after_a_server_name_with_underscores_is_accepted_and_a_bare_glob_is_not() -> None:
    from bearagent.tools.permissions import PermissionRule, RuleError

    rules = PermissionRules.parse(allow=["mcp__my_server__*"])
    match = rules.evaluate("mcp__my_server__list", {}, ROOT)
    assert match is not None and match.decision == "allow"
    assert rules.evaluate("mcp__other__list", {}, ROOT) is None
    for bad in ("mcp__*", "mcp__my_*__x"):
        try:
            PermissionRule.parse(bad, "allow")
        except RuleError:
            continue
        raise AssertionError(f"{bad} should be refused in an allow rule")

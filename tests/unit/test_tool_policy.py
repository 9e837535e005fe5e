"""Policy defaults per permission mode and side-effect class, the shell sandbox rule, tool grants, mode parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bearagent.domain.errors import BearAgentError
from bearagent.domain.grant import ToolGrant
from bearagent.tools.builtin import native_tools
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import DEFAULT_PERMISSION_MODE, MODE_DEFAULTS, ToolPolicy, parse_permission_mode

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
        ("acceptEdits", {"Read": "allow", "Write": "allow", "Bash": "ask", "WebFetch": "allow"}),
        ("plan", {"Read": "allow", "Write": "deny", "Bash": "deny", "WebFetch": "allow"}),
        ("dontAsk", {"Read": "allow", "Write": "deny", "Bash": "deny", "WebFetch": "deny"}),
        ("bypassPermissions", {"Read": "allow", "Write": "allow", "Bash": "ask", "WebFetch": "allow"}),
    ],
)
def test_mode_defaults_outside_the_sandbox(mode: str, expected: dict[str, str]) -> None:
    policy = ToolPolicy(mode=mode)  # type: ignore[arg-type]
    for tool, outcome in expected.items():
        assert policy.decide(SPECS[tool], ARGS[tool], ROOT).outcome == outcome, (mode, tool)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mode", "sandboxed", "user_bypass", "expected"),
    [
        ("default", True, False, "allow"),
        ("acceptEdits", True, False, "allow"),
        ("bypassPermissions", True, False, "allow"),
        ("plan", True, False, "deny"),
        ("dontAsk", True, False, "deny"),
        ("bypassPermissions", False, True, "allow"),
        ("bypassPermissions", False, False, "ask"),
        ("acceptEdits", False, True, "ask"),  # user_bypass only matters for bypassPermissions
        ("default", False, True, "ask"),
        ("plan", False, True, "deny"),
    ],
)
def test_shell_default_depends_on_the_sandbox_and_who_set_bypass(
    mode: str, sandboxed: bool, user_bypass: bool, expected: str
) -> None:
    policy = ToolPolicy(mode=mode, shell_sandboxed=sandboxed, user_bypass=user_bypass)  # type: ignore[arg-type]
    assert policy.decide(SPECS["Bash"], ARGS["Bash"], ROOT).outcome == expected  # type: ignore[arg-type]


def test_unconfined_shell_ask_says_why_and_how() -> None:
    decision = ToolPolicy().decide(SPECS["Bash"], {"command": "uv run pytest -q"}, ROOT)
    assert decision.outcome == "ask"
    assert decision.reason.startswith("Bash runs unconfined here because no shell sandbox is active")
    assert decision.suggested_rule == "Bash(uv run *)"
    assert decision.alternative is not None and "sandbox" in decision.alternative
    workspace_bypass = ToolPolicy(mode="bypassPermissions", unsandboxed_reason="bubblewrap is not installed")
    reason = workspace_bypass.decide(SPECS["Bash"], ARGS["Bash"], ROOT).reason  # type: ignore[arg-type]
    assert "because bubblewrap is not installed" in reason and "set by the workspace, not by you" in reason


def test_rules_apply_before_the_shell_default() -> None:
    rules = PermissionRules.parse(allow=["Bash(uv run pytest *)"], deny=["Bash(rm *)"])
    policy = ToolPolicy(rules=rules)
    assert policy.decide(SPECS["Bash"], {"command": "uv run pytest -q"}, ROOT).outcome == "allow"
    assert policy.decide(SPECS["Bash"], {"command": "uv run python x.py"}, ROOT).outcome == "ask"
    sandboxed = ToolPolicy(rules=rules, shell_sandboxed=True, mode="bypassPermissions", user_bypass=True)
    assert sandboxed.decide(SPECS["Bash"], {"command": "rm -rf x"}, ROOT).outcome == "deny"


def test_other_execute_tools_keep_the_mode_default() -> None:
    """Only the shell depends on the sandbox: Task, actions and MCP/plugin tools of class execute do not run in it."""
    task = SPECS["Bash"].model_copy(update={"name": "Task"})
    assert ToolPolicy().decide(task, {}, ROOT).outcome == "allow"
    assert ToolPolicy(mode="default").decide(task, {}, ROOT).outcome == "ask"


def test_default_mode_is_accept_edits() -> None:
    assert DEFAULT_PERMISSION_MODE == "acceptEdits"
    assert ToolPolicy().decide(SPECS["Write"], ARGS["Write"], ROOT).outcome == "allow"  # type: ignore[arg-type]


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
    policy = ToolPolicy(grant=ToolGrant.resolve(["*"], ["Bash"]))
    assert policy.available("Read") and not policy.available("Bash")
    only = ToolPolicy(grant=ToolGrant.resolve(["Read", "Grep", "mcp__github"]))
    assert only.available("Grep") and not only.available("Write")
    assert only.available("mcp__github__create_issue") and not only.available("mcp__gitlab__x")
    assert ToolPolicy(grant=ToolGrant.resolve(None)).available("Write")


def test_tool_entries_with_specifiers_become_rules() -> None:
    grant = ToolGrant.resolve(["Bash(git *)", "Read"], ["Bash(git push *)"])
    policy = ToolPolicy(mode="dontAsk", grant=grant)
    assert policy.available("Bash")
    assert policy.decide(SPECS["Bash"], {"command": "git status"}, ROOT).outcome == "allow"
    denied = policy.decide(SPECS["Bash"], {"command": "git push"}, ROOT)
    assert denied.outcome == "deny" and "the agent's disallowed_tools" in denied.reason
    assert policy.decide(SPECS["Bash"], {"command": "make"}, ROOT).outcome == "deny"  # dontAsk's default


def test_a_malformed_grant_entry_fails_closed_naming_it() -> None:
    with pytest.raises(BearAgentError, match=r"disallowed_tools entry 'Bash\(rm \*' is invalid"):
        ToolPolicy(grant=ToolGrant.resolve(None, ["Bash(rm *"]))
    with pytest.raises(BearAgentError, match=r"tools entry 'Bash\(ls:\* x\)' is invalid: the legacy"):
        ToolPolicy(grant=ToolGrant.resolve(["Bash(ls:* x)"]))


def test_chat_workspace_denies_everything_and_says_how_to_fix() -> None:
    decision = ToolPolicy(workspace_kind="chat").decide(SPECS["Read"], ARGS["Read"], ROOT)  # type: ignore[arg-type]
    assert decision.outcome == "deny" and "kind: project" in decision.reason


def test_permission_mode_parsing() -> None:
    assert parse_permission_mode("manual") == "default"
    assert parse_permission_mode("acceptEdits") == "acceptEdits"
    with pytest.raises(BearAgentError, match=r"'yolo' is not a permission mode\. Use one of: default, acceptEdits"):
        parse_permission_mode("yolo", where="agents/build.md: policy.permission_mode")


# ---- protected control files and BearAgent's state -------------------------------------------------------------

WRITE = SPECS["Write"]
EDIT = SPECS["Edit"]


def _write_to(path: str) -> dict[str, object]:
    return {"file_path": path, "content": "x"}


@pytest.mark.parametrize(
    ("mode", "user_bypass", "expected"),
    [
        ("default", False, "ask"),
        ("acceptEdits", False, "ask"),
        ("bypassPermissions", True, "ask"),  # even the user's own bypass
        ("plan", False, "deny"),
        ("dontAsk", False, "deny"),
    ],
)
def test_a_control_file_write_asks_in_every_mode_that_allows_writes(
    mode: str, user_bypass: bool, expected: str
) -> None:
    policy = ToolPolicy(mode=mode, user_bypass=user_bypass, shell_sandboxed=True)  # type: ignore[arg-type]
    for path in (".bearagent/config.yaml", ".claude/settings.json", ".git/hooks/pre-commit", "AGENTS.md", ".mcp.json"):
        decision = policy.decide(WRITE, _write_to(path), ROOT)  # type: ignore[arg-type]
        assert decision.outcome == expected, (mode, path)
        assert decision.suggested_rule == f"Edit(/{path})"
    ordinary = policy.decide(WRITE, _write_to("docs/AGENTS.md"), ROOT)  # type: ignore[arg-type]
    assert "control file" not in ordinary.reason and ordinary.outcome == MODE_DEFAULTS[mode]["write"]  # type: ignore[index]


@pytest.mark.parametrize(
    "spelling",
    [
        "sub/../.bearagent/config.yaml",
        "./.bearagent/config.yaml",
        "/ws/.bearagent/config.yaml",
        ".bearagent//config.yaml",
        ".BearAgent/config.yaml",  # the real config on a case-insensitive filesystem
        "agents.md",
        ".agents/skills/x/SKILL.md",
    ],
)
def test_control_files_are_recognised_however_they_are_spelled(spelling: str) -> None:
    decision = ToolPolicy().decide(WRITE, _write_to(spelling), ROOT)  # type: ignore[arg-type]
    assert decision.outcome == "ask" and "control file" in decision.reason, spelling
    assert decision.alternative is None  # no mode lets it through, so none is suggested


def test_only_an_allow_rule_naming_the_path_opens_a_control_file() -> None:
    weak = PermissionRules.parse(allow=["Edit", "Write", "Edit(**)", "Edit(**/config.yaml)", "Edit(*.yaml)"])
    assert ToolPolicy(rules=weak).decide(WRITE, _write_to(".bearagent/config.yaml"), ROOT).outcome == "ask"  # type: ignore[arg-type]
    named = PermissionRules.parse(allow=["Edit(/.bearagent/agents/**)", "Edit(AGENTS.md)"])
    policy = ToolPolicy(rules=named, mode="dontAsk")
    allowed = policy.decide(EDIT, {"file_path": ".bearagent/agents/x.md"}, ROOT)
    assert allowed.outcome == "allow" and allowed.rule == "Edit(/.bearagent/agents/**)"
    assert policy.decide(WRITE, _write_to("AGENTS.md"), ROOT).outcome == "allow"  # type: ignore[arg-type]
    assert policy.decide(WRITE, _write_to(".bearagent/config.yaml"), ROOT).outcome == "deny"  # type: ignore[arg-type]


def test_deny_and_ask_rules_still_apply_to_control_files() -> None:
    rules = PermissionRules.parse(allow=["Edit(/AGENTS.md)", "Edit(/.mcp.json)"], deny=["Edit(/AGENTS.md)"])
    rules = rules.merged(PermissionRules.parse(ask=["Write(/.mcp.json)"]))
    policy = ToolPolicy(rules=rules)
    denied = policy.decide(WRITE, _write_to("AGENTS.md"), ROOT)  # type: ignore[arg-type]
    assert denied.outcome == "deny" and denied.rule == "Edit(/AGENTS.md)"
    asked = policy.decide(WRITE, _write_to(".mcp.json"), ROOT)  # type: ignore[arg-type]
    assert asked.outcome == "ask" and asked.rule == "Write(/.mcp.json)"


def test_reading_a_control_file_is_an_ordinary_read() -> None:
    assert ToolPolicy(mode="dontAsk").decide(SPECS["Read"], {"file_path": ".bearagent/config.yaml"}, ROOT).outcome == (
        "allow"
    )


@pytest.mark.parametrize(
    "path",
    [".bearagent/state.db", ".bearagent/state.db-wal", ".bearagent/locks/session-x.lock", ".bearagent/transcripts/a"],
)
def test_no_rule_lets_a_tool_write_bearagents_state(path: str) -> None:
    rules = PermissionRules.parse(allow=[f"Edit(/{path})", "Edit(/.bearagent/**)"])
    policy = ToolPolicy(rules=rules, mode="bypassPermissions", user_bypass=True)
    decision = policy.decide(WRITE, _write_to(path), ROOT)  # type: ignore[arg-type]
    assert decision.outcome == "deny" and "no permission rule or mode" in decision.reason
    assert policy.decide(SPECS["Read"], {"file_path": path}, ROOT).outcome == "allow"


def test_any_write_tool_with_a_path_argument_is_guarded() -> None:
    notebook = WRITE.model_copy(update={"name": "NotebookEdit"})
    asked = ToolPolicy().decide(notebook, {"notebook_path": ".claude/x.ipynb"}, ROOT)
    assert asked.outcome == "ask" and asked.suggested_rule == "Edit(/.claude/x.ipynb)"
    plugin = WRITE.model_copy(update={"name": "Patch"})
    assert ToolPolicy().decide(plugin, {"path": ".git/config"}, ROOT).outcome == "ask"
    rule = PermissionRules.parse(allow=["Patch(path:.git/config)"])
    assert ToolPolicy(rules=rule).decide(plugin, {"path": ".git/config"}, ROOT).outcome == "allow"
    read_only = SPECS["Read"].model_copy(update={"name": "Peek"})
    assert ToolPolicy().decide(read_only, {"path": ".git/config"}, ROOT).outcome == "allow"

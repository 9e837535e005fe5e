"""The tool grant: an agent's tools / disallowed_tools / mcp lists resolved once, used by projection and gate alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.config_ws import agent_file, load, write

from bearagent.domain.grant import GrantProblem, ToolGrant
from bearagent.domain.tools import ToolSpec
from bearagent.tools.builtin import native_tools
from bearagent.tools.policy import ToolPolicy

SPECS = {t.spec.name: t.spec for t in native_tools()}
ROOT = Path("/ws")
CONFIG = "models:\n  demo: {provider: scripted, script: s.yaml}\ndefault_model: demo\n"


def test_entries_are_split_into_names_rules_and_mcp_entries() -> None:
    grant = ToolGrant.resolve(
        ["Read", "Bash(git *)", "Edit(/docs/**)", "mcp__time__get_current_time", "Bash(*)"],
        ["Bash(rm *)", "Write", "mcp__github"],
    )
    assert grant.listed == ("Read", "Bash", "Edit")
    assert grant.allow_rules == ("Bash(git *)", "Edit(/docs/**)")  # `Bash(*)` is plain Bash: it grants, no rule
    assert grant.mcp_entries == ("mcp__time__get_current_time",)
    assert grant.deny_rules == ("Bash(rm *)",)
    assert grant.removed == frozenset({"Write", "mcp__github"})
    assert grant.problems == ()


@pytest.mark.parametrize(
    ("tools", "disallowed", "name", "expected"),
    [
        (None, (), "Bash", True),  # omitted: the projection's default set, not restricted further
        (["*"], ["Bash"], "Bash", False),  # removed first
        (["*"], ["Bash"], "Read", True),
        (["Read"], (), "Bash", False),
        (["Read", "Bash(git *)"], (), "Bash", True),  # a specifier entry grants its tool
        (["Read"], ["Bash(rm *)"], "Read", True),
        (None, ["Bash(rm *)"], "Bash", True),  # a deny specifier is a rule, not a removal
        (["Read"], (), "Skill", True),  # runtime tools come from their own lists
        (["Read"], (), "action__review", True),
        (["Read"], ["Task"], "Task", False),
        (["Read", "mcp__time"], (), "mcp__time__convert_time", True),
        (["Read", "mcp__time__get_current_time"], (), "mcp__time__convert_time", False),
        (["Read", "mcp__time__get_current_time"], (), "mcp__time__get_current_time", True),
        (["Read", "mcp__time__*"], (), "mcp__time__convert_time", True),
        (["Read"], (), "mcp__time__convert_time", True),  # no MCP entry in tools: the `mcp` list decides
        (None, ["mcp__*"], "mcp__time__x", False),
        (None, ["mcp__time"], "mcp__time__x", False),
        (None, ["mcp__time"], "mcp__timer__x", True),
    ],
)
def test_permits(tools: list[str] | None, disallowed: list[str], name: str, expected: bool) -> None:
    assert ToolGrant.resolve(tools, disallowed).permits(name) is expected


def test_mcp_allowlist_and_tools_entries_both_apply() -> None:
    grant = ToolGrant.resolve(["Read", "mcp__time__get_current_time"], mcp=["time", "fs.read_file"])
    assert grant.permits_mcp("time", "get_current_time")
    assert not grant.permits_mcp("time", "convert_time")
    assert not grant.permits_mcp("fs", "read_file")  # the tools entries restrict MCP tools to those named
    only_mcp_list = ToolGrant.resolve(["Read"], mcp=["fs.read_file"])
    assert only_mcp_list.permits_mcp("fs", "read_file") and not only_mcp_list.permits_mcp("fs", "write_file")


def test_malformed_entries_are_problems() -> None:
    grant = ToolGrant.resolve(["Read", "Bash(git *"], ["(rm)"])
    assert grant.problems == (GrantProblem("tools", "Bash(git *"), GrantProblem("disallowed_tools", "(rm)"))


def test_the_gate_policy_enforces_the_same_grant() -> None:
    grant = ToolGrant.resolve(["Read", "Bash(git *)"], ["Bash(git push *)"])
    policy = ToolPolicy(grant=grant)
    assert policy.grant is grant
    assert policy.available("Bash") and not policy.available("Write")
    assert policy.decide(SPECS["Bash"], {"command": "git status"}, ROOT).outcome == "allow"
    assert policy.decide(SPECS["Bash"], {"command": "git push origin"}, ROOT).outcome == "deny"
    assert policy.decide(SPECS["Bash"], {"command": "ls"}, ROOT).outcome == "ask"  # the normal decision
    assert policy.decide(SPECS["Write"], {"file_path": "a", "content": ""}, ROOT).outcome == "deny"


def _mcp(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=f"mcp {name}", input_schema={"type": "object"})


def test_projection_and_grant_agree(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", CONFIG)
    write(tmp_path, ".mcp.json", '{"mcpServers": {"time": {"command": "x"}}}')
    write(
        tmp_path,
        ".bearagent/agents/a.md",
        agent_file(
            tools='[Read, "Bash(git *)", mcp__time__get_current_time]', disallowed_tools='["Bash(rm *)"]', skills="[]"
        ),
    )
    ws = load(tmp_path, tmp_path / "home")
    live = [("time", _mcp("get_current_time")), ("time", _mcp("convert_time"))]
    projection = ws.project("a", mcp_tools=live)
    names = [t.name for t in projection.tools]
    assert names == ["Read", "Bash", "mcp__time__get_current_time"]
    assert projection.lookup("mcp__time__convert_time") is None
    assert not [d for d in projection.diagnostics if d.code == "agent.unknown_tool"]  # no warning for `Bash(git *)`
    policy = ToolPolicy(grant=projection.grant)
    assert all(policy.available(n) for n in names) and not policy.available("mcp__time__convert_time")
    assert policy.decide(SPECS["Bash"], {"command": "rm -rf x"}, ROOT).outcome == "deny"


def test_a_malformed_entry_is_an_error_diagnostic_in_the_projection(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", CONFIG)
    write(tmp_path, ".bearagent/agents/a.md", agent_file(tools='[Read, "Bash(git *"]'))
    projection = load(tmp_path, tmp_path / "home").project("a")
    assert [d.field for d in projection.errors if d.code == "agent.invalid_tool_entry"] == ["tools"]

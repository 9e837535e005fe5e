"""AgentRegistry: sources and precedence, aliases, name rules, diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.config_ws import agent_file, codes, isolated_env, load, only, write

from bearagent.domain.errors import BearAgentError

CLAUDE_AGENT = """\
---
name: code-reviewer
description: Expert code review specialist. Use proactively after writing code.
tools: Read, Grep, Glob, Bash
disallowedTools: Bash
model: sonnet
maxTurns: 12
permissionMode: acceptEdits
---
You are a senior code reviewer.
"""


def test_claude_code_agent_file_loads_with_aliases(tmp_path: Path) -> None:
    write(tmp_path, ".claude/agents/code-reviewer.md", CLAUDE_AGENT)
    ws = load(tmp_path, tmp_path / "home")
    agent = ws.agents.get("code-reviewer")
    assert agent is not None
    assert agent.tools == ("Read", "Grep", "Glob", "Bash")
    assert agent.disallowed_tools == ("Bash",)
    assert agent.model == "sonnet"
    assert agent.policy.max_turns == 12 and agent.policy.permission_mode == "acceptEdits"
    assert agent.prompt == "You are a senior code reviewer."
    resolved = ws.agents.resolved("code-reviewer")
    assert resolved is not None and resolved.source.id == "compat:.claude/agents" and agent.level == "workspace"


def test_precedence_workspace_over_compat_over_user_over_builtin_and_shadowing_is_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws_root = tmp_path / "ws"
    write(ws_root, ".bearagent/agents/build.md", agent_file("Workspace build."))
    write(ws_root, ".claude/agents/build.md", agent_file("Claude build."))
    write(home, "bearagent/agents/build.md", agent_file("User build."))
    write(home, "bearagent/agents/plan.md", agent_file("User plan."))
    ws = load(ws_root, home)
    build = ws.agents.resolved("build")
    assert build is not None and build.item.description == "Workspace build."
    assert [c.source.id for c in build.shadows] == ["compat:.claude/agents", "user", "builtin"]
    plan = ws.agents.resolved("plan")
    assert plan is not None and plan.source.id == "user" and [c.source.id for c in plan.shadows] == ["builtin"]
    shadowed = [d for d in ws.agents.diagnostics if d.code == "config.shadowed" and d.subject == "build"]
    assert len(shadowed) == 3 and all(d.severity == "info" for d in shadowed)
    assert "shadows the one from builtin" in next(
        d.message for d in shadowed if "builtin" in d.source or "builtin" in d.message
    )


def test_compat_false_ignores_claude_dirs(tmp_path: Path) -> None:
    write(tmp_path, ".claude/agents/x.md", agent_file())
    write(tmp_path, ".bearagent/config.yaml", "compat: false\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.agents.get("x") is None


def test_duplicate_name_within_one_source_is_an_error_naming_both_paths(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/a.md", agent_file(name="twin"))
    write(tmp_path, ".bearagent/agents/b.md", agent_file(name="twin"))
    write(tmp_path, "home/bearagent/agents/twin.md", agent_file("User twin."))
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.agents.diagnostics, "config.duplicate_name")
    assert d.severity == "error" and "a.md" in d.message and "b.md" in d.message and "unusable" in d.message
    assert ws.agents.get("twin") is None  # not silently falling back to the user one
    assert set(ws.agents.broken["twin"]) == {
        str(tmp_path / ".bearagent/agents/a.md"),
        str(tmp_path / ".bearagent/agents/b.md"),
    }
    with pytest.raises(BearAgentError) as info:
        ws.agents.require("twin")
    assert "defined twice" in info.value.info.message


def test_description_is_required(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/nodesc.md", "---\nmode: primary\n---\nbody\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.agents.diagnostics, "agent.missing_description")
    assert d.severity == "error" and d.fix and "description:" in d.fix
    assert ws.agents.get("nodesc") is None


def test_invalid_name_is_an_error_with_a_suggested_name(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/x.md", agent_file(name="My_Agent"))
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.agents.diagnostics, "agent.invalid_name")
    assert "'my-agent'" in (d.fix or "") and d.line == 3


def test_name_defaults_to_stem_and_a_different_name_is_noted(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/file-name.md", agent_file(name="other-name"))
    ws = load(tmp_path, tmp_path / "home")
    assert ws.agents.get("other-name") is not None
    assert "agent.name_differs" in codes(ws.agents.diagnostics)


def test_unknown_and_unsupported_keys_are_warnings_never_silent(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/x.md", agent_file(colour="[Read]", color="blue", effort="high"))
    ws = load(tmp_path, tmp_path / "home")
    unknown = only(ws.agents.diagnostics, "config.unknown_key")
    assert "'colour'" in unknown.message and unknown.severity == "warning" and unknown.line == 3
    unsupported = [d for d in ws.agents.diagnostics if d.code == "agent.unsupported_key"]
    assert {d.field for d in unsupported} == {"color", "effort"}
    assert ws.agents.get("x") is not None


def test_a_misspelt_guarding_key_skips_the_agent_never_widens_it(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/x.md", agent_file(toolz="[Read]"))
    ws = load(tmp_path, tmp_path / "home")
    typo = only(ws.agents.diagnostics, "agent.misspelt_guard")
    assert typo.severity == "error" and "did you mean 'tools'" in typo.message and typo.line == 3
    assert "the agent was skipped" in typo.message and "it is ignored" not in typo.message
    assert ws.agents.get("x") is None


def test_all_spec_fields_parse(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/agents/full.md",
        """\
        ---
        description: Full.
        mode: primary
        model: workspace/gpt
        tools: ["*"]
        disallowed_tools: [Bash]
        skills: [a]
        actions: [review]
        mcp: [time, fs.read_file]
        switch: [plan]
        subagents: [explore]
        system_reminder: Stay focused.
        policy: {max_turns: 5, budgets: {max_tool_calls: 3}, permission_mode: plan}
        temperature: 0.2
        max_output_tokens: 1000
        ---
        Prompt.
        """,
    )
    ws = load(tmp_path, tmp_path / "home")
    a = ws.agents.get("full")
    assert a is not None, [d.render() for d in ws.agents.diagnostics]
    assert a.mode == "primary" and a.tools == ("*",) and a.mcp == ("time", "fs.read_file")
    assert a.policy.budgets == {"max_tool_calls": 3} and a.temperature == 0.2 and a.system_reminder == "Stay focused."


def test_invalid_field_value_skips_the_file_with_the_field_named(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/agents/x.md", agent_file(mode="boss"))
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.agents.diagnostics, "agent.invalid_field")
    assert d.field == "mode" and d.line == 3


def test_agent_scoped_hooks_are_parsed_and_validated(tmp_path: Path) -> None:
    write(tmp_path, "hooks/ok.sh", "#!/bin/sh\nexit 0\n", executable=True)
    write(
        tmp_path,
        ".bearagent/agents/h.md",
        """\
        ---
        description: With hooks.
        hooks:
          PreToolUse:
            - matcher: Bash
              hooks: [{type: command, command: hooks/ok.sh}]
          Stopp:
            - hooks: [{type: command, command: hooks/ok.sh}]
        ---
        body
        """,
    )
    ws = load(tmp_path, tmp_path / "home")
    agent = ws.agents.get("h")
    assert agent is not None and len(agent.hooks) == 1 and agent.hooks[0].agent == "h"
    assert ws.hooks.matchers("PreToolUse", agent=agent) == agent.hooks
    assert ws.hooks.matchers("PreToolUse") == ()
    d = only(ws.agents.diagnostics, "hooks.unknown_event")
    assert "did you mean 'Stop'" in d.message


def test_builtin_agents_are_present_and_real(tmp_path: Path) -> None:
    ws = load(tmp_path, tmp_path / "home", env=isolated_env(tmp_path / "home"))
    for name, mode in (("build", "primary"), ("plan", "primary"), ("explore", "subagent")):
        agent = ws.agents.get(name)
        assert agent is not None and agent.mode == mode and len(agent.prompt) > 500
    assert not [d for d in ws.agents.diagnostics if d.severity != "info"]


def test_require_unknown_agent_suggests(tmp_path: Path) -> None:
    ws = load(tmp_path, tmp_path / "home")
    with pytest.raises(BearAgentError) as info:
        ws.agents.require("biuld")
    assert "did you mean 'build'" in info.value.info.message and info.value.hint


def test_agent_files_in_subdirectories_load_and_a_name_two_files_share_is_an_error_naming_both(
    tmp_path: Path,
) -> None:
    write(tmp_path, ".claude/agents/review/security.md", agent_file("Reviews security."))
    write(tmp_path, ".claude/agents/lang/python/py-expert.md", agent_file("Python.", name="py-expert"))
    write(tmp_path, ".claude/agents/review/README.md", "# not an agent\n")
    write(tmp_path, ".claude/agents/.archive/old.md", agent_file("Old."))
    write(tmp_path, ".claude/agents/a/tester.md", agent_file("A tester."))
    write(tmp_path, ".claude/agents/b/tester.md", agent_file("Another tester."))
    ws = load(tmp_path, tmp_path / "home")
    security = ws.agents.get("security")
    assert security is not None and security.description == "Reviews security."  # the folder is not in the name
    assert ws.agents.get("py-expert") is not None and ws.agents.get("old") is None
    duplicate = only(ws.agents.diagnostics, "config.duplicate_name")
    assert duplicate.severity == "error" and "a/tester.md" in duplicate.message and "b/tester.md" in duplicate.message
    assert duplicate.fix and "a subdirectory does not change an agent's name" in duplicate.fix
    assert ws.agents.get("tester") is None and "tester" in ws.agents.broken

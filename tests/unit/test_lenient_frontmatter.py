"""The frontmatter people write, read as Claude Code reads it: unquoted `: ` in values, the `/agents` wizard's
`Examples:` + `<example>` descriptions, multi-line descriptions, names with dots; fail closed for guard keys."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.support.config_ws import codes, load, only, write

from bearagent.config.lenient_frontmatter import LenientError, parse_lenient
from bearagent.config.safe_yaml import MAX_YAML_BYTES
from bearagent.registries.agents import FRONTMATTER_KEYS
from bearagent.trust.guards import guard_failures

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE / ".claude" / "agents", root / ".claude" / "agents")
    return root


def test_the_wizard_style_with_examples_loads_with_its_whole_description(project: Path, tmp_path: Path) -> None:
    ws = load(project, tmp_path / "home")
    agent = ws.agents.get("code-reviewer")
    assert agent is not None
    assert agent.description.startswith("Use this agent when you need to review code that was just written")
    assert "missing tests. Examples:\n\n<example>\nContext: The user has just implemented a new function." in (
        agent.description
    )
    assert 'user: "Can you check my last commit?"' in agent.description
    assert agent.description.endswith("</example>")
    assert agent.model == "sonnet" and agent.tools == ("Read", "Grep", "Glob")
    assert agent.prompt.startswith("You are a senior code reviewer.")
    info = next(d for d in ws.diagnostics() if d.code == "frontmatter.not_strict_yaml" and "code-reviewer" in d.source)
    assert info.severity == "info" and info.line == 3 and "mapping values are not allowed" in info.message
    color = next(d for d in ws.diagnostics() if d.field == "color")  # keys after the examples are still keys
    assert color.code == "agent.unsupported_key"


def test_unquoted_colons_multi_line_descriptions_and_dotted_names_load(project: Path, tmp_path: Path) -> None:
    ws = load(project, tmp_path / "home")
    analyst = ws.agents.get("data-analyst")
    assert analyst is not None and analyst.description == (
        "Use when analysing experiment results. Triggers on: 'analyze A/B test', 'significance', 'conversion rate'. "
        "Not for: dashboards."
    )
    notes = ws.agents.get("release-notes")
    assert notes is not None and notes.mode == "subagent" and notes.model == "haiku"
    assert notes.description == (
        'Writes release notes from the changes since the last tag.\nUse when: preparing a release, or the user asks "what changed?".'
    )
    assert ws.agents.get("powershell-5.1-expert") is not None
    assert "broken" not in ws.agents.names()  # a duplicate key is still an error
    assert only(ws.diagnostics(), "config.yaml_syntax").source.endswith("broken.md")
    typo = next(d for d in ws.diagnostics() if d.field == "tool")
    assert typo.severity == "error" and "did you mean 'tools'" in typo.message  # a guarding key: skipped (issue 32)


def test_a_misspelt_key_in_a_lenient_file_is_still_a_key(tmp_path: Path) -> None:
    write(tmp_path, ".claude/agents/a.md", "---\ndescription: Does: things\ntool: Read\n---\nbody\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.agents.get("a") is None  # `tool:` would have limited it: skipped, never run with every tool
    assert "did you mean 'tools'" in only(ws.diagnostics(), "agent.misspelt_guard").message


def test_crlf_files_load_too(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "agents" / "win.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\r\nname: win\r\ndescription: My agent [ref: ABC-123]\r\nmodel: sonnet\r\n---\r\nBody.\r\n")
    agent = load(tmp_path, tmp_path / "home").agents.get("win")
    assert agent is not None and agent.description == "My agent [ref: ABC-123]" and agent.model == "sonnet"


def test_skills_and_actions_are_read_leniently_too(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fill PDF forms. Use when: a .pdf is given.\n---\nSteps.\n",
    )
    write(
        tmp_path, ".bearagent/actions/ship.md", "---\ndescription: Ship it. Needs: a clean tree\n---\nShip $ARGUMENTS\n"
    )
    ws = load(tmp_path, tmp_path / "home")
    skill = ws.skills.get("pdf")
    assert skill is not None and skill.description == "Fill PDF forms. Use when: a .pdf is given."
    action = ws.actions.get("ship")
    assert action is not None and action.description == "Ship it. Needs: a clean tree"


@pytest.mark.parametrize(
    "frontmatter",
    [
        "description: Guards: many\ntools: [Read\n",  # a tool list that is not YAML never becomes text
        "description: Guards: many\nhooks:\n  PreToolUse: [\n",
        "description: Guards: many\ndisallowedTools:\n  - Bash\n  bad: [\n",
    ],
)
def test_guard_keys_never_fall_back_to_text_so_the_file_still_stops_a_run(tmp_path: Path, frontmatter: str) -> None:
    write(tmp_path, ".claude/agents/guarded.md", f"---\n{frontmatter}---\nbody\n")
    ws = load(tmp_path, tmp_path / "home")
    assert "guarded" not in ws.agents.names()
    failures = guard_failures(ws.diagnostics(), [tmp_path / ".claude" / "agents"])
    assert [d.code for d in failures] == ["config.yaml_syntax"]


def test_a_lenient_file_keeps_its_structured_values(tmp_path: Path) -> None:
    text = """---
description: Reviews: diffs
disallowedTools: [Bash]
hooks:
  PreToolUse:
    - matcher: Edit
      hooks: [{type: command, command: "true"}]
---
body
"""
    write(tmp_path, ".claude/agents/r.md", text)
    agent = load(tmp_path, tmp_path / "home").agents.get("r")
    assert agent is not None and agent.disallowed_tools == ("Bash",)
    assert [h.event for h in agent.hooks] == ["PreToolUse"] and agent.hooks[0].matcher == "Edit"


def test_the_lenient_reader_refuses_what_it_cannot_read() -> None:
    with pytest.raises(LenientError, match="before the first key"):
        parse_lenient("  - stray\ndescription: a: b\n", FRONTMATTER_KEYS)
    with pytest.raises(LenientError, match="duplicate key"):
        parse_lenient("description: a: b\ndescription: c\n", FRONTMATTER_KEYS)
    with pytest.raises(LenientError):  # no alias expansion on the lenient path
        parse_lenient("description: a: b\ntools: &t [Read]\nskills: *t\n", FRONTMATTER_KEYS)
    assert parse_lenient("description: x\nmodel: &m sonnet\ncolor: *m\n", FRONTMATTER_KEYS)["color"] == "*m"


def test_the_size_limit_holds_on_the_lenient_path(tmp_path: Path) -> None:
    big = "x" * (MAX_YAML_BYTES + 10)
    write(tmp_path, ".claude/agents/big.md", f"---\ndescription: a: {big}\n---\nbody\n")
    ws = load(tmp_path, tmp_path / "home")
    assert "big" not in ws.agents.names() and "config.yaml_too_large" in codes(ws.diagnostics())
    assert "frontmatter.not_strict_yaml" not in codes(ws.diagnostics())


@pytest.mark.parametrize(
    ("name", "fix"),
    [("My_Agent", "rename it to 'my-agent'"), ("code:reviewer", "rename it to 'code-reviewer'"), ("___", "write e.g.")],
)
def test_an_invalid_name_gets_a_fix_that_is_valid(tmp_path: Path, name: str, fix: str) -> None:
    write(tmp_path, ".claude/agents/x.md", f"---\nname: '{name}'\ndescription: Does things.\n---\nbody\n")
    d = only(load(tmp_path, tmp_path / "home").diagnostics(), "agent.invalid_name")
    assert d.fix is not None and d.fix.startswith(fix) and "dots" in d.message

"""Claude Code's `arguments` frontmatter in commands and skills: named positional arguments substituted as `$name`
(with `$1`, `$ARGUMENTS` still working, `\\$name` literal, a substituted value never scanned again)."""

from __future__ import annotations

from pathlib import Path

from tests.support.config_ws import load, write

from bearagent.cli.slash_commands import skill_command
from bearagent.registries.commands import render_command

COMMAND = """---
description: Fix an issue
arguments: [issue, priority, issue_id]
---
Fix issue $issue at priority $priority ($issue_id). All: $ARGUMENTS. First: $1. Literal: \\$issue.
"""


def test_named_arguments_in_a_command(tmp_path: Path) -> None:
    write(tmp_path, ".claude/commands/fix.md", COMMAND)
    loaded = load(tmp_path, tmp_path / "home")
    action = loaded.actions.get("fix")
    assert action is not None and action.argument_names == ("issue", "priority", "issue_id")
    prompt = render_command(action, '42 "very high" $priority', root=tmp_path).prompt
    assert prompt == (
        'Fix issue 42 at priority very high ($priority). All: 42 "very high" $priority. First: 42. Literal: $issue.'
    )
    short = render_command(action, "7", root=tmp_path).prompt
    assert short.startswith("Fix issue 7 at priority  ()") and "ARGUMENTS:" not in short


def test_named_arguments_in_a_skill_and_a_bad_list_is_a_warning(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".claude/skills/triage/SKILL.md",
        "---\nname: triage\ndescription: Triage.\narguments: ticket team\n---\nTriage $ticket for $team.\n",
    )
    write(tmp_path, ".claude/commands/bad.md", "---\ndescription: Bad\narguments: [ok, not-a-name]\n---\nx $ok\n")
    loaded = load(tmp_path, tmp_path / "home")
    skill = loaded.skills.get("triage")
    assert skill is not None and skill.argument_names == ("ticket", "team")
    rendered = render_command(skill_command(skill), "T-9 infra", root=tmp_path).prompt
    assert rendered.startswith("Triage T-9 for infra.")
    bad = loaded.actions.get("bad")
    assert bad is not None and bad.argument_names == ()
    (warning,) = [d for d in loaded.diagnostics() if d.field == "arguments"]
    assert warning.severity == "warning" and "must be names" in warning.message

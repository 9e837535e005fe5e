"""Custom slash commands (`.claude/commands/**/*.md`, `.bearagent/commands/`): names and namespacing, frontmatter,
`$ARGUMENTS` / `$1` / `$ARGUMENTS[N]`, `!` lines never run, `@file` only inside the workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.support.config_ws import codes, load, write

from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import ActionSpec
from bearagent.registries.commands import MAX_ATTACHED_FILES, render_command
from bearagent.trust import workspace_trust_surface

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    return root


def command(template: str, name: str = "c") -> ActionSpec:
    return ActionSpec(name=name, description="d", inputs={"type": "object"}, template=template, kind="command")  # type: ignore[arg-type]


def test_commands_load_with_their_frontmatter_and_namespaced_names(project: Path, tmp_path: Path) -> None:
    ws = load(project, tmp_path / "home")
    review = ws.actions.get("review")
    assert review is not None and review.kind == "command" and review.level == "workspace"
    assert review.description == "Review a pull request: correctness first, then tests"
    assert review.argument_hint == "[pr-number] [focus]"
    assert review.allowed_tools == ("Bash(git diff:*)", "Bash(git log:*)")
    assert review.model == "claude-3-5-haiku-20241022"
    component = ws.actions.get("frontend:component")
    assert component is not None and ws.actions.find("component") == component  # the bare last part, while unique
    changelog = ws.actions.get("changelog")  # no frontmatter at all: the first line is the description
    assert changelog is not None and changelog.description.startswith("Summarise the changes since the last release")
    warning = next(d for d in ws.diagnostics() if d.code == "command.model_inherited")
    assert warning.severity == "warning" and "claude-3-5-haiku-20241022" in warning.message
    assert "command.shell_not_run" in codes(ws.diagnostics())


def test_a_bare_name_two_namespaces_share_is_ambiguous_and_an_action_shadows_a_command(tmp_path: Path) -> None:
    write(tmp_path, ".claude/commands/a/build.md", "Build A.\n")
    write(tmp_path, ".claude/commands/b/build.md", "Build B.\n")
    write(tmp_path, ".claude/commands/ship.md", "Ship from .claude.\n")
    write(tmp_path, ".bearagent/commands/ship.md", "Ship from .bearagent.\n")
    write(tmp_path, ".bearagent/actions/ship.md", "---\ndescription: The action.\n---\nShip it.\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.actions.find("build") is None and ws.actions.ambiguous("build") == ["a:build", "b:build"]
    with pytest.raises(BearAgentError, match="could be any of the commands a:build, b:build"):
        ws.actions.require("build")
    ship = ws.actions.resolved("ship")
    assert ship is not None and ship.item.kind == "action"
    assert [c.source.id for c in ship.shadows] == ["workspace:commands", "compat:.claude/commands"]


def test_compat_false_drops_claude_commands_but_not_bearagent_commands(tmp_path: Path) -> None:
    write(tmp_path, ".claude/commands/a.md", "A.\n")
    write(tmp_path, ".bearagent/commands/b.md", "B.\n")
    write(tmp_path, ".bearagent/config.yaml", "compat: false\n")
    assert load(tmp_path, tmp_path / "home").actions.names() == ["b"]


def test_arguments_positional_indexes_escapes_and_the_appended_arguments() -> None:
    c = command("Fix #$1 ($2, $3) [$ARGUMENTS[0]|$ARGUMENTS[1]] all=$ARGUMENTS \\$1 $0 $9")
    assert render_command(c, '123 "high prio"', root=None).prompt == (
        'Fix #123 (high prio, $3) [123|high prio] all=123 "high prio" $1 $0 $9'
    )
    plain = command("Summarise the changes.")
    assert render_command(plain, "since v1.2", root=None).prompt == "Summarise the changes.\n\nARGUMENTS: since v1.2"
    assert render_command(plain, "", root=None).prompt == "Summarise the changes."


def test_shell_lines_are_never_run_and_say_so(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    c = command(f"Status: !`touch {marker}`\n\n```!\ntouch {marker}\n```\nKEY=!`touch {marker}` stays")
    rendered = render_command(c, "", root=tmp_path)
    assert not marker.exists()
    assert rendered.prompt.count("[not run: `touch") == 2 and f"KEY=!`touch {marker}` stays" in rendered.prompt
    assert len(rendered.notes) == 2 and rendered.notes[0].startswith("not run: `touch")


def test_file_references_attach_workspace_files_only(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "docs/a.md", "alpha\n")
    write(tmp_path, "secret.txt", "TOP SECRET\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    c = command("Read @docs/a.md, @../secret.txt, @link.txt, @/etc/passwd, @missing.md and mail@example.com")
    rendered = render_command(c, "also @docs/a.md", root=root)
    assert rendered.attached == ("docs/a.md",)
    assert '<file path="docs/a.md">\nalpha\n</file>' in rendered.prompt
    assert "TOP SECRET" not in rendered.prompt and "root:" not in rendered.prompt
    assert any("@link.txt not attached" in n for n in rendered.notes)
    many = command(" ".join(f"@f{i}.txt" for i in range(MAX_ATTACHED_FILES + 2)))
    for i in range(MAX_ATTACHED_FILES + 2):
        write(root, f"f{i}.txt", f"{i}\n")
    assert len(render_command(many, "", root=root).attached) == MAX_ATTACHED_FILES


def test_a_workspace_commands_and_skills_allowed_tools_are_trust_surface(project: Path, tmp_path: Path) -> None:
    write(project, ".claude/commands/look.md", "---\nallowed-tools: Read, Grep\n---\nLook.\n")
    ws = load(project, tmp_path / "home")
    rendered = [item.render() for item in workspace_trust_surface(ws).items]
    assert ".claude/commands/review.md:4: command /review pre-approves 'Bash(git diff:*)' in `allowed-tools`" in (
        rendered
    )
    assert ".claude/skills/commit-helper/SKILL.md:4: skill commit-helper pre-approves 'Bash(git add:*)' in " in (
        "\n".join(rendered)
    )
    assert not any("/look" in r for r in rendered)  # read-only tools widen nothing


def test_skill_allowed_tools_are_split_outside_parentheses(project: Path, tmp_path: Path) -> None:
    write(
        project,
        ".claude/skills/s2/SKILL.md",
        "---\nname: s2\ndescription: x\nallowed-tools: Bash(git log --format=%h, -1) Read\n---\nb\n",
    )
    ws = load(project, tmp_path / "home")
    helper = ws.skills.get("commit-helper")
    assert helper is not None and helper.allowed_tools == ("Bash(git add:*)", "Bash(git diff:*)")
    s2 = ws.skills.get("s2")
    assert s2 is not None and s2.allowed_tools == ("Bash(git log --format=%h, -1)", "Read")


def test_a_skill_is_a_slash_command_between_actions_and_commands(tmp_path: Path) -> None:
    from bearagent.cli.slash_commands import SlashInvocation, command_help, workspace_command

    write(tmp_path, ".claude/skills/deploy/SKILL.md", "---\nname: deploy\ndescription: Deploys.\n---\nDeploy $1 now.\n")
    write(tmp_path, ".claude/commands/deploy.md", "---\ndescription: The old command.\n---\nOld deploy.\n")
    write(tmp_path, ".bearagent/actions/ship.md", "---\ndescription: Ships.\n---\nShip.\n")
    write(tmp_path, ".claude/skills/ship/SKILL.md", "---\nname: ship\ndescription: A ship skill.\n---\nSkill ship.\n")
    write(tmp_path, ".claude/skills/quiet/SKILL.md", "---\nname: quiet\ndescription: Q.\nuser-invocable: no\n---\nq\n")
    ws = load(tmp_path, tmp_path / "home")
    deploy = workspace_command("/deploy staging", ws)
    assert isinstance(deploy, SlashInvocation) and deploy.prompt.startswith("Deploy staging now.")  # skill > command
    ship = workspace_command("/ship", ws)
    assert isinstance(ship, SlashInvocation) and ship.prompt == "Ship."  # an action > a skill
    assert workspace_command("/quiet", ws) is None  # `user-invocable: no`
    quiet = ws.skills.get("quiet")
    assert quiet is not None and not quiet.user_invocable
    help_text = "\n".join(command_help(ws))
    assert "/deploy (shadowed by the skill of this name)" in help_text
    assert "/ship (shadowed by the action of this name)" in help_text and "/quiet" not in help_text

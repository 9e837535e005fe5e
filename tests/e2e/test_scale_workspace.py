"""Bounded by construction (issue 32): a `.claude/` folder with 2,000 agents, 2,000 skills and 1,000 commands.

Every diagnostic, notice and listing built from workspace content is capped with a count of what was left out, so
the number of files cannot crash a command: each one below exits 0 (or 2 with a diagnostic), never with a traceback,
and no line it prints grows with the number of files (the longest allowed is one agent's row or one diagnostic)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write

from bearagent.cli import main
from bearagent.domain.diagnostics import MAX_MESSAGE_CHARS, Diagnostic, name_list

pytestmark = pytest.mark.slow  # loading 5,000 files takes several seconds per command on a shared machine

AGENTS, SKILLS, COMMANDS = 2_000, 2_000, 1_000
LONGEST_LINE = MAX_MESSAGE_CHARS + 200  # one diagnostic with its location, never a joined list of every file


def _generate(root: Path) -> Path:
    for i in range(AGENTS):
        write(
            root,
            f".claude/agents/agent-{i:04d}.md",
            f"---\nname: agent-{i:04d}\ndescription: Agent number {i}, which does one specific job very well "
            "and says so at length to fill the Task tool's listing.\nmodel: sonnet\ntools: Read, Grep\n---\n"
            f"You are agent {i}.\n",
        )
    for i in range(SKILLS):
        write(
            root,
            f".claude/skills/skill-{i:04d}/SKILL.md",
            f"---\nname: skill-{i:04d}\ndescription: Skill {i}.\n---\nDo {i}.\n",
        )
    for i in range(COMMANDS):
        write(root, f".claude/commands/cmd-{i:04d}.md", f"---\ndescription: Command {i}\n---\nDo {i} with $ARGUMENTS\n")
    write(
        root,
        ".bearagent/config.yaml",
        "default_model: scripted\nmodels:\n  scripted: {provider: scripted, script: script.yaml}\n",
    )
    write(root, ".bearagent/script.yaml", 'turns:\n  - text: "Done."\n')
    return root


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("scale")
    return _generate(base / "ws"), base / "home"


def _invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


def _assert_bounded(result: Result, *, codes: tuple[int, ...] = (0,)) -> None:
    assert result.exit_code in codes, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    longest = max((len(line) for line in result.output.splitlines()), default=0)
    assert longest <= LONGEST_LINE, f"a line of {longest} characters"


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["tools", "list"],
        ["tools", "list", "-a", "agent-0007"],
        ["agents", "list"],
        ["agents", "show", "agent-1999"],
        ["skills", "list"],
        ["actions", "list"],
        ["models", "list"],
        ["trust"],
        ["run", "hello"],
        ["run", "-a", "agent-0001", "hello"],
    ],
    ids=lambda a: " ".join(a),
)
def test_every_command_survives_thousands_of_definitions(big: tuple[Path, Path], args: list[str]) -> None:
    ws, home = big
    result = _invoke([*args, "-w", str(ws)], home)
    _assert_bounded(result, codes=(0, 2) if args == ["doctor"] else (0,))
    if args[0] == "run":
        assert "Done." in result.output
    if args == ["doctor"]:
        assert "more" in result.output  # the Task listing's cut is counted, not spelt out


def test_an_unknown_agent_names_a_bounded_list_of_the_others(big: tuple[Path, Path]) -> None:
    ws, home = big
    result = _invoke(["run", "-w", str(ws), "-a", "nobody", "hello"], home)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "no agent named 'nobody'" in result.output
    assert "more" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= LONGEST_LINE


def test_a_diagnostic_cuts_its_own_text_and_says_how_much() -> None:
    diag = Diagnostic(severity="info", code="x.y", message="m" * 10_000, fix="f" * 5_000, subject="s" * 1_000)
    assert len(diag.message) <= MAX_MESSAGE_CHARS
    assert diag.message.endswith("more characters left out)")
    assert diag.fix is not None and diag.fix.endswith("more characters left out)")
    assert diag.subject is not None and len(diag.subject) <= 256
    assert name_list([f"n{i}" for i in range(25)]) == ", ".join(f"n{i}" for i in range(20)) + " and 5 more"
    assert name_list(["a", "b"]) == "a, b"

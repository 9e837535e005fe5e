"""The issue 32 report, replayed through real processes: an agents collection installed into `.claude/` (250 agents,
150 commands, 200 skills, in the shape of wshobson/agents: long descriptions, `model: sonnet|opus|haiku|inherit`,
tool lists) with no BearAgent file at all, `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` set (a local replay server
standing in for the API).

`bearagent doctor`, `tools list` and `run` each exit 0 with no traceback (they crashed on a 4,000-character
diagnostic before), no line grows with the number of files, and no agent's Claude Code model name is a warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, write
from tests.support.replay_server import ReplayServer

from bearagent.domain.diagnostics import MAX_MESSAGE_CHARS

pytestmark = pytest.mark.network_local

AGENTS, COMMANDS, SKILLS = 250, 150, 200
MODELS = ("sonnet", "opus", "haiku", "inherit", "claude-sonnet-4-5")
LONGEST_LINE = MAX_MESSAGE_CHARS + 200


def _collection(root: Path) -> Path:
    for i in range(AGENTS):
        write(
            root,
            f".claude/agents/{'team-' + str(i % 7) + '/' if i % 3 == 0 else ''}specialist-{i:03d}.md",
            f"---\nname: specialist-{i:03d}\ndescription: Expert specialist number {i} for one narrow domain. "
            "Masters the modern practices of that domain, reviews architecture, writes production code and tests. "
            f"Use PROACTIVELY for anything touching domain {i}.\nmodel: {MODELS[i % len(MODELS)]}\n"
            + ("tools: Read, Grep, Glob, Bash\n" if i % 2 else "")
            + "---\n"
            f"You are specialist {i}.\n",
        )
    for i in range(COMMANDS):
        write(
            root,
            f".claude/commands/workflow-{i:03d}.md",
            f"---\ndescription: Workflow {i} that orchestrates several specialists\nmodel: {MODELS[i % 3]}\n---\n"
            f"Run workflow {i} on $ARGUMENTS\n",
        )
    for i in range(SKILLS):
        write(
            root,
            f".claude/skills/pattern-{i:03d}/SKILL.md",
            f"---\nname: pattern-{i:03d}\ndescription: Pattern {i}: when and how to apply it, with examples.\n---\n"
            f"Apply pattern {i}.\n",
        )
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _collection(tmp_path_factory.mktemp("collection") / "project")


def _bearagent(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,  # loading 600 files in a cold process on a loaded 2-core machine
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["tools", "list"],
        ["tools", "list", "-a", "specialist-003"],
        ["run", "review the code"],
        ["run", "-a", "specialist-001", "review the code"],
        ["run", "-a", "specialist-003", "review the code"],  # model: inherit, in a sub-folder
    ],
    ids=lambda a: " ".join(a[:3]),
)
def test_an_installed_agents_collection_runs_from_the_environment_alone(
    project: Path, tmp_path: Path, args: list[str]
) -> None:
    with ReplayServer() as replay:
        env = isolated_env(
            tmp_path / "home",
            ANTHROPIC_API_KEY="sk-ant-test-key",
            ANTHROPIC_BASE_URL=replay.route_url("gen/anthropic_messages/3", "anthropic_messages"),
        )
        result = _bearagent(args, env, project)
        posts = [r for r in replay.requests if r.method == "POST"]
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4_000:]
    assert "Traceback" not in output
    longest = max((len(line) for line in output.splitlines()), default=0)
    assert longest <= LONGEST_LINE, f"a line of {longest} characters"
    assert "Claude Code alias" not in output and "unknown model" not in output
    if args[0] == "run":
        assert "tok tok tok" in result.stdout
        assert len(posts) == 1
        body = posts[0].json()
        expected = {"specialist-001": "claude-opus-4-5", "specialist-003": "claude-sonnet-4-5"}
        assert body["model"] == expected.get(args[2] if args[1] == "-a" else "", "claude-sonnet-4-5")
        assert not (project / ".bearagent" / "config.yaml").exists()
    if args == ["doctor"]:
        assert "more" in output  # the Task tool's listing is cut and counted
        assert "ANTHROPIC_API_KEY is set" in output

"""CLI consistency: a group alone lists, `action run -m`, piped stdin appended to a prompt argument."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bearagent.cli._stdin import piped_text, with_piped_input
from bearagent.cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(
        REPO / "examples" / "quickstart",
        ws,
        ignore=shutil.ignore_patterns("state.db*", "outputs", "locks", "transcripts"),
    )
    return ws


@pytest.mark.parametrize("group", ["agents", "skills", "actions", "models", "tools", "runs"])
def test_a_group_alone_lists_as_its_list_command_does(workspace: Path, group: str) -> None:
    runner = CliRunner()
    alone = runner.invoke(main, [group, "-w", str(workspace), "--json"])
    listed = runner.invoke(main, [group, "list", "-w", str(workspace), "--json"])
    assert (alone.exit_code, alone.output) == (listed.exit_code, listed.output)
    if group != "runs":  # no runs stored yet: both say so, the same way
        assert alone.exit_code == 0, alone.output
        json.loads(alone.output)
    helped = runner.invoke(main, [group, "--help"])
    assert "Commands:" in helped.output and "list" in helped.output


def test_piped_text_is_appended_after_a_blank_line() -> None:
    assert with_piped_input("explain this", "line 1\nline 2\n") == "explain this\n\nline 1\nline 2"
    assert with_piped_input("explain this", "  \n") == "explain this"
    assert with_piped_input("explain this", None) == "explain this"


def test_an_idle_pipe_is_not_waited_for(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "r", closefd=False) as stream:
            assert piped_text(stream, wait_s=0.05) is None  # nobody writes: not read, no hang
            os.write(write_end, b"piped words\n")
            os.close(write_end)
            write_end = -1
            assert piped_text(stream, wait_s=1.0) == "piped words\n"
    finally:
        os.close(read_end)
        if write_end != -1:
            os.close(write_end)
    assert piped_text(io.StringIO("x")) is None  # not a file descriptor


def _bearagent(args: list[str], workspace: Path, home: Path, stdin: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, BEARAGENT_HOME=str(home), BEARAGENT_LOAD_PLUGINS="", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=60,
        check=False,
    )


def test_run_appends_piped_stdin_to_the_prompt(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".bearagent" / "scripts" / "intro.yaml").write_text('turns:\n  - text: "ok"\n', encoding="utf-8")
    done = _bearagent(["run", "summarize this log", "--json"], workspace, tmp_path / "home", "ERROR disk full\n")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    events = _bearagent(["events", str(record["run_id"]), "--json"], workspace, tmp_path / "home", None)
    assert "summarize this log\\n\\nERROR disk full" in events.stdout, events.stdout


def test_action_run_takes_a_model(workspace: Path, tmp_path: Path) -> None:
    done = _bearagent(
        ["action", "run", "intro", "doc=docs/project.md", "-m", "nosuch", "--json"], workspace, tmp_path / "home", None
    )
    assert done.returncode != 0
    assert "nosuch" in done.stderr


def test_table_paths_are_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bearagent.cli._config_common import rel

    root = tmp_path / "ws"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert rel(str(root / ".bearagent" / "agents" / "a.md"), root) == ".bearagent/agents/a.md"
    assert rel(str(tmp_path / "home" / ".bearagent" / "agents" / "b.md"), root) == "~/.bearagent/agents/b.md"
    site = "/usr/lib/python3.11/site-packages/bearagent/builtin_agents/build.md"
    assert rel(site, root) == "…/site-packages/bearagent/builtin_agents/build.md"
    assert rel("/opt/agents/c.md", root) == "/opt/agents/c.md"


def test_no_model_but_a_key_in_the_environment_uses_that_provider(workspace: Path, tmp_path: Path) -> None:
    """Zero-config (issue 32): the key's provider and default model, announced; the key itself is never printed.
    `doctor` shows it without sending a request (a run would reach the provider)."""
    config = workspace / ".bearagent" / "config.yaml"
    config.write_text("kind: project\ndefault_agent: writer\n", encoding="utf-8")  # no model entry at all
    env = dict(os.environ, BEARAGENT_HOME=str(tmp_path / "home"), BEARAGENT_LOAD_PLUGINS="", NO_COLOR="1")
    env["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", "doctor", "-w", str(workspace)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "no model is configured and OPENAI_API_KEY is set: using openai gpt-5 at its official endpoint" in done.stdout
    )
    assert "no model for agents" not in done.stdout
    assert "sk-test-not-a-real-key" not in done.stdout + done.stderr


def test_trust_has_json(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEARAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BEARAGENT_LOAD_PLUGINS", "")
    config = workspace / ".bearagent" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "permissions: {allow: [Bash]}\n", encoding="utf-8")
    runner = CliRunner()
    listed = json.loads(runner.invoke(main, ["trust", "-w", str(workspace), "--json"]).output)
    assert listed["status"] == "untrusted"
    assert any(item["kind"] and "Bash" in item["summary"] for item in listed["items"])
    trusted = json.loads(runner.invoke(main, ["trust", "-w", str(workspace), "--json", "-y"]).output)
    assert trusted["status"] == "trusted"
    revoked = json.loads(runner.invoke(main, ["trust", "-w", str(workspace), "--json", "--revoke"]).output)
    assert revoked["revoked"] is True and revoked["status"] == "untrusted"


def test_a_long_description_wraps_to_the_terminal_instead_of_being_cut(tmp_path: Path) -> None:
    import pexpect

    root = tmp_path / "ws"
    (root / ".bearagent" / "agents").mkdir(parents=True)
    words = " ".join(f"word{i}" for i in range(40))
    (root / ".bearagent" / "agents" / "wordy.md").write_text(f"---\ndescription: {words} THEEND\n---\nHi.\n")
    env = dict(os.environ, BEARAGENT_HOME=str(tmp_path / "home"), BEARAGENT_LOAD_PLUGINS="", NO_COLOR="1")
    child: pexpect.spawn[str] = pexpect.spawn(
        sys.executable,
        ["-m", "bearagent", "agents", "list", "-w", str(root)],
        env=env,
        dimensions=(40, 200),  # wide enough for long source paths (a clone under ~/.cache) beside the column
        encoding="utf-8",
        timeout=60,
    )
    child.expect(pexpect.EOF)
    screen = str(child.before or "")
    lines = [line.rstrip() for line in screen.splitlines()]
    assert all(len(line) <= 200 for line in lines), [line for line in lines if len(line) > 200]
    assert "THEEND" in screen and "…" not in screen.split("wordy", 1)[1]
    assert sum(1 for line in lines if "word" in line) > 1  # wrapped onto continuation lines

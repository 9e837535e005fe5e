"""Zero-config (issue 32): a Claude Code project with only `.claude/agents/*.md` runs with `ANTHROPIC_API_KEY` and
`ANTHROPIC_BASE_URL` set, with no BearAgent file, no trust prompt and no warning about `model: sonnet`.

A real `bearagent` process talks to a local replay server standing in for the Anthropic API (`/gen/...`: a generated
answer), so the request the real SDK sends is checked too: the catalog's model for `sonnet`, the key from the
environment."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, write
from tests.support.replay_server import ReplayServer

pytestmark = pytest.mark.network_local

REVIEWER = "---\nname: reviewer\ndescription: Reviews code.\nmodel: sonnet\ntools: Read, Grep\n---\nYou review code.\n"


def _bearagent(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,  # a cold start of the CLI on a loaded machine; the answer itself is instant
        check=False,
    )


def test_a_claude_code_project_runs_from_the_environment_alone(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    with ReplayServer() as replay:
        env = isolated_env(
            tmp_path / "home",
            ANTHROPIC_API_KEY="sk-ant-test-key",
            ANTHROPIC_BASE_URL=replay.route_url("gen/anthropic_messages/3", "anthropic_messages"),
        )
        result = _bearagent(["run", "-a", "reviewer", "review the code"], env, root)
        requests = replay.requests
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tok tok tok" in result.stdout
    assert "Claude Code alias" not in result.stderr and "warning" not in result.stderr
    assert "trust" not in result.stderr.lower()
    assert "ANTHROPIC_API_KEY is set: using anthropic claude-sonnet-4-5" in result.stderr  # announced, once
    assert result.stderr.count("ANTHROPIC_API_KEY is set") == 1
    posts = [r for r in requests if r.method == "POST"]
    assert posts and posts[0].json()["model"] == "claude-sonnet-4-5"
    assert "sk-ant-test-key" in str(posts[0].headers), posts[0].headers
    assert not (root / ".bearagent" / "config.yaml").exists()


def test_a_configured_sonnet_entry_overrides_the_table(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    write(
        tmp_path / "home",
        "bearagent/config.yaml",
        "models:\n  claude: {provider: anthropic, model: claude-sonnet-4-5}\n"
        "  sonnet: {provider: anthropic, model: claude-3-7-sonnet-latest}\n"
        "default_model: claude\n",
    )
    env = isolated_env(tmp_path / "home", ANTHROPIC_API_KEY="k")
    result = _bearagent(["models", "list"], env, root)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    assert "claude-3-7-sonnet-latest" in rows["platform/sonnet"]
    assert "claude-haiku-4-5" in rows["platform/haiku"]  # the table's row for a name the user did not set
    assert "claude-opus-4-5" in rows["platform/opus"]
    assert "platform/claude *" in result.stdout  # the one in use is marked


def test_models_list_marks_the_zero_config_model_in_use(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    result = _bearagent(["models", "list"], isolated_env(tmp_path / "home", ANTHROPIC_API_KEY="k"), root)
    assert result.returncode == 0, result.stderr
    assert "platform/claude *" in result.stdout and "platform/sonnet " in result.stdout


def test_without_a_key_nothing_is_invented(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    result = _bearagent(["models", "list"], isolated_env(tmp_path / "home"), root)
    assert result.returncode == 0, result.stderr
    assert "anthropic" not in result.stdout and "openai" not in result.stdout


def test_models_list_remote_shows_what_the_server_lists_and_marks_the_one_in_use(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    with ReplayServer() as replay:
        env = isolated_env(
            tmp_path / "home",
            ANTHROPIC_API_KEY="sk-ant-test-key",
            ANTHROPIC_BASE_URL=replay.route_url("gen/anthropic_messages/3", "anthropic_messages"),
        )
        result = _bearagent(["models", "list", "--remote"], env, root)
        as_json = _bearagent(["models", "list", "--remote", "--json"], env, root)
        gets = [r for r in replay.requests if r.method == "GET"]
    assert result.returncode == 0, result.stderr
    assert len(gets) == 2 and gets[0].path.endswith("/v1/models?limit=1000")
    assert gets[0].headers["x-api-key"] == "sk-ant-test-key" and gets[0].headers["anthropic-version"]
    lines = result.stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("models listed by http://127.0.0.1"))
    listed = {line.split()[0]: line for line in lines[heading + 1 :] if line.startswith("  ") and line.split()}
    assert "platform/claude *" in listed["claude-sonnet-4-5"]  # the one in use
    assert "platform/opus" in listed["claude-opus-4-5"] and "platform/haiku" in listed["claude-haiku-4-5"]
    assert listed["claude-3-7-sonnet-latest"].split()[1] == "-"  # listed, no entry yet: how to add one is said
    assert "provider: anthropic, model: ID" in result.stdout
    assert "\x1b" not in result.stdout and "pwned" not in result.stdout  # an id with terminal controls is dropped
    assert "sk-ant-test-key" not in result.stdout
    data = json.loads(as_json.stdout)
    (server,) = data["servers"]
    assert server["error"] is None and server["total"] == 4
    in_use = [m["id"] for m in server["models"] if m["in_use"]]
    assert in_use == ["claude-sonnet-4-5"]


def test_models_list_remote_says_why_a_server_is_not_listed(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root, ".claude/agents/reviewer.md", REVIEWER)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    env = isolated_env(tmp_path / "home", ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    result = _bearagent(["models", "list", "--remote"], env, root)
    assert result.returncode == 0, result.stderr
    assert "not listed: not reachable (ConnectError)" in result.stdout
    assert "Traceback" not in result.stderr
    scripted = tmp_path / "scripted"
    write(scripted, ".bearagent/config.yaml", "models:\n  s: {provider: scripted, script: s.yaml}\n")
    write(scripted, ".bearagent/s.yaml", "turns:\n  - text: hi\n")
    none = _bearagent(["models", "list", "--remote"], isolated_env(tmp_path / "home"), scripted)
    assert none.returncode == 0, none.stderr
    assert "no entry's server has a model listing" in none.stdout

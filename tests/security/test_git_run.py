"""The hardened git runner (`sandbox/git_run.py`) and the git facts of the system prompt (`sandbox/git_context.py`),
against real repositories made with real git: a hostile `.git/config` runs nothing, the facts are bounded and
cleaned, a timeout stops git, and a run's system prompt carries the branch, the status and the commits."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import pytest
from tests.support.fake_openai import Answer, FakeOpenAI

from bearagent.sandbox.git_context import MAX_COMMITS, MAX_STATUS_LINES, git_facts
from bearagent.sandbox.git_run import git_command, git_env, git_run

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], check=False).returncode != 0, reason="no git")

ENV = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "init.defaultBranch=trunk", *args],
        cwd=root,
        check=True,
        capture_output=True,
        env={**os.environ, **ENV},
    )


def _repo(root: Path, commits: int = 2) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    for i in range(commits):
        (root / f"f{i}.txt").write_text(f"{i}\n")
        _git(root, "add", f"f{i}.txt")
        _git(root, "commit", "-q", "-m", f"commit number {i}")
    return root


def test_the_facts_of_a_repository_are_its_branch_status_and_recent_commits(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo", commits=MAX_COMMITS + 3)
    (root / "f0.txt").write_text("changed\n")
    for i in range(MAX_STATUS_LINES + 7):
        (root / f"new{i}.txt").write_text("x\n")
    (root / "evil\x1b[31mname.txt").write_text("x\n")
    facts = git_facts(root)
    assert facts is not None and facts.refused is None
    assert facts.branch == "trunk"
    assert len(facts.status) == MAX_STATUS_LINES and facts.status_left_out == 9
    assert any(line.endswith("f0.txt") and line.startswith(" M") for line in facts.status)
    assert len(facts.commits) == MAX_COMMITS and facts.commits[0].endswith(f"commit number {MAX_COMMITS + 2}")
    text = "\n".join(facts.section_lines())
    assert "Git branch: trunk" in text and "39 changed, 30 shown, 9 more left out" in text and "\x1b" not in text


def test_no_repository_no_facts(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert git_facts(tmp_path / "plain") is None


def test_a_hostile_local_config_runs_nothing(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    evil = f"touch {shlex.quote(str(marker))}; cat"
    (root / ".gitattributes").write_text("*.txt filter=evil\n")
    _git(root, "config", "core.fsmonitor", evil)
    _git(root, "config", "core.pager", evil)
    _git(root, "config", "filter.evil.clean", evil)
    (root / "f0.txt").write_text("changed\n")
    os.utime(root / "f0.txt", (1, 1))
    facts = git_facts(root)
    assert facts is not None and facts.refused is not None
    assert "filter.evil.clean" in facts.refused
    assert "Git: not read" in facts.section_lines()[0]
    assert not marker.exists()
    # with only the keys the overrides switch off (fsmonitor, pager, hooks), git runs and still runs nothing
    _git(root, "config", "--unset", "filter.evil.clean")
    (root / ".git" / "hooks" / "post-checkout").write_text(f"#!/bin/sh\n{evil}\n")
    (root / ".git" / "hooks" / "post-checkout").chmod(0o755)
    facts = git_facts(root)
    assert facts is not None and facts.refused is None and facts.status
    assert not marker.exists()


def test_the_environment_and_the_command_are_hardened(tmp_path: Path) -> None:
    env = git_env({"GIT_DIR": "/elsewhere/.git", "GIT_WORK_TREE": "/elsewhere", "HOME": "/h", "PATH": "/bin"})
    assert "GIT_DIR" not in env and "GIT_WORK_TREE" not in env and env["HOME"] == "/h"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_PAGER"] == "cat"
    local = git_command(["status"])
    assert "protocol.allow=never" in local and not any(".allow=always" in a for a in local)
    assert "core.fsmonitor=false" in local and "--no-pager" in local
    network = git_command(["clone", "x", "y"], network=True)
    assert "protocol.https.allow=always" in network and "protocol.ext.allow=always" not in network


def test_an_ext_url_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    url = f"ext::sh -c touch% {marker}"
    done = git_run(["clone", "--", url, str(tmp_path / "dest")], cwd=tmp_path, network=True, check_local_config=False)
    assert not done.ok and done.reason is not None and "clone" in done.reason
    assert not marker.exists()


def test_output_is_bounded_and_a_slow_git_is_stopped(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo", commits=1)
    for i in range(500):
        (root / f"untracked-{i:04}.txt").write_text("x")
    cut = git_run(["ls-files", "--others", "-z"], cwd=root, max_bytes=1000)
    assert cut.truncated and len(cut.stdout) == 1000
    # a user alias is still git's: a slow one (`!sleep`) is stopped at the timeout, its process group killed
    slow = git_run(["-c", "alias.slow=!sleep 30", "slow"], cwd=root, timeout_s=0.5)
    assert slow.returncode == 124 and slow.reason is not None and "longer than 0.5s" in slow.reason


@pytest.mark.slow
def test_a_runs_system_prompt_carries_the_git_facts(tmp_path: Path) -> None:
    from tests.support.config_ws import isolated_env, load, write
    from tests.support.run_ws import agent_md

    from bearagent.trust import trust, workspace_trust_surface

    root, home = _repo(tmp_path / "ws"), tmp_path / "home"
    (root / "f1.txt").write_text("edited\n")
    with FakeOpenAI([Answer(text="ok")]) as server:
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
            f"base_url: '{server.base_url}', model: local-model, api_key_env: FAKE_KEY}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", "You are main.", mode="primary"))
        env = {**isolated_env(home), "FAKE_KEY": "sk-fake"}
        trust(root, workspace_trust_surface(load(root, home)), env=env)
        done = subprocess.run(
            [sys.executable, "-m", "bearagent", "run", "hi"],
            cwd=root,
            env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (request,) = server.chat_requests()
    messages = cast(list[Mapping[str, object]], request.body["messages"])
    system = str(messages[0]["content"])
    assert "# Git (as the run started)" in system and "- Git branch: trunk" in system
    assert "f1.txt" in system and "commit number 1" in system


@pytest.mark.skipif(os.geteuid() != 0, reason="making a repository another user's needs root")
def test_a_repository_owned_by_another_user_is_refused_by_git_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _repo(tmp_path / "repo", commits=1)
    for name in ("HOME", "XDG_CONFIG_HOME"):  # no global safe.directory of this machine's user
        monkeypatch.setenv(name, str(tmp_path / "empty-home"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    for path in [root, *root.rglob("*")]:
        os.lchown(path, 65534, 65534)
    facts = git_facts(root)
    assert facts is not None and facts.refused is not None
    assert "owned by another user" in facts.refused and "safe.directory" in facts.refused

"""A run in someone's repository leaves `git status` as it was (issue 32): the first time BearAgent keeps state in a
`.bearagent/` folder it writes a `.gitignore` for that state (`runtime/state_files.py`), through real `bearagent`
and `git` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, write

from bearagent.runtime.state_files import SELF_IGNORE, STATE_GITIGNORE

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

USER_CONFIG = "models:\n  s: {provider: scripted, script: script.yaml}\ndefault_model: s\n"


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def _repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    write(home, "bearagent/config.yaml", USER_CONFIG)
    write(home, "bearagent/script.yaml", 'turns:\n  - text: "Done."\n  - text: "Again."\n')
    env = {
        **isolated_env(home),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    root = tmp_path / "repo"
    write(root, ".claude/agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n")
    write(root, "README.md", "# a project\n")
    for args in (["git", "init", "-q", "."], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        assert _run(args, root, env).returncode == 0
    return root, env


def _status(root: Path, env: dict[str, str]) -> str:
    result = _run(["git", "status", "--porcelain", "--untracked-files=all"], root, env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_run_in_a_clean_repository_leaves_git_status_clean(tmp_path: Path) -> None:
    root, env = _repo(tmp_path)
    result = _run([sys.executable, "-m", "bearagent", "run", "hello"], root, env)
    assert result.returncode == 0, result.stderr
    assert "Done." in result.stdout
    assert (root / ".bearagent/state.db").is_file()
    assert _status(root, env) == ""  # state.db, locks/, transcripts/ and the .gitignore itself are all ignored
    assert (root / ".bearagent/.gitignore").read_text() == STATE_GITIGNORE + SELF_IGNORE
    # init afterwards is not refused by the .gitignore the run wrote, and keeps it
    init = _run([sys.executable, "-m", "bearagent", "init"], root, env)
    assert init.returncode == 0, init.stdout + init.stderr
    assert (root / ".bearagent/config.yaml").is_file()
    assert (root / ".bearagent/.gitignore").read_text() == STATE_GITIGNORE + SELF_IGNORE


def test_a_committed_config_folder_gets_one_gitignore_to_commit_and_a_users_own_is_kept(tmp_path: Path) -> None:
    root, env = _repo(tmp_path)
    write(root, ".bearagent/agents/main.md", "---\ndescription: Main.\n---\nYou help.\n")
    assert _run(["git", "add", "-A"], root, env).returncode == 0
    assert _run(["git", "commit", "-qm", "config"], root, env).returncode == 0
    result = _run([sys.executable, "-m", "bearagent", "run", "hello"], root, env)
    assert result.returncode == 0, result.stderr
    assert _status(root, env) == "?? .bearagent/.gitignore\n"  # the user's folder: the file shows, to commit
    assert (root / ".bearagent/.gitignore").read_text() == STATE_GITIGNORE

    own = "# mine\nstate.db*\nlocks/\ntranscripts/\ntool-results/\n"
    (root / ".bearagent/.gitignore").write_text(own)
    again = _run([sys.executable, "-m", "bearagent", "run", "hello"], root, env)
    assert again.returncode == 0, again.stderr
    assert (root / ".bearagent/.gitignore").read_text() == own  # never rewritten


def test_a_refused_run_creates_nothing(tmp_path: Path) -> None:
    root, env = _repo(tmp_path)
    env = {**env, "BEARAGENT_HOME": str(tmp_path / "empty-home")}  # no model anywhere: the run is refused
    result = _run([sys.executable, "-m", "bearagent", "run", "hello"], root, env)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert not (root / ".bearagent").exists()
    assert _status(root, env) == ""

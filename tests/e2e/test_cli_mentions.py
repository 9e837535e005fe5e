"""`@path` mentions in `bearagent run` prompts (issue 32, Claude Code's habit), through real `bearagent` processes:
a file's content is attached, `@dir/` attaches its listing, a path outside the workspace, a symlink out of it or a
file a `permissions.deny` rule hides is refused before anything runs (exit 2), and a mention that names nothing
(`@types/node`) is sent as typed, with a note."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import thaw_json_mapping

SCRIPT = 'turns:\n  - text: "Seen."\n'
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}


def _run(root: Path, home: Path, prompt: str, *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", "run", "--json", prompt],
        cwd=root,
        env={**isolated_env(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _goals(root: Path, home: Path) -> list[str]:
    with open_ws(root, home) as ws:
        out: list[str] = []
        for run in sorted(ws.runs(), key=lambda r: r.created_at):
            created = next(e for e in ws.events(str(run.run_id)) if e.event_type == "RunCreated")
            out.append(str(thaw_json_mapping(created.payload)["goal"]))
        return out


def test_a_mentioned_file_and_directory_are_attached(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    write(root, "src/app.py", "print('hello from app')\n")
    write(root, "src/util.py", "X = 1\n")
    home = tmp_path / "home"
    done = _run(root, home, "explain @src/app.py, then look at @src/ and mail @alice", stdin="@piped.txt is data\n")
    assert done.returncode == 0, done.stderr
    (goal,) = _goals(root, home)
    assert goal.startswith("explain @src/app.py, then look at @src/ and mail @alice")
    assert "<file path=\"src/app.py\">\nprint('hello from app')\n</file>" in goal
    assert '<directory path="src">\napp.py\nutil.py\n</directory>' in goal
    assert "@piped.txt is data" in goal  # piped text is appended as data: its @ words are not mentions


def test_an_outside_or_denied_mention_is_refused_before_the_run_and_a_missing_one_is_text(tmp_path: Path) -> None:
    config = CONFIG + "permissions:\n  deny: ['Read(.env)']\n"
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS, config=config)
    write(root, ".env", "SECRET=1\n")
    write(tmp_path / "outside", "secret.txt", "nope\n")
    (root / "link.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    home = tmp_path / "home"
    cases = {
        "look at @../outside/secret.txt": "outside the workspace",
        "look at @link.txt": "link.txt",
        "look at @.env": "permissions.deny rule 'Read(.env)'",
    }
    for prompt, why in cases.items():
        refused = _run(root, home, prompt)
        assert refused.returncode == 2, (prompt, refused.stdout, refused.stderr)
        assert why in refused.stderr, (prompt, refused.stderr)
        assert "Traceback" not in refused.stderr
        assert "nope" not in refused.stdout + refused.stderr and "SECRET" not in refused.stdout + refused.stderr
    assert not (root / ".bearagent" / "state.db").exists() or _goals(root, home) == []
    # a mention that names nothing is sent as typed (`@types/node` is a package name), with a note for a typo
    package = _run(root, home, "install @types/node please")
    assert package.returncode == 0, package.stderr
    assert "note: @types/node names no file or directory in the workspace: sent as text" in package.stderr
    escaped = _run(root, home, r"send \@src/missing.py as text")
    assert escaped.returncode == 0, escaped.stderr
    assert "note:" not in escaped.stderr
    assert _goals(root, home) == ["install @types/node please", "send @src/missing.py as text"]


def test_a_large_file_is_cut_with_a_note(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    write(root, "big.log", "line\n" * 60_000)  # 300,000 bytes
    home = tmp_path / "home"
    done = _run(root, home, "summarise @big.log")
    assert done.returncode == 0, done.stderr
    assert "note: @big.log is 300,000 bytes: its first 100 KiB are attached" in done.stderr
    (goal,) = _goals(root, home)
    assert len(goal) < 110_000 and "Read it for the rest" in goal

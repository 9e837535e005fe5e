"""Claude Code's `asyncRewake` hook key through the real `bearagent` executable: a PostToolUse command hook runs in
the background (a Python script and a shell script, both reading the hook's JSON on stdin); when one exits 2, the
agent that was about to stop is woken with its stderr and answers again; a plain `async` hook that exits 2 wakes
nothing; a hook that always exits 2 cannot keep the run going past the cap."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

BEARAGENT = str(Path(sys.executable).parent / "bearagent")

PY_HOOK = """\
import json, sys
data = json.load(sys.stdin)
with open("hook-log.txt", "a", encoding="utf-8") as log:
    log.write("py " + data["hook_event_name"] + " " + data["tool_name"] + "\\n")
print("tests failed after " + data["tool_name"] + " of " + data["tool_input"]["file_path"].rsplit("/", 1)[-1],
      file=sys.stderr)
sys.exit(2)
"""
SH_HOOK = """#!/bin/sh
# plain `async`: its exit 2 must not wake anything
cat > /dev/null
echo "sh ran" >> hook-log.txt
echo "an async hook without asyncRewake" >&2
exit 2
"""
SCRIPT = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.txt}}]
  - text: "first answer"
  - text: "woken answer"
"""


def _project(tmp_path: Path, hooks: list[dict[str, Any]], script: str = SCRIPT) -> tuple[Path, dict[str, str]]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (home / "bearagent").mkdir(parents=True)
    (home / "script.yaml").write_text(textwrap.dedent(script))
    (home / "bearagent" / "config.yaml").write_text(
        f"default_model: main\nmodels:\n  main: {{provider: scripted, script: {home / 'script.yaml'}}}\n"
    )
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / ".claude" / "hooks" / "rewake.py").write_text(PY_HOOK)
    sh = ws / ".claude" / "hooks" / "plain.sh"
    sh.write_text(SH_HOOK)
    sh.chmod(0o755)
    (ws / "notes.txt").write_text("some notes\n")
    settings = {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": hooks}]}}
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "NO_COLOR": "1",
    }
    return ws, env


def _bear(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BEARAGENT, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False)


def _run(ws: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    trusted = _bear(ws, env, "trust", "-y")
    assert trusted.returncode == 0, trusted.stderr
    done = _bear(ws, env, "run", "read the notes")
    events = _bear(ws, env, "events", "last", "--json")
    assert events.returncode == 0, (events.stderr, done.stderr)
    return done, [json.loads(line) for line in events.stdout.splitlines()]


PY_COMMAND = f"{shlex.quote(sys.executable)} .claude/hooks/rewake.py"  # the checkout may be under a path with spaces


def test_an_async_rewake_hook_that_exits_2_wakes_the_agent_with_its_stderr(tmp_path: Path) -> None:
    ws, env = _project(
        tmp_path,
        [
            {"type": "command", "command": PY_COMMAND, "async": True, "asyncRewake": True},
            {"type": "command", "command": ".claude/hooks/plain.sh", "async": True},
        ],
    )
    done, events = _run(ws, env)
    assert done.returncode == 0, done.stderr
    assert "woken answer" in done.stdout  # the agent answered again after the wake-up
    assert "asyncRewake" not in done.stderr  # no "unsupported key" warning any more
    log = (ws / "hook-log.txt").read_text().splitlines()
    assert sorted(log) == ["py PostToolUse Read", "sh ran"]
    text = json.dumps(events)
    assert "An async hook reported: tests failed after Read of notes.txt" in text  # what the model read
    assert "an async hook without asyncRewake" not in text.split("An async hook reported")[1].split('"')[0]
    completed = [e for e in events if e["event_type"] == "ModelCallCompleted"]
    assert len(completed) == 3


def test_without_async_rewake_the_exit_2_wakes_nothing_and_the_wake_ups_are_capped(tmp_path: Path) -> None:
    ws, env = _project(tmp_path, [{"type": "command", "command": ".claude/hooks/plain.sh", "async": True}])
    done, events = _run(ws, env)
    assert done.returncode == 0, done.stderr
    assert "first answer" in done.stdout and "woken answer" not in done.stdout
    assert len([e for e in events if e["event_type"] == "ModelCallCompleted"]) == 2

    # a rewake hook after every tool call and a model that calls a tool after every wake-up: at most 8 wake-ups
    looping = "turns:\n" + "".join(
        "  - tool_calls: [{name: Read, arguments: {file_path: notes.txt}}]\n  - text: 'stop " + str(i) + "'\n"
        for i in range(12)
    )
    ws2, env2 = _project(
        tmp_path / "loop",
        [{"type": "command", "command": PY_COMMAND, "async": True, "asyncRewake": True}],
        script=looping,
    )
    done, events = _run(ws2, env2)
    assert done.returncode == 0, done.stderr
    assert "stop 8" in done.stdout  # the 9th stop (0-based 8) is not woken again
    assert len((ws2 / "hook-log.txt").read_text().splitlines()) == 9

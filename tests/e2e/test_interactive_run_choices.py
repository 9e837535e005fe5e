"""The interactive session takes `run`'s per-run flags (issue 32): `bearagent --disallowed-tools ... --add-dir ...
--append-system-prompt ...` shapes each of its runs (in a real terminal, tmux, against a fake OpenAI server); the
flags before another command are refused (they would be ignored), and a malformed rule is refused before the
session opens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import isolated_env, load, write
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.run_ws import agent_md
from tests.support.tmux import TmuxScreen, base_env, require_tmux

from bearagent.trust import trust, workspace_trust_surface


def test_the_sessions_flags_shape_each_of_its_runs(tmp_path: Path) -> None:
    require_tmux()
    shared = tmp_path / "shared"
    write(shared, "notes.txt", "shared notes line\n")
    root, home = tmp_path / "ws", tmp_path / "home"
    with FakeOpenAI([Answer(text="Terse.")]) as server:
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
            f"base_url: '{server.base_url}', model: local-model, api_key_env: FAKE_KEY}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Read, Bash]"))
        env = {**base_env(home), "FAKE_KEY": "sk-fake"}
        trust(root, workspace_trust_surface(load(root, home)), env=env)
        argv = [
            sys.executable,
            "-m",
            "bearagent",
            "-w",
            str(root),
            "--disallowedTools",
            "Bash",
            "--add-dir",
            str(shared),
            "--append-system-prompt",
            "Answer tersely.",
        ]
        with TmuxScreen(argv, width=100, env=env, cwd=root) as term:
            term.wait_for("main>")
            term.send_text(f"summarise @{shared}/notes.txt")
            term.send("Enter")
            term.wait_for(r"succeeded · ")
            term.send_text("/exit")
            term.send("Enter")
        (request,) = server.chat_requests()
    messages = cast(list[Mapping[str, object]], request.body["messages"])
    system = str(messages[0]["content"])
    assert system.rstrip().endswith("Answer tersely.") and str(shared) in system
    assert "shared notes line" in json.dumps(messages)  # the @mention reached the --add-dir file
    tools = [
        cast(Mapping[str, object], t["function"])["name"]
        for t in cast(list[Mapping[str, object]], request.body["tools"])
    ]
    assert "Read" in tools and "Bash" not in tools


def _bearagent(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        cwd=root,
        env={**isolated_env(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_session_flags_before_a_command_or_malformed_are_refused(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    root.mkdir()
    before = _bearagent(root, home, "--add-dir", str(tmp_path), "doctor")
    assert before.returncode == 2 and "apply to the interactive session only" in before.stderr, before.stderr
    assert "bearagent doctor --add-dir" in before.stderr
    bad = _bearagent(root, home, "--allowed-tools", "Bash(*")
    assert bad.returncode == 2 and "Bash(*" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr

"""`!cmd` in the interactive session (issue 32, Claude Code's bash mode), in a real terminal (tmux): the command runs
as the session's Bash tool call (the permission rules, the sandbox, the log's facts), and its output is in the
conversation the next prompt's model is sent; a deny rule stops it as it stops a model's call."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import load, write
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.run_ws import agent_md, open_ws
from tests.support.tmux import TmuxScreen, base_env, require_tmux

from bearagent.domain._base import thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface


def _finish(term: TmuxScreen, runs_before: int) -> str:
    """Wait for the next run's summary, answering `y` to an approval (without a sandbox Bash asks)."""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        screen = term.screen()
        if screen.count("succeeded · ") + screen.count("failed · ") > runs_before:
            return screen
        if not answered and "needs approval" in screen:
            term.send_text("y")
            answered = True
        time.sleep(0.1)
    raise AssertionError(f"the run never ended:\n{term.screen()}")


def _workspace(tmp_path: Path, base_url: str, extra: str = "") -> tuple[Path, dict[str, str]]:
    root, home = tmp_path / "ws", tmp_path / "home"
    write(
        root,
        ".bearagent/config.yaml",
        "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
        f"base_url: '{base_url}', model: local-model, api_key_env: FAKE_KEY}}\n" + extra,
    )
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Read, Bash]"))
    env = {**base_env(home), "FAKE_KEY": "sk-fake"}
    trust(root, workspace_trust_surface(load(root, home)), env=env)
    return root, env


def test_a_bang_command_runs_as_bash_and_its_output_joins_the_conversation(tmp_path: Path) -> None:
    require_tmux()
    with FakeOpenAI([Answer(text="It printed a greeting.")]) as server:
        root, env = _workspace(tmp_path, server.base_url)
        with TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=env, cwd=root) as term:
            term.wait_for("main>")
            term.send_text("!echo hello-from-$((40+2))")
            term.send("Enter")
            screen = _finish(term, 0)
            assert re.search(r"Bash\(echo hello-from-\$\(\(40\+2\)\)\)", screen), screen
            assert "hello-from-42" in screen
            term.send_text("what did it print?")
            term.send("Enter")
            _finish(term, 1)
            term.send_text("/exit")
            term.send("Enter")
        (request,) = server.chat_requests()  # the ! run asked no model
    sent = json.dumps(request.body["messages"])
    assert "hello-from-42" in sent and "what did it print?" in sent
    home = Path(env["HOME"])
    with open_ws(root, home) as ws:
        first = sorted(ws.runs(), key=lambda r: r.created_at)[0]
        events = list(ws.events(str(first.run_id)))
    requested = [thaw_json_mapping(e.payload) for e in events if e.event_type == "ToolCallRequested"]
    assert [(r["tool_name"], cast(Mapping[str, object], r["arguments"])["command"]) for r in requested] == [
        ("Bash", "echo hello-from-$((40+2))")
    ]
    assert any(e.event_type == "ToolCallCompleted" for e in events)


def test_a_deny_rule_stops_a_bang_command(tmp_path: Path) -> None:
    require_tmux()
    with FakeOpenAI([]) as server:
        root, env = _workspace(tmp_path, server.base_url, "permissions:\n  deny: ['Bash(touch *)']\n")
        with TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=env, cwd=root) as term:
            term.wait_for("main>")
            term.send_text("!touch made.txt")
            term.send("Enter")
            screen = _finish(term, 0)
            term.send_text("!")
            term.send("Enter")
            term.wait_for(r"error: ! needs a command")
            term.send_text("/exit")
            term.send("Enter")
        assert server.chat_requests() == []
    assert not (root / "made.txt").exists()
    assert "permissions.deny" in screen or "denied" in screen, screen

"""`/resume` in the interactive session (issue 32, Claude Code's picker), in a real terminal (tmux): it lists the
workspace's sessions newest first, numbered, and the one picked is continued by the next prompt; `/resume ID`
takes an id prefix; a wrong pick resumes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.run_ws import agent_md, open_ws, scripted_workspace
from tests.support.tmux import TmuxScreen, base_env, require_tmux

SCRIPT = "turns:\n" + '  - text: "Answered."\n' * 8


def _answer(term: TmuxScreen, text: str) -> None:
    before = term.screen().count("succeeded · ")
    term.send_text(text)
    term.send("Enter")
    term.wait_for(r"(?s)" + r"succeeded · .*" * (before + 1))


def test_resume_lists_the_sessions_and_continues_the_one_picked(tmp_path: Path) -> None:
    require_tmux()
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    home = tmp_path / "home"
    with TmuxScreen(
        [sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=base_env(home), cwd=root
    ) as term:
        term.wait_for("main>")
        _answer(term, "the first conversation")
        term.send_text("/clear")
        term.send("Enter")
        term.wait_for("new session")
        _answer(term, "the second conversation")
        term.send_text("/resume")
        term.send("Enter")
        screen = term.wait_for(r"resume which\? \[1-2")
        listing = screen[screen.rindex("/resume") :]
        assert listing.index("the second conversation") < listing.index("the first conversation")  # newest first
        term.send_text("7")
        term.send("Enter")
        term.wait_for(r"'7' is not one of 1-2; nothing resumed")
        term.send_text("/resume")
        term.send("Enter")
        term.wait_for(r"(?s)'7' is not one.*resume which\?")
        term.send_text("2")
        term.send("Enter")
        term.wait_for(r"resumed session [0-9a-f-]+ · the first conversation")
        _answer(term, "back to the first")
        term.send_text("/exit")
        term.send("Enter")
    with open_ws(root, home) as ws:
        runs = sorted(ws.runs(), key=lambda r: r.created_at)
        first, second, third = (str(r.session_id) for r in runs)
    assert first != second and third == first


def test_resume_takes_an_id_prefix(tmp_path: Path) -> None:
    require_tmux()
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    home = tmp_path / "home"
    with TmuxScreen(
        [sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=base_env(home), cwd=root
    ) as term:
        term.wait_for("main>")
        _answer(term, "remember this")
        with open_ws(root, home) as ws:
            (run,) = ws.runs()
            session = str(run.session_id)
        term.send_text("/clear")
        term.send("Enter")
        term.wait_for("new session")
        term.send_text("/resume zzzz")
        term.send("Enter")
        term.wait_for(r"no session 'zzzz'; /resume lists them")
        term.send_text(f"/resume {session[:8]}")
        term.send("Enter")
        term.wait_for(rf"resumed session {session}")
        _answer(term, "and now?")
        term.send_text("/exit")
        term.send("Enter")
    with open_ws(root, home) as ws:
        assert {str(r.session_id) for r in ws.runs()} == {session}

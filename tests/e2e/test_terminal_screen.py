"""What the interactive session leaves on a real terminal screen (tmux): streamed answers are whole at any width
and after a resize mid-stream, the waiting spinner goes away when text arrives."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.mcp_helpers import server_in_workspace
from tests.support.run_ws import agent_md, scripted_workspace
from tests.support.tmux import TmuxScreen, base_env, require_tmux, words

REPO = Path(__file__).resolve().parents[2]

# 500 characters of prose, each word numbered so a lost, cut or repeated piece shows.
ANSWER = " ".join(f"word{i:03d}" for i in range(1, 63)) + " the end."
assert len(ANSWER) >= 500


def _workspace(tmp_path: Path, script: str) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(
        REPO / "examples" / "quickstart",
        ws,
        ignore=shutil.ignore_patterns("state.db*", "outputs", "locks", "transcripts"),
    )
    (ws / ".bearagent" / "scripts" / "intro.yaml").write_text(script, encoding="utf-8")
    return ws


def _session(tmp_path: Path, ws: Path, width: int, env: dict[str, str] | None = None) -> TmuxScreen:
    require_tmux()
    environment = base_env(tmp_path / "home")
    environment.update(env or {})
    return TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(ws)], width=width, env=environment, cwd=ws)


def _answer_region(screen: str, prompt_line: str) -> str:
    start = screen.rindex(prompt_line) + len(prompt_line)
    end = screen.index("succeeded", start)
    return screen[start:end]


@pytest.mark.parametrize("width", [40, 80, 160])
def test_a_streamed_answer_appears_whole_at_any_width(tmp_path: Path, width: int) -> None:
    ws = _workspace(tmp_path, f'turns:\n  - text: "{ANSWER}"\n')
    with _session(tmp_path, ws, width) as term:
        term.wait_for("writer>")
        term.send_text("hi")
        term.send("Enter")
        screen = term.wait_for(r"succeeded · ")
        region = words(_answer_region(screen, "writer> hi"))
        assert region.count(ANSWER) == 1, screen


@pytest.mark.parametrize(("first", "then"), [(80, 40), (40, 160), (160, 60)])
def test_resizing_mid_stream_keeps_the_text_whole(tmp_path: Path, first: int, then: int) -> None:
    ws = _workspace(tmp_path, f'turns:\n  - text: "{ANSWER}"\n    delta_delay_ms: 40\n')
    with _session(tmp_path, ws, first) as term:
        term.wait_for("writer>")
        term.send_text("hi")
        term.send("Enter")
        before = term.wait_for("word010")
        term.resize(then)
        assert "the end." not in before  # the resize comes mid-stream
        screen = term.wait_for(r"succeeded · ")
        region = words(_answer_region(screen, "writer> hi"))
        assert region == ANSWER, screen  # whole, once: no piece of a frame drawn before the resize is left


def test_a_spinner_with_the_elapsed_time_waits_for_the_first_token_then_goes(tmp_path: Path) -> None:
    # the model stays silent until the test has seen the spinner count (it creates the release file): a fixed delay
    # could end before a loaded machine's screen poll saw the spinner
    script = 'turns:\n  - text: "Here is the answer."\n    wait_for_file: release\n    wait_timeout_ms: 120000\n'
    ws = _workspace(tmp_path, script)
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.send_text("hi")
        term.send("Enter")
        term.wait_for(r"waiting for the model · [1-9]s")  # the seconds count up while the model is silent
        term.wait_for(r"waiting for the model · [2-9]s")  # (at least one second has passed: the check below)
        (ws / ".bearagent" / "scripts" / "release").touch()
        screen = term.wait_for(r"succeeded · ")
        assert "waiting for the model" not in screen  # gone when the text came
        assert "Here is the answer." in screen
        seconds = re.search(r" · (\d+\.\d)s · run ", screen)
        assert seconds is not None and float(seconds.group(1)) >= 1.0, screen  # the time waited, not 0.0s


def test_no_spinner_and_no_live_rendering_off_a_terminal(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "Plain **text** here."\n    delay_ms: 300\n')
    env = base_env(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", "-w", str(ws)],
        input="hi\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert "Plain **text** here." in done.stdout  # streamed as it came: no Markdown rendering, no cursor moves
    assert "waiting for the model" not in done.stdout + done.stderr
    assert "\x1b[" not in done.stdout


def _runs(ws: Path) -> list[str]:
    from bearagent.store.sqlite import SqliteEventStore

    store = SqliteEventStore(ws / ".bearagent" / "state.db")
    try:
        return [r.status for r in store.list_runs(limit=10)]
    finally:
        store.close()


def test_a_multi_line_paste_is_one_prompt(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "One answer."\n  - text: "A second answer."\n')
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.paste("first pasted line\nsecond pasted line\nthird pasted line")
        term.wait_for("third pasted line")
        assert _runs(ws) == []  # the newlines of the paste did not send it
        term.send("Enter")
        screen = term.wait_for(r"succeeded · ")
        assert "One answer." in screen
        term.wait_for(r"(?m)^writer>\s*$")
        assert _runs(ws) == ["succeeded"]
        assert "A second answer." not in term.screen()


def test_alt_enter_and_a_trailing_backslash_continue_the_prompt(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "One answer."\n  - text: "A second answer."\n')
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.send_text("line one")
        term.send("Escape", "Enter")
        term.send_text("line two \\")
        term.send("Enter")
        term.send_text("line three")
        term.wait_for("line three")
        assert _runs(ws) == []
        term.send("Enter")
        term.wait_for(r"succeeded · ")
        assert _runs(ws) == ["succeeded"]


def test_tab_completes_slash_commands_and_agent_names(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "unused"\n')
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.send_text("/ag")
        term.send("Tab")
        term.wait_for(r"writer> /agent\b")
        term.send("Escape")  # close the completion menu, keep the text
        term.send_text(" pl")
        term.send("Tab")
        term.wait_for(r"/agent plan")
        term.send("Enter")
        term.wait_for("agent: plan")
        term.wait_for("plan>")


def test_the_status_line_and_the_session_commands(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "One answer."\n')
    with _session(tmp_path, ws, 120) as term:
        term.wait_for(r"writer · scripted · acceptEdits · sandbox \S+ · 0 tokens · \$0\.0000")
        term.send_text("hi")
        term.send("Enter")
        term.wait_for(r"succeeded · ")
        term.wait_for(r"writer · scripted · acceptEdits · sandbox \S+ · [1-9][\d,]* tokens")  # the session's usage
        term.send_text("/cost")
        term.send("Enter")
        term.wait_for(r"1 run · 1 model call · 0 tool calls · \d+ in \+ \d+ out tokens · \$0\.0000 · \d")
        term.send_text("/model nosuch")
        term.send("Enter")
        term.wait_for(r"no model entry named 'nosuch'; models: scripted")
        term.send_text("/model")
        term.send("Enter")
        term.wait_for(r"scripted\s+scripted\s+\S+ \*")  # the one in use is marked
        term.send_text("/permissions")
        term.send("Enter")
        term.wait_for(r"mode: acceptEdits")
        term.wait_for(r"deny\s+-")
        term.send_text("/mcp")
        term.send("Enter")
        term.wait_for("no MCP servers")


def test_an_untrusted_workspace_is_shown_and_trusted_once_at_the_door(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "Trusted answer."\n')
    config = ws / ".bearagent" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "permissions: {allow: [Bash]}\n", encoding="utf-8")
    env = base_env(tmp_path / "home")
    refused = subprocess.run(
        [sys.executable, "-m", "bearagent", "run", "-w", str(ws), "hi"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2 and "bearagent trust" in refused.stderr  # run keeps refusing, naming the fix
    with _session(tmp_path, ws, 100) as term:
        screen = term.wait_for(r"Trust this workspace\? \[y/N\]")
        assert "not trusted yet" in screen and "Bash" in screen  # what it would trust
        term.send_text("y")
        term.send("Enter")
        term.wait_for("Trusted: ")
        term.wait_for("writer>")
        term.send_text("hi")
        term.send("Enter")
        term.wait_for("Trusted answer.")
        term.wait_for(r"succeeded · ")
    with _session(tmp_path, ws, 100) as term:  # asked once: the next session starts at the prompt
        screen = term.wait_for("writer>")
        assert "Trust this workspace" not in screen


@pytest.mark.parametrize("attempt", range(3))  # reported as 2 of 3 tries: each try is its own run
def test_ctrl_c_mid_answer_shows_the_partial_text_once(tmp_path: Path, attempt: int) -> None:
    ws = _workspace(tmp_path, f'turns:\n  - text: "{ANSWER}"\n    delta_delay_ms: {30 + 10 * attempt}\n')
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.send_text("hi")
        term.send("Enter")
        term.wait_for("word0[12][0-9]")
        term.send("C-c")
        screen = term.wait_for(r"cancelled")
        start = screen.rindex("writer> hi") + len("writer> hi")
        region = words(screen[start : screen.index("cancelled", start)])
        assert region and ANSWER.startswith(region), screen  # a prefix of the answer, each word once
        assert region.count("word001") == 1, screen
        term.wait_for("writer>", after=screen.index("cancelled", start))  # the session goes on


def test_help_and_listings_fit_80_columns_without_breaking_words(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'turns:\n  - text: "hi"\n')
    long = " ".join(f"clause{i:02d}" for i in range(30)) + " TAILMARKER"
    (ws / ".bearagent" / "agents" / "verbose.md").write_text(
        f"---\ndescription: {long}\nmode: primary\n---\nYou talk.\n", encoding="utf-8"
    )
    with _session(tmp_path, ws, 80) as term:
        term.wait_for("writer>")
        term.send_text("/help")
        term.send("Enter")
        screen = term.wait_for(r"Ctrl-C cancels a running answer")
        lines = screen.splitlines()
        assert "      Up/Down, Ctrl-R: history · Ctrl-C cancels a running answer" in lines, screen
        assert "  /compact [FOCUS]  summarise the earlier turns now (FOCUS: what to keep)" in lines, screen
        term.send_text("/agents")
        term.send("Enter")
        screen = term.wait_for(r"verbose\s+primary")
        row = next(line for line in screen.splitlines() if "verbose" in line and "primary" in line)
        assert row.rstrip().endswith("…") and len(row.rstrip()) <= 80, screen  # cut, not wrapped
        assert "TAILMARKER" not in screen, screen


APPROVAL_SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "one\\n"}}]
  - text: "First done."
  - text: "Writing again."
    tool_calls: [{name: Write, arguments: {file_path: two.txt, content: "two\\n"}}]
  - text: "Second done."
"""


def test_an_approval_is_one_key_and_drawn_once(tmp_path: Path) -> None:
    from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

    require_tmux()
    root = scripted_workspace(
        tmp_path / "ws",
        APPROVAL_SCRIPT,
        agents={"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")},
        config=CONFIG + "permission_mode: default\n",
    )
    env = base_env(tmp_path / "home")
    with TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(root)], width=80, env=env, cwd=root) as term:
        term.wait_for("main>")
        term.send_text("write it")
        term.send("Enter")
        term.wait_for(r"\[a\]lways this session")
        term.send_text("y")  # one key, no Enter
        screen = term.wait_for(r"succeeded · ")
        assert (root / "out.txt").read_text() == "one\n"
        assert screen.count("? Write(out.txt) needs approval") == 1, screen  # the block is drawn once
        assert screen.count("[a]lways this session") == 1, screen
        assert "  allow [y]es once, [a]lways this session, [n]o? (one key) yes" in screen.splitlines()  # one line
        term.send_text("write again")
        term.send("Enter")
        # the question is on the screen (a key before it is discarded: typeahead never answers)
        term.wait_for(r"\? Write\(two.txt\) needs approval(.|\n)*\(one key\)")
        term.send("Escape")  # Esc says no
        end = term.wait_for(r"Second done")
        assert not (root / "two.txt").exists()
        assert "[n]o? (one key) no" in end, end


BACKGROUND_SCRIPT = """
turns:
  - tool_calls: [{name: mcp__demo__echo, arguments: {message: hi}}]
  - tool_calls: [{name: Bash, arguments: {command: "sleep 300", run_in_background: true}}]
  - text: "Started it."
  - tool_calls: [{name: KillShell, arguments: {shell_id: bash_1}}]
  - text: "Stopped it."
"""


def test_the_status_line_shows_the_mcp_servers_and_the_running_background_shells(tmp_path: Path) -> None:
    """Issue 33: the MCP servers' state and the background shells still running are on the status line, and it
    follows them (a shell stopped by KillShell leaves it)."""
    ws = tmp_path / "ws"
    server = server_in_workspace(ws, "demo.py")
    config = (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n  demo: {{command: {json.dumps(sys.executable)}, args: [{json.dumps(str(server))}]}}\n"
        "permissions: {allow: [Bash, KillShell, mcp__demo__echo]}\n"
    )
    agents = {"main": agent_md("Main.", mode="primary", tools="[Bash, KillShell]", mcp="[demo]")}
    scripted_workspace(ws, BACKGROUND_SCRIPT, agents=agents, config=config)
    with _session(tmp_path, ws, 160) as term:
        term.wait_for(r"Trust this workspace\? \[y/N\]")
        term.send_text("y")
        term.send("Enter")
        screen = term.wait_for(r"main · scripted · \S+ · sandbox \S+ · 0 tokens")  # nothing started yet
        assert "mcp " not in screen.splitlines()[-1]
        term.send_text("start it")
        term.send("Enter")
        term.wait_for("Started it.")
        term.wait_for(r"main · scripted · \S+ · sandbox \S+ · mcp 1 ready · 1 shell · [\d,]+ tokens")
        term.send_text("stop it")
        term.send("Enter")
        term.wait_for("Stopped it.")
        term.wait_for(r"main · scripted · \S+ · sandbox \S+ · mcp 1 ready · [\d,]+ tokens")

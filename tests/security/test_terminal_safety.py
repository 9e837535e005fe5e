"""Control sequences in model text and tool output are shown, never interpreted, on a terminal: `bearagent run`
(piped and on a pseudo-terminal), the interactive session, `inspect` and `events`; `--json` output stays exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.cli.safe_text import VisibleStream, visible

# What a hostile model or file may print: set the window title (OSC 0, BEL-terminated), clear the screen (CSI 2J),
# a hyperlink (OSC 8), erase with backspaces, overwrite a line with a lone CR, and a one-byte C1 CSI (U+009B).
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
SCRIPT = r"""
turns:
  - text: "Title \e]0;pwned\a then clear \e[2J and \e]8;;http://evil.example\e\\link\e]8;;\e\\ done."
    tool_calls: [{name: Read, arguments: {file_path: evil.txt}}]
  - text: "safe\rEVIL and rm -rf\b\b\b\b\b\bls, C1 \u009b31m red."
"""
FILE = "first line \x1b[31mred\x1b[0m \x1b]0;file-title\x07\nsecond \x1b[2J\n"
# a workspace file may hold them too: YAML escapes in an agent's description
AGENTS = {"main": agent_md(r'"Main \e]0;agent-title\a agent."', mode="primary", tools="[Read]")}
RAW_CONTROLS = (b"\x1b", b"\x07", b"\x08", b"\xc2\x9b", b"\r")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (TITLE, "␛]0;pwned␇"),
        (CLEAR, "␛[2J"),
        ("a\rb", "a␍b"),
        ("line\r\nnext", "line\nnext"),
        ("rm\b\b", "rm␈␈"),
        ("\x00\x7f\x0b\x0c", "␀␡␋␌"),
        ("csi \x9b2J", "csi <U+009B>2J"),
        ("bidi \u202eevil\u2066", "bidi <U+202E>evil<U+2066>"),
        ("keeps\ttabs\nand newlines, é, 漢字, 😀", "keeps\ttabs\nand newlines, é, 漢字, 😀"),
    ],
)
def test_visible_shows_controls_and_keeps_text(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert not any(ord(c) < 0x20 and c not in "\t\n" for c in visible(raw))


def test_streamed_pieces_join_a_split_crlf_and_show_a_lone_cr() -> None:
    stream = VisibleStream()
    pieces = ["one\r", "\ntwo\r", "three\r"]
    assert "".join(stream.feed(p) for p in pieces) + stream.flush() == "one\ntwo␍three␍"


def _workspace(tmp_path: Path) -> Path:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    write(root, "evil.txt", FILE)
    return root


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, **isolated_env(tmp_path), **extra}


def _bearagent(args: list[str], tmp_path: Path, *, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    env = _env(tmp_path)
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env=env,
        input=stdin.encode() if stdin is not None else None,
        capture_output=True,
        timeout=120,
    )


def _assert_no_raw_controls(output: bytes, where: str) -> None:
    for control in RAW_CONTROLS:
        assert control not in output, f"{where} printed a raw {control!r}: {output[:2000]!r}"


@pytest.mark.slow
def test_bearagent_run_piped_shows_the_escapes_and_prints_none(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    done = _bearagent(["run", "-w", str(root), "read evil.txt"], tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    _assert_no_raw_controls(done.stdout, "stdout")
    _assert_no_raw_controls(done.stderr, "stderr")
    assert "␛]0;pwned␇" in out and "␛[2J" in out  # the model's text, visible
    assert "␛]8;;http://evil.example␛\\link" in out
    assert "␛[31mred␛[0m" in out  # the tool output's first line in the result preview
    assert "safe␍EVIL" in out and "rm -rf␈␈␈␈␈␈ls" in out and "<U+009B>31m" in out

    events = _bearagent(["events", "last", "-w", str(root)], tmp_path)
    inspect = _bearagent(["inspect", "last", "-w", str(root)], tmp_path)
    runs = _bearagent(["runs", "list", "-w", str(root)], tmp_path)
    for name, shown in (("events", events), ("inspect", inspect), ("runs list", runs)):
        assert shown.returncode == 0, shown.stderr.decode()
        _assert_no_raw_controls(shown.stdout, name)
    assert "␛]0;pwned␇" in events.stdout.decode()
    assert "safe␍EVIL" in inspect.stdout.decode()

    # JSON stays exact: the stored text comes back byte for byte
    raw = _bearagent(["events", "last", "--json", "-w", str(root)], tmp_path)
    texts = [
        json.loads(line)["payload"].get("text", "")
        for line in raw.stdout.decode().splitlines()
        if json.loads(line)["event_type"] == "ModelCallCompleted"
    ]
    assert TITLE in texts[0] and CLEAR in texts[0]
    assert "safe\rEVIL" in texts[1] and "\x9b31m" in texts[1]
    record = _bearagent(["run", "-w", str(root), "--json", "again"], tmp_path)
    assert record.returncode == 0, record.stderr.decode()
    assert json.loads(record.stdout)["final"] == "safe\rEVIL and rm -rf\b\b\b\b\b\bls, C1 \x9b31m red."


def _spawn_tty(args: list[str], tmp_path: Path) -> pexpect.spawn[bytes]:
    env = _env(tmp_path, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    return pexpect.spawn(
        sys.executable, ["-m", "bearagent", *args], env=env, timeout=60, dimensions=(50, 200), echo=False
    )


def test_bearagent_run_on_a_terminal_styles_but_never_passes_the_models_sequences(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    child = _spawn_tty(["run", "-w", str(root), "read evil.txt"], tmp_path)
    child.expect(pexpect.EOF)
    child.close()
    out = child.before or b""
    assert child.exitstatus == 0, out
    assert b"\x1b[" in out, "on a terminal the renderer's own colours are expected"
    for sequence in (b"\x1b]", b"\x07", b"\x1b[2J", b"\x08", b"\xc2\x9b", b"\x1b[31mred"):
        assert sequence not in out, f"raw {sequence!r} reached the terminal"
    text = out.decode()
    assert "␛]0;pwned␇" in text and "␛[2J" in text and "␛[31mred" in text


def test_interactive_session_shows_the_escapes(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    done = _bearagent(["-w", str(root)], tmp_path, stdin="read evil.txt\n/agents\n/exit\n")
    assert done.returncode == 0, done.stderr.decode()
    _assert_no_raw_controls(done.stdout, "stdout")
    _assert_no_raw_controls(done.stderr, "stderr")
    out = done.stdout.decode()
    assert "␛]0;pwned␇" in out and "safe␍EVIL" in out
    assert "Main ␛]0;agent-title␇ agent." in out  # an agent description from a workspace file


@pytest.mark.slow
def test_interactive_session_on_a_terminal_renders_markdown_without_the_models_sequences(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    child = _spawn_tty(["-w", str(root)], tmp_path)
    child.expect("main>")
    child.sendline("read evil.txt")
    child.expect("succeeded")  # the line editor redraws the prompt line on Enter: wait for the run's end
    shown = child.before or b""
    child.expect("main>")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    for sequence in (b"\x1b]", b"\x07", b"\x1b[2J", b"\x08", b"\xc2\x9b"):
        assert sequence not in shown, f"raw {sequence!r} reached the terminal"
    assert "␛]0;pwned␇" in shown.decode()

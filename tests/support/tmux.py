"""A program in a real terminal emulator (tmux), for tests of what the screen shows: a private tmux server per
test (its own socket), a fixed size, keys sent, the screen and its scrollback captured as plain text.

tmux is a Debian package (`scripts/ci-extras.sh` installs it); without it these tests skip with that reason.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import pytest


def require_tmux() -> str:
    path = shutil.which("tmux")
    if path is None:
        pytest.skip("tmux is not installed (scripts/ci-extras.sh installs it: apt-get install -y tmux)")
    return path


class TmuxScreen:
    """One tmux session running `argv` in a `width` x `height` window."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        width: int,
        height: int = 40,
        env: Mapping[str, str],
        cwd: Path,
    ) -> None:
        self._tmux = require_tmux()
        self._socket = f"bearagent-test-{uuid.uuid4().hex[:12]}"
        self._target = "t"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # `remain-on-exit` keeps the last screen readable after the program ends.
        command = f"env -i {exports} {shlex.join(argv)}"
        self._run(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            self._target,
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(cwd),
            command,
        )
        self._run("set-option", "-t", self._target, "remain-on-exit", "on")
        self._run("set-option", "-t", self._target, "history-limit", "5000")

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self._tmux, "-L", self._socket, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def send(self, *keys: str) -> None:
        """Keys as tmux names them (`Enter`, `C-c`, `Tab`) or literal text."""
        self._run("send-keys", "-t", self._target, *keys)

    def send_text(self, text: str) -> None:
        self._run("send-keys", "-t", self._target, "-l", text)

    def paste(self, text: str) -> None:
        """Paste `text` as a terminal does (bracketed, when the program asked for bracketed paste)."""
        self._run("set-buffer", "-b", "t", text)
        self._run("paste-buffer", "-p", "-d", "-b", "t", "-t", self._target)

    def resize(self, width: int, height: int = 40) -> None:
        self._run("resize-window", "-t", self._target, "-x", str(width), "-y", str(height))

    def screen(self) -> str:
        """The visible screen and its scrollback, plain text, one terminal row per line."""
        return self._run("capture-pane", "-p", "-t", self._target, "-S", "-5000")

    def wait_for(self, pattern: str, *, timeout_s: float = 30.0, after: int = 0) -> str:
        """Wait until `pattern` (a regex) is on the screen, at or after character `after`; return the screen."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if regex.search(shown, after):
                return shown
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never appeared on the screen; it shows:\n{shown}")

    def close(self) -> None:
        subprocess.run([self._tmux, "-L", self._socket, "kill-server"], capture_output=True, timeout=10, check=False)

    def __enter__(self) -> TmuxScreen:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def base_env(home: Path) -> dict[str, str]:
    """A small environment for the program under test: no colour variables of the host, its own BEARAGENT_HOME."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / ".bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "TERM": "screen",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    for key in ("VIRTUAL_ENV", "PYTHONPATH"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def words(text: str) -> str:
    """`text` with every run of whitespace as one space: what is left of a paragraph after word-wrapping."""
    return " ".join(text.split())

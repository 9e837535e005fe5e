"""One-key answers on a terminal (the session's approval question): `y`, `a` or `n` answers at once, no Enter.

The terminal is put in cbreak mode for the question only (no echo, no line buffering; Ctrl-C still interrupts), and
whatever was typed before the question was shown is discarded first: a key pressed while the answer streamed never
answers a question the user has not seen. The wait polls a stop flag, so a run cancelled meanwhile (Ctrl-C) does
not leave a thread reading the terminal and eating the first key of the next prompt.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import select
import sys
import threading
from typing import IO


def one_key_terminal() -> bool:
    """Whether stdin and stdout are a terminal this module can read single keys from (POSIX termios)."""
    if importlib.util.find_spec("termios") is None:  # not POSIX
        return False
    return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()


def read_key(prompt: str, keys: str, stop: threading.Event, out: IO[str] | None = None) -> str | None:
    """Write `prompt`, then wait for one of `keys` (case-insensitive), Enter (`"\\n"`) or Esc (`"\\x1b"`); other keys
    are ignored. None when `stop` is set first. The terminal's mode is restored afterwards."""
    import termios
    import tty

    stream: IO[str] = sys.stdout if out is None else out
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        termios.tcflush(fd, termios.TCIFLUSH)  # typeahead never answers
        stream.write(prompt)
        stream.flush()
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            char = os.read(fd, 1).decode("utf-8", errors="replace").lower()
            if char == "\r":
                char = "\n"
            if char == "\x1b" and _waiting(fd):
                _drain(fd)  # an arrow or function key: a sequence that starts with Esc, not an answer
                continue
            if char in keys or char in ("\n", "\x1b"):
                if char != "\n" and _waiting(fd):
                    os.read(fd, 1)  # the Enter of the old habit (`y` then Enter) goes with its key
                return char
        return None
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _waiting(fd: int) -> bool:
    """Whether a byte arrives within 20 ms (the rest of a key's sequence, or an Enter typed with the key)."""
    return bool(select.select([fd], [], [], 0.02)[0])


def _drain(fd: int) -> None:
    """Read what is already waiting, nothing more."""
    while _waiting(fd):
        os.read(fd, 64)

"""Piped stdin for `bearagent run PROMPT`: as in Claude Code (`cat log | claude -p "explain"`), what is piped is
appended to the prompt argument.

Only a pipe or a redirected file counts: a terminal is never read, nor `/dev/null` or another device. A pipe is read
only once it has data (or is closed) within `PIPE_WAIT_S`: a program started with an inherited pipe nobody writes to
(a test runner, a CI step) must not hang waiting for input that never comes.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from typing import TextIO

PIPE_WAIT_S = 1.0


def piped_text(stream: TextIO | None = None, *, wait_s: float = PIPE_WAIT_S) -> str | None:
    """What is piped on `stream` (default stdin), or None when nothing is (a terminal, a device, an idle pipe)."""
    source: TextIO | None = stream if stream is not None else sys.stdin
    if source is None:  # no stdin at all (a pythonw-like embedding)
        return None
    return _read(source, wait_s)


def _read(stream: TextIO, wait_s: float) -> str | None:
    try:
        if stream.isatty():
            return None
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return stream.read()
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    ready, _, _ = select.select([stream], [], [], wait_s)
    return stream.read() if ready else None


def with_piped_input(prompt: str, piped: str | None) -> str:
    """`prompt`, then a blank line and the piped text (when there is some)."""
    if piped is None or not piped.strip():
        return prompt
    return f"{prompt}\n\n{piped.rstrip()}"

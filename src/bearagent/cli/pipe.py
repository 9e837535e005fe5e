"""A closed stdout ends output quietly: `bearagent run --stream-json | head` exits 0 without tracebacks.

When the reader of a pipe goes away, the next write raises `BrokenPipeError`. The convention of Unix filters (and
what `head` expects) is to stop writing and end without noise, so stdout is pointed at the null device: the rest of
the output is dropped, the run still ends and records itself as usual, and the interpreter's final flush of
stdout cannot fail either."""

from __future__ import annotations

import os
import sys

import click


def echo_line(text: str) -> None:
    """`click.echo(text)` to stdout; once the reader has gone, nothing (and never an error)."""
    try:
        click.echo(text)
    except BrokenPipeError:
        drop_stdout()


def drop_stdout() -> None:
    """Point stdout at the null device (the reader of the pipe is gone)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (click's test runner): nothing to redirect
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)

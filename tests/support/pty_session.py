"""The interactive session (`bearagent -w ROOT`) in a real pseudo-terminal (pexpect), for the e2e tests of what a
person at the terminal sees: one owner for its environment (a private BearAgent home, no colour, a plain xterm, no
entry-point plugins), its window size, answering the trust question and waiting for the agent's prompt."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path

import pexpect

TRUST_QUESTION = "Trust this workspace\\? \\[y/N\\]"


def session_env(bearagent_home: Path, **extra: str) -> dict[str, str]:
    """This process's environment with a private BearAgent home, plain output and no entry-point plugins; `extra`
    (HOME=..., a provider key) goes on top."""
    env = dict(os.environ)
    env.update({"BEARAGENT_HOME": str(bearagent_home), "NO_COLOR": "1", "TERM": "xterm", "BEARAGENT_LOAD_PLUGINS": ""})
    env.update(extra)
    return env


def spawn_session(
    root: Path,
    env: dict[str, str],
    *,
    timeout: int = 30,
    preexec_fn: Callable[[], None] | None = None,
) -> pexpect.spawn[str]:
    """`python -m bearagent -w ROOT` in a 40x160 pseudo-terminal; the caller closes it."""
    return pexpect.spawn(
        sys.executable,
        ["-m", "bearagent", "-w", str(root)],
        env=env,
        encoding="utf-8",
        timeout=timeout,
        dimensions=(40, 160),
        preexec_fn=preexec_fn,
    )


@contextmanager
def interactive_session(
    root: Path,
    env: dict[str, str],
    *,
    timeout: int = 30,
    trust: bool = False,
    prompt: str = "main>",
) -> Generator[pexpect.spawn[str]]:
    """The session on `root`, past the trust question (answered yes when `trust`: the workspace has something on its
    trust surface) and at the agent's `prompt`; force-closed on the way out, whatever the test did."""
    child = spawn_session(root, env, timeout=timeout)
    try:
        if trust:
            child.expect(TRUST_QUESTION)
            child.sendline("y")
        child.expect(prompt)
        yield child
    finally:
        child.close(force=True)

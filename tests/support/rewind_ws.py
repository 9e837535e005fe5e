"""What the rewind tests share: a workspace tree read back to compare byte for byte, the scripted tool call, the
stores they run over (the workspace's SQLite log or a user config's PostgreSQL database), the CLI run as a real
process, and a `bearagent run` killed with SIGKILL while its Bash call runs."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.security.test_shipped_logs_postgres import user_env
from tests.support import postgres_cluster
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md

MAIN = {"main": agent_md("Main agent.", mode="primary")}
Tree = dict[str, tuple[str, int, bytes | str]]


def tool_call(name: str, **arguments: object) -> dict[str, object]:
    """A scripted turn that calls one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def tree(root: Path) -> Tree:
    """Every path but .bearagent: kind, mode, content (or link target)."""
    out: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".bearagent" or Path(dirpath) != root]
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), "")
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return out


def store_env(store: str, home: Path) -> dict[str, str]:
    """The environment of a run over `store` ("sqlite": the workspace's log; "postgres": a new database named in
    the user config of `home`, skipped without a PostgreSQL server)."""
    if store == "postgres":
        postgres_cluster.require()
        return user_env(home, postgres_cluster.new_database())
    return isolated_env(home)


def bearagent(
    root: Path, env: Mapping[str, str], *args: str, timeout: int = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`bearagent ARGS -w ROOT` as a real process; with `check` it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", *args, "-w", str(root)],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert not check or done.returncode == 0, (args, done.stdout, done.stderr)
    return done


@contextmanager
def run_killed_in_bash(
    root: Path, env: Mapping[str, str], goal: str, started: Path, *, timeout: float = 60
) -> Generator[subprocess.Popen[bytes]]:
    """`bearagent run GOAL` in its own process group, waited for until its Bash call made `started`; SIGKILLed when
    the block ends (bearagent only: the sandbox dies with it), its group too if anything failed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), goal],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the Bash call never started"
            time.sleep(0.05)
        yield proc
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

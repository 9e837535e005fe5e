"""Background shells: `Bash{run_in_background: true}` starts a command and returns at once; `BashOutput` reads what
it printed since the last read; `KillShell` ends it.

A background command is launched exactly like a Bash call (`sandbox.launch.shell_launch`): in the sandbox, whose
`--die-with-parent` ends it with BearAgent, or unconfined under the reaper, whose parent-death signal does the
same; so nothing survives even a `kill -9` of BearAgent. It is spawned from the calling (event-loop) thread, the
thread those parent-death signals watch. Threads, not the event loop, read its pipes, so a shell outlives the turn
that started it and is read by a later one. Bounded: at most `MAX_SHELLS` running per session, the last
`MAX_BUFFER_BYTES` of each stream kept (what scrolled away is counted and said). Shells belong to the session (or
run) that started them: another session neither sees nor kills them. Every shell still running is ended when
BearAgent exits normally (`atexit`), and `end_session_shells` ends a session's.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bearagent.tools.base import tool_error

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bearagent.ports import ToolContext
    from bearagent.sandbox.launch import ShellLaunch

MAX_SHELLS = 8
MAX_BUFFER_BYTES = 1_048_576
STOP_GRACE_S = 3.0
ShellStatus = Literal["running", "completed", "killed"]


class _Ring:
    """The last `MAX_BUFFER_BYTES` of a stream, with the total written and how far a reader has read."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.total = 0
        self.read_to = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > MAX_BUFFER_BYTES:
            del self.buf[: len(self.buf) - MAX_BUFFER_BYTES]

    def take(self) -> tuple[bytes, int]:
        """What was written since the last take, and how many of those bytes scrolled out of the buffer."""
        start = self.total - len(self.buf)
        dropped = max(0, start - self.read_to)
        new = bytes(self.buf[max(0, self.read_to - start) :])
        self.read_to = self.total
        return new, dropped


@dataclass(eq=False)
class BackgroundShell:
    shell_id: str
    owner: str
    command: str
    proc: subprocess.Popen[bytes]
    launch: ShellLaunch
    started: float = field(default_factory=time.monotonic)
    out: _Ring = field(default_factory=_Ring)
    err: _Ring = field(default_factory=_Ring)
    killed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    readers: list[threading.Thread] = field(default_factory=lambda: [])

    @property
    def status(self) -> ShellStatus:
        if self.proc.poll() is None:
            return "running"
        return "killed" if self.killed else "completed"

    def drain(self, timeout_s: float) -> None:
        """Wait (up to `timeout_s` in all) for the pipe readers of an ended shell to reach the end of its output."""
        deadline = time.monotonic() + timeout_s
        for reader in self.readers:
            reader.join(max(0.0, deadline - time.monotonic()))

    def stop(self) -> None:
        """End the command and everything it started (the same order as a Bash call's stop)."""
        with self.lock:
            self.killed = self.killed or self.proc.poll() is None
        if self.proc.poll() is None and self.launch.graceful_stop:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(STOP_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


_SHELLS: dict[tuple[str, str], BackgroundShell] = {}
"""(owner, shell id) -> shell. Ids count per owner (`bash_1`, `bash_2`, ...), as Claude Code's do per session."""
_LOCK = threading.Lock()
_IDS: dict[str, itertools.count[int]] = {}


def _pump(shell: BackgroundShell, fd: int, ring: _Ring) -> None:
    try:
        while True:
            chunk = os.read(fd, 65_536)
            if not chunk:
                return
            with shell.lock:
                ring.feed(chunk)
    except OSError:
        return
    finally:
        os.close(fd)


def _watch(shell: BackgroundShell) -> None:
    shell.proc.wait()
    for reader in shell.readers:
        reader.join(5)
    if any(r.is_alive() for r in shell.readers):  # a child still holds a pipe: end the group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(shell.proc.pid, signal.SIGKILL)
    shell.launch.finish()


def start_shell(command: str, settings: Mapping[str, object], root: Path, owner: str) -> BackgroundShell:
    """Start `command` in the background for `owner` (a session or run id); a tool error when the owner already has
    `MAX_SHELLS` running."""
    with _LOCK:
        running = [s for s in _SHELLS.values() if s.owner == owner and s.status == "running"]
        if len(running) >= MAX_SHELLS:
            raise tool_error(
                "tool",
                "too_many_background_shells",
                f"{len(running)} background shells are already running ({', '.join(s.shell_id for s in running)}); "
                f"at most {MAX_SHELLS} may run at once. Stop one with KillShell, or run the command in the "
                "foreground.",
            )
    from bearagent.sandbox.launch import shell_launch

    launch = shell_launch(("/bin/bash", "-c", command), settings, root)
    try:
        proc = subprocess.Popen(
            launch.argv,
            cwd=str(root),
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        launch.finish()
        raise
    assert proc.stdout is not None and proc.stderr is not None
    with _LOCK:
        shell_id = f"bash_{next(_IDS.setdefault(owner, itertools.count(1)))}"
    shell = BackgroundShell(shell_id=shell_id, owner=owner, command=command, proc=proc, launch=launch)
    for stream, ring in ((proc.stdout, shell.out), (proc.stderr, shell.err)):
        fd = os.dup(stream.fileno())
        stream.close()
        reader = threading.Thread(target=_pump, args=(shell, fd, ring), name=f"{shell_id}-reader", daemon=True)
        shell.readers.append(reader)
        reader.start()
    threading.Thread(target=_watch, args=(shell,), name=f"{shell_id}-watch", daemon=True).start()
    with _LOCK:
        _SHELLS[(owner, shell_id)] = shell
    return shell


def shell_owner(context: ToolContext) -> str:
    """Who a background shell belongs to: the call's session, else its run."""
    return str(context.session_id or context.run_id or "local")


def find_shell(shell_id: str, owner: str, tool: str) -> BackgroundShell:
    with _LOCK:
        shell = _SHELLS.get((owner, shell_id))
        mine = [s.shell_id for s in _SHELLS.values() if s.owner == owner]
    if shell is None:
        known = ", ".join(mine[-20:]) or "none"
        raise tool_error(
            "tool",
            "no_such_shell",
            f"{tool}: there is no background shell {shell_id[:50]!r} in this session (its shells: {known}). "
            "Start one with Bash and run_in_background: true.",
        )
    return shell


def read_new(shell: BackgroundShell, pattern: re.Pattern[str] | None) -> tuple[str, str, int]:
    """The stdout and stderr written since the last read (only the lines matching `pattern` when given; the others
    are consumed too), and how many bytes scrolled away unread."""
    with shell.lock:
        out, dropped_out = shell.out.take()
        err, dropped_err = shell.err.take()

    def text(raw: bytes) -> str:
        decoded = raw.decode("utf-8", "replace")
        if pattern is None:
            return decoded
        return "".join(line for line in decoded.splitlines(keepends=True) if pattern.search(line))

    return text(out), text(err), dropped_out + dropped_err


def running_shells(owner: str) -> int:
    """How many of `owner`'s background shells are still running (the interactive session's status line)."""
    with _LOCK:
        return sum(1 for s in _SHELLS.values() if s.owner == owner and s.status == "running")


def end_session_shells(owner: str) -> int:
    """End every background shell of `owner`; how many were still running."""
    with _LOCK:
        mine = [s for s in _SHELLS.values() if s.owner == owner]
        for shell in mine:
            del _SHELLS[(owner, shell.shell_id)]
        _IDS.pop(owner, None)
    running = [s for s in mine if s.status == "running"]
    for shell in running:
        shell.stop()
    return len(running)


@atexit.register
def _end_all() -> None:
    with _LOCK:
        shells = list(_SHELLS.values())
        _SHELLS.clear()
    for shell in shells:
        if shell.proc.poll() is None:
            shell.stop()

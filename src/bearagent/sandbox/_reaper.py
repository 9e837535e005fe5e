"""Run one command so that none of its processes outlives it, without a sandbox (Linux). A standalone script: run as
`python -I -S _reaper.py PARENT_PID PROGRAM ARG...`; it imports nothing of BearAgent.

It makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the command starts that is orphaned,
`setsid` and double-fork daemons included, is re-parented to it instead of to init. When the command exits, or
when the reaper gets SIGTERM/SIGHUP/SIGINT, or when BearAgent dies (`PR_SET_PDEATHSIG` delivers SIGTERM), it kills
every process still below it and exits with the command's status (128 + signal when a signal ended it). Only a
SIGKILL of the reaper itself leaves the tree to init: BearAgent therefore stops it with SIGTERM first.

The stop signals are never handled asynchronously: they stay blocked and the reaper takes them, and SIGCHLD, with
`sigwaitinfo`. A stop can arrive more than once: Linux sends the parent-death signal each time the thread the
reaper is attached to exits, and when BearAgent dies its threads exit one after another, the reaper re-attached to
the next each time. With a handler that raised on each signal, a second SIGTERM landing after the first was handled
but before the handlers were switched off ended the reaper with an uncaught exception, before it killed anything,
and the command's processes went to init (seen as "a process of the Bash call survived SIGKILL of bearagent").
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

TYPE_CHECKING = False  # not `typing`'s: importing it costs more than what it saves here
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal  # the same functions and numbers without the enums of `signal` (~9 ms a call)

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_DEADLINE_S = 60.0
"""How long the reaper keeps killing what is below it (each round SIGKILLs every child, then waits for one to end;
it is done in milliseconds). A guard against a child that never dies (stuck in the kernel), not a figure to reach:
when the machine is loaded a round may wait seconds for the CPU, and giving up early leaves survivors to init."""


STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGHUP, signal.SIGINT})


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        pass
    found: list[int] = []  # kernels without CONFIG_PROC_CHILDREN: scan every process's parent
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry))
    return found


def _status_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _kill_all(me: int, shell: int, code: int | None) -> int | None:
    """SIGKILL every process below us until none is left; return the shell's status if it is reaped here."""
    deadline = time.monotonic() + KILL_DEADLINE_S
    while time.monotonic() < deadline:
        kids = _children(me)
        for kid in kids:
            # not `contextlib.suppress`: importing contextlib costs ~10 ms of every unconfined call
            try:  # noqa: SIM105
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            pid, status = os.waitpid(-1, 0 if kids else os.WNOHANG)
        except ChildProcessError:
            return code
        except InterruptedError:
            continue
        if pid == shell:
            code = _status_code(status)
        if pid == 0 and not kids:
            time.sleep(0.01)
    return code


def _reap(shell: int) -> int | None:
    """Reap every child that has ended (one SIGCHLD may stand for several); the shell's status if it is one."""
    code: int | None = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return code
        if pid == 0:
            return code
        if pid == shell:
            code = _status_code(status)


def main() -> int:
    parent = int(sys.argv[1])
    argv = sys.argv[2:]
    waited = {*STOP_SIGNALS, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)  # before PDEATHSIG is armed: a stop waits to be taken
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    me = os.getpid()
    if os.getppid() != parent:
        return 137  # BearAgent died before PR_SET_PDEATHSIG was armed
    if signal.sigpending() & STOP_SIGNALS:
        return 137  # stopped before the command started: do not start it
    shell = os.posix_spawn(
        argv[0],
        argv,
        os.environ,
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *STOP_SIGNALS),
        setsigmask=(),  # the command starts with no signal blocked
    )
    code: int | None = None
    while code is None:
        if signal.sigwaitinfo(waited).si_signo in STOP_SIGNALS:
            break  # any further stop signal stays pending, blocked, until the reaper exits
        code = _reap(shell)
    code = _kill_all(me, shell, code)
    return 137 if code is None else code


if __name__ == "__main__":
    sys.exit(main())

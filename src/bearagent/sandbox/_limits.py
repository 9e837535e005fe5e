"""Run a command inside the sandbox under per-call limits and Landlock scopes (run as
`python3 -I -S _limits.py PROCS DATA FSIZE -- argv`; each limit a number or `-` for none; standard library only,
nothing of BearAgent imported).

- Landlock scopes (Linux 6.12+, Landlock ABI 6): the command and everything it starts cannot connect to an abstract
  Unix socket (one with no path) made outside the sandbox, nor signal a process outside it. Abstract sockets are per
  network namespace, so this matters with `network: allow`, where the sandbox shares the host's (X11's, a session
  bus's, an IDE's or an agent's abstract socket). On an older kernel the command runs without the scopes (the
  documented gap).

- `DATA` and `FSIZE`: `RLIMIT_DATA` (a process's heap and private writable mappings: an allocation beyond it fails,
  so a memory hog gets `MemoryError` / `Cannot allocate memory`) and `RLIMIT_FSIZE` (a write beyond it fails), set
  for the command and everything it starts.
- `PROCS`: `RLIMIT_NPROC` for the command, and because the kernel does not apply it to every user (root in the
  sandbox's user namespace is not held by it), this supervisor also counts the processes of the sandbox's own PID
  namespace (`/proc` inside shows only them) every few milliseconds: past the limit, it kills them all (a fork bomb
  ends) and says so on stderr. The call's exit status is then 137.

Otherwise the exit status is the command's (128 + the signal when a signal ended it).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import sys
import time

POLL_SECONDS = 0.005


def _limit(which: int, value: str) -> None:
    if value == "-":
        return
    number = int(value)
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY and hard < number:
        number = hard  # already lower: keep it (a process cannot raise its hard limit)
    resource.setrlimit(which, (number, number))


LANDLOCK_CREATE_RULESET = 444
LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1
LANDLOCK_SCOPE_SIGNAL = 2
PR_SET_NO_NEW_PRIVS = 38


def _scope() -> bool:
    """Enter a Landlock domain that scopes abstract Unix sockets and signals; False where the kernel has no scopes
    (the syscall numbers are the same on every Linux architecture BearAgent runs on)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION) < 6:
            return False
        attr = struct.pack("QQQ", 0, 0, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL)
        buffer = ctypes.create_string_buffer(attr, len(attr))
        ruleset = libc.syscall(LANDLOCK_CREATE_RULESET, buffer, len(attr), 0)
        if ruleset < 0:
            return False
        try:
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                return False
            return libc.syscall(LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0
        finally:
            os.close(ruleset)
    except (OSError, AttributeError):
        return False


def _count() -> int:
    try:
        return sum(1 for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return 0


def main(argv: list[str]) -> int:
    procs, data, fsize, sep, *command = argv
    if sep != "--" or not command:
        sys.stderr.write("usage: _limits.py PROCS DATA FSIZE -- command...\n")
        return 2
    pid = os.fork()
    if pid == 0:
        try:
            _scope()
            _limit(resource.RLIMIT_DATA, data)
            _limit(resource.RLIMIT_FSIZE, fsize)
            _limit(resource.RLIMIT_NPROC, procs)
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"{command[0]}: {exc.strerror or exc}\n")
            os._exit(127)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(pid, signum))
    cap = int(procs) if procs != "-" else None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        if cap is not None and _count() > cap:
            os.kill(-1, signal.SIGKILL)  # every process of the sandbox but this one
            os.waitpid(pid, 0)
            sys.stderr.write(
                f"\n[sandbox] the command was stopped: it started more than {cap} processes at once (a fork bomb?); "
                "the limit is `sandbox.limits.processes` in your user config\n"
            )
            return 137
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

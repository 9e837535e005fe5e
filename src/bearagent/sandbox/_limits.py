"""Run a command inside the sandbox under per-call limits (run as `python3 -I -S _limits.py PROCS DATA FSIZE -- argv`;
each limit a number or `-` for none; standard library only, nothing of BearAgent imported).

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

import os
import resource
import signal
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

"""Is a process of this host still the one it was? Read from `/proc/<pid>/stat` once (state and start time
together), so a pid another process took over, or an exited process its parent has not reaped (a zombie), counts as
gone. Used by run leases (`service/leases.py`) and by the file-change capture's marker of a call in progress
(`rewind/markers.py`)."""

from __future__ import annotations

import os
from pathlib import Path


def read_quietly(path: str) -> str:
    """A small text file of /proc, stripped; empty when it cannot be read."""
    try:
        return Path(path).read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def proc_stat(pid: int) -> tuple[str, int] | None:
    """The state letter (`/proc/<pid>/stat` field 3) and start time in clock ticks since boot (field 22) of process
    `pid`, read at once; None when it has no entry (no such process, or no /proc)."""
    stat = read_quietly(f"/proc/{pid}/stat")
    if not stat:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def process_start(pid: int) -> int:
    """The start time of process `pid` in clock ticks since boot (`/proc/<pid>/stat` field 22); 0 when unknown."""
    stat = proc_stat(pid)
    return 0 if stat is None else stat[1]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def process_gone(pid: int, start: int) -> str | None:
    """Why process `pid` (started at `start` ticks, 0: unknown) is gone, or None while it may still run."""
    stat = proc_stat(pid)
    if stat is None:  # no entry: no such process; or a system without /proc, where only signal 0 can tell
        return "is gone" if not pid_alive(pid) else None
    state, now_start = stat
    if state in ("Z", "X"):
        return "is gone (exited; its parent has not collected it yet)"
    if start and now_start != start:
        return "is gone; the pid now belongs to another process"
    return None

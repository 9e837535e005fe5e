"""A control group per sandboxed call, when the host lets BearAgent make one: the kernel's own ceiling on the call's
processes (`pids`) and on its memory as a whole (`memory`), for every process of the call together.

The rlimits and the supervisor of `_limits.py` stay in force either way; the control group closes what they leave
open. `RLIMIT_NPROC` does not hold root (the kernel exempts uid 0 of the host, and a sandbox started by root runs as
it), and a fork bomb can outrun the supervisor's count on a loaded machine; `RLIMIT_DATA` bounds each process, not
their sum. With a control group the kernel refuses the fork past `pids.max` and reclaims or OOM-kills within the
call past its memory ceiling, whoever runs it.

Where: a child of BearAgent's own control group, in each hierarchy that has the controller and that BearAgent may
write (cgroup v1: the controller's own hierarchy; cgroup v2: when BearAgent's group already delegates the
controller to children, `cgroup.subtree_control`). Root on a VM or a CI runner usually may; an ordinary user under
systemd usually may not, and then only the rlimits and the supervisor apply (docs/sandbox.md, "Limits"). A
hierarchy that is there but refuses a write (a read-only cgroupfs in a container) is skipped the same way.

How: `prepare()` makes the groups and sets their limits; the call's argv starts with `/bin/sh` writing its own pid
into each group's `cgroup.procs` before it becomes bubblewrap (so nothing of the call ever runs outside them; a
failed write stops the call, exit 126). `remove()` kills what is left and removes the groups once the call is over.
A group left behind by a BearAgent that was killed is removed by the next call that finds it (its pid is in the
name).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "bearagent-"
HEADROOM = 8
"""Tasks beyond `processes` that the group allows: bubblewrap (two processes), the supervisor and the shell, so the
supervisor sees the call pass its own limit (and says so) before the kernel refuses a fork."""
MAX_SWEEP = 64
_counter = itertools.count()
ENTER = 'for f; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; shift; done; shift; exec "$@"'
"""The argv prefix's script: `sh -c ENTER sh PROCS_FILE... -- ARGV...`."""


@dataclass(frozen=True, slots=True)
class _Hierarchy:
    version: int  # 1 or 2
    directory: Path  # BearAgent's own group in it


def _mounts(mountinfo: str) -> list[tuple[int, str, Path, set[str]]]:
    """(version, root inside the hierarchy, mount point, controllers) of each cgroup mount."""
    out: list[tuple[int, str, Path, set[str]]] = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if not sep or len(fields) < 5 or len(after) < 3:
            continue
        point = Path(fields[4].replace("\\040", " "))
        if after[0] == "cgroup2":
            out.append((2, fields[3], point, set()))
        elif after[0] == "cgroup":
            out.append((1, fields[3], point, set(after[2].split(","))))
    return out


def _own_groups(text: str) -> dict[str, str]:
    """Controller (or "" for cgroup v2) → BearAgent's path in its hierarchy, from `/proc/self/cgroup`."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for name in parts[1].split(",") if parts[1] else [""]:
            out[name] = parts[2]
    return out


def _under(point: Path, mount_root: str, path: str) -> Path | None:
    if path != mount_root and not path.startswith(mount_root.rstrip("/") + "/"):
        return None
    rest = path[len(mount_root) :].lstrip("/")
    return point / rest if rest else point


def find_hierarchies(
    controllers: tuple[str, ...], *, mountinfo: str | None = None, own: str | None = None
) -> dict[str, _Hierarchy]:
    """For each controller, BearAgent's group in a hierarchy that has it and that BearAgent may write to."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        own = Path("/proc/self/cgroup").read_text() if own is None else own
    except OSError:
        return {}
    groups = _own_groups(own)
    found: dict[str, _Hierarchy] = {}
    for version, root, point, names in _mounts(mountinfo):
        for controller in controllers:
            if controller in found:
                continue
            if version == 1 and controller in names and controller in groups:
                directory = _under(point, root, groups[controller])
            elif version == 2 and "" in groups:
                directory = _under(point, root, groups[""])
                try:
                    delegated = (directory / "cgroup.subtree_control").read_text().split() if directory else []
                except OSError:
                    delegated = []
                if controller not in delegated:
                    directory = None
            else:
                directory = None
            if directory is not None and directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
                found[controller] = _Hierarchy(version, directory)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_and_remove(group: Path, deadline_s: float = 5.0) -> bool:
    """SIGKILL every process in `group` and remove it; False when it is still there at the deadline."""
    kill = group / "cgroup.kill"
    end = time.monotonic() + deadline_s
    while True:
        with contextlib.suppress(OSError):
            if kill.exists():
                kill.write_text("1")
            else:
                for raw in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError, ValueError):
                        os.kill(int(raw), signal.SIGKILL)
        try:
            group.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > end:
                return False
            time.sleep(0.01)


def _sweep(parent: Path) -> None:
    """Remove the groups of BearAgent processes that are gone (killed before their calls' cleanup)."""
    with contextlib.suppress(OSError):
        for entry in itertools.islice(parent.glob(f"{PREFIX}*"), MAX_SWEEP):
            pid = entry.name[len(PREFIX) :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                _kill_and_remove(entry, deadline_s=0.5)


@dataclass(frozen=True, slots=True)
class CallGroups:
    """The control groups of one call (one per hierarchy used)."""

    groups: tuple[tuple[int, str, Path], ...]
    """(cgroup version, controller, directory)."""

    def argv_prefix(self) -> list[str]:
        files = list(dict.fromkeys(str(d / "cgroup.procs") for _, _, d in self.groups))
        return ["/bin/sh", "-c", ENTER, "sh", *files, "--"]

    def notes(self) -> list[str]:
        """What the kernel stopped in this call, for the call's output (read before `remove`)."""
        out: list[str] = []
        for version, controller, directory in self.groups:
            if controller == "pids":
                events = _read(directory / "pids.events")
                if events and _field(events, "max") > 0:
                    limit = _read(directory / "pids.max").strip()
                    out.append(f"[sandbox] a fork was refused: the call reached its process ceiling ({limit} tasks)")
            elif controller == "memory":
                if version == 2:
                    hit = _field(_read(directory / "memory.events"), "oom_kill") > 0
                else:
                    hit = _field(_read(directory / "memory.oom_control"), "oom_kill") > 0
                if hit:
                    out.append(
                        "[sandbox] a process was killed: the call's processes together reached its memory limit "
                        "(`sandbox.limits.memory` in your user config)"
                    )
        return out

    def has(self, controller: str) -> bool:
        return any(c == controller for _, c, _ in self.groups)

    def remove(self) -> None:
        for _, _, directory in self.groups:
            _kill_and_remove(directory)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value.strip())
    return 0


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


class ProcessLimitUnenforceableError(Exception):
    """`sandbox.limits.processes` is set, BearAgent runs as root and no `pids` group could be made for the call:
    nothing the kernel enforces would hold a fork bomb (it exempts root from `RLIMIT_NPROC`), so the call is not
    run (fail closed); the message names the setting and the fixes."""


def unenforceable_message(processes: int) -> str:
    return (
        f"the command was not run: `sandbox.limits.processes` ({processes}) cannot be enforced here. BearAgent runs "
        "as root, which the kernel exempts from the per-user process limit, and it may not make a control group with "
        "the `pids` controller for the call (none is mounted writable, or BearAgent's group does not delegate "
        "`pids`), so a fork bomb would be held only by a count it can outrun. To fix: run BearAgent as an ordinary "
        "user, or give it a control group whose `pids` controller it may use for children (cgroup v1 `pids`, or "
        "cgroup v2 with `+pids` in its group's `cgroup.subtree_control`), or accept no process limit with "
        "`sandbox: {limits: {processes: off}}` (or `limits: off`) in your user config"
    )


def require_process_ceiling(processes: int | None, groups: CallGroups | None, *, uid: int | None = None) -> None:
    """Raise `ProcessLimitUnenforceableError` when a process limit is set, the call would run as root (`uid`,
    default the real uid: what the kernel's exemption looks at) and `groups` has no `pids` group."""
    uid = os.getuid() if uid is None else uid
    if processes is None or uid != 0 or (groups is not None and groups.has("pids")):
        return
    raise ProcessLimitUnenforceableError(unenforceable_message(processes))


def prepare(processes: int | None, memory: int | None) -> CallGroups | None:
    """Make this call's groups with its limits, or None when no limit is set or no hierarchy may be used."""
    wanted = tuple(c for c, v in (("pids", processes), ("memory", memory)) if v is not None)
    if not wanted:
        return None
    found = find_hierarchies(wanted)
    made: list[tuple[int, str, Path]] = []
    name = f"{PREFIX}{os.getpid()}-{next(_counter)}-{time.monotonic_ns() % 1_000_000}"
    for controller in wanted:
        hierarchy = found.get(controller)
        if hierarchy is None:
            continue
        directory = hierarchy.directory / name
        existing = next((d for _, _, d in made if d == directory), None)
        if existing is None:
            _sweep(hierarchy.directory)
            try:
                directory.mkdir()
            except OSError:
                continue
        ok = True
        if controller == "pids":
            ok = _write(directory / "pids.max", str(int(processes or 0) + HEADROOM))
        elif hierarchy.version == 2:
            ok = _write(directory / "memory.max", str(memory))
            _write(directory / "memory.swap.max", "0")
        else:
            ok = _write(directory / "memory.limit_in_bytes", str(memory))
            _write(directory / "memory.memsw.limit_in_bytes", str(memory))
        if not ok:
            if existing is None:
                _kill_and_remove(directory, deadline_s=0.5)
            continue
        made.append((hierarchy.version, controller, directory))
    return CallGroups(tuple(made)) if made else None

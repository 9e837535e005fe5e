"""The Linux backend: bubblewrap (`bwrap`).

The argv, in mount order (later mounts cover earlier ones):

1. `--new-session --die-with-parent --unshare-all [--share-net] --cap-drop ALL`: own user, PID, network (loopback
   only; `--share-net` only for `network: allow`), IPC, UTS and cgroup namespaces; no controlling terminal (no TIOCSTI injection); every process dies with
   the call (the PID namespace ends when the shell exits; `--die-with-parent` when BearAgent dies, even by
   SIGKILL); and no capabilities: bubblewrap run by root keeps them all unless told, and a shell with
   CAP_SYS_ADMIN can remount a read-only bind writable.
2. `--ro-bind / /`, a fresh `--dev /dev` and `--proc /proc`, private tmpfs on `/tmp` and `/var/tmp` (each writable
   tmpfs sized by the memory limit, `--size`; a hidden directory's by `HIDDEN_TMPFS_BYTES`). With a host
   list (`network: [hosts]`), the host proxy's Unix socket (`bearagent.sandbox.proxy`) and the forwarder script
   (`_forward.py`) are bound into that /tmp, and the command runs under the forwarder (`python3 -I -S`), which
   listens on the sandbox's 127.0.0.1, sets the proxy variables and then becomes the command.
3. with `sandbox.home: hidden` (the default), each home directory as an empty tmpfs and its toolchains
   (`request.HOME_READABLE`) read-only on top; hidden paths that contain the workspace (rare), then the workspace: `--bind` (workspace-write) or `--ro-bind`
   (read-only); in workspace-write, each additional directory (`permissions.additionalDirectories`) is bound
   writable the same way, with its own control files protected as in step 4, and the hidden paths of step 5 stay
   hidden inside it.
4. workspace-write: the control files (`bearagent.tools.protected.SHELL_READ_ONLY`, and git's: the whole git
   directory, nested repositories, submodule paths and what git config names, `bearagent.sandbox.git_paths`)
   read-only. A directory on the
   way to one (`.git` for `.git/config`) is bound onto itself first, which makes it a mount point that cannot be
   renamed away and replaced. A control file that does not exist gets a read-only placeholder (an empty directory
   or `/dev/null`) so the command cannot create it; bubblewrap has to create the mount point on the host, so an
   empty file or directory appears there for the duration of the call and is removed when the call ends (left
   behind only if BearAgent itself is killed mid-call). An empty control file or directory gets a placeholder too:
   it may be another process's placeholder (two workers running Bash in one workspace), gone before this call's
   bubblewrap would bind it. A control file that is a symlink has its target protected;
   the link itself can still be replaced (documented gap).
5. the other hidden paths (empty tmpfs for a directory, `/dev/null` for a file or socket) and every Unix socket of
   the host with a path (`bearagent.sandbox.sockets`), then the readable exceptions inside them.
6. the command runs under `_limits.py` (bound into the private /tmp and run with `python3 -I -S`): Landlock scopes
   (no abstract Unix socket and no process outside the sandbox reachable, where the kernel has them), a seccomp
   filter that refuses to make Unix sockets (`sandbox.unix_sockets: deny`, the default: a host socket bound after
   the call started, in any directory the sandbox shows, is out of reach too), and with
   limits (`sandbox.limits`, on by default) process, data and file-size limits, and a process count of the
   sandbox's PID namespace that stops a fork bomb. Where the host lets BearAgent make control groups, bubblewrap itself starts
   inside the call's own (`cgroups.py`): the kernel's ceiling on the call's processes and on its memory as a whole.
   As root (whom the kernel exempts from `RLIMIT_NPROC`) with a process limit and no `pids` group for the call,
   the call is not started at all (`cgroups.ProcessLimitUnenforceableError`, naming `sandbox.limits.processes`).

When step 5 covers any host socket (and bubblewrap has `--json-status-fd`), the whole argv runs under `_start.py`,
which starts bubblewrap again without a cover whose socket vanished between this plan and bubblewrap's mounts (a
read-only directory gives bubblewrap no mount point for it, and it refused to start).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bearagent.sandbox import cgroups
from bearagent.sandbox.git_paths import git_protected_paths
from bearagent.sandbox.git_plants import Repositories, disarm, snapshot
from bearagent.sandbox.placeholders import PlaceholderLease
from bearagent.sandbox.proxy import SANDBOX_SOCKET, proxy_socket
from bearagent.sandbox.request import PRIVATE_TMP, SandboxRequest
from bearagent.sandbox.sockets import host_sockets
from bearagent.tools.protected import PROTECTED_FILES, SHELL_READ_ONLY

FORWARDER = str(Path(__file__).with_name("_forward.py"))
SANDBOX_FORWARDER = "/tmp/.bearagent-forward.py"
LIMITER = str(Path(__file__).with_name("_limits.py"))
STARTER = str(Path(__file__).with_name("_start.py"))
SANDBOX_LIMITER = "/tmp/.bearagent-limits.py"
_NAMESPACE_ARGS = ("--new-session", "--die-with-parent", "--unshare-all")
_BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
HIDDEN_TMPFS_BYTES = 16 << 20
"""The size of the empty directory over a hidden path (a credential store, `~/.config`): a tool may write a little
there, nobody fills it. The private /tmp, /var/tmp and a hidden home get the call's memory limit each: a tmpfs lives
in memory, and without a size a command could fill the host's memory through one (RLIMIT_DATA does not see it)."""


@functools.cache
def _help(program: str) -> str:
    try:
        done = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + done.stderr


def supports_size(program: str) -> bool:
    """Whether this bubblewrap has `--size` for a tmpfs (0.7.0 and later)."""
    return "--size" in _help(program)


def supports_status(program: str) -> bool:
    """Whether this bubblewrap reports the command's end on `--json-status-fd` (what `_start.py` relies on)."""
    return "--json-status-fd" in _help(program)


def probe_argv(program: str) -> list[str]:
    """The confinement of a real call, without the workspace (the probe's command follows)."""
    return [program, *_NAMESPACE_ARGS, "--cap-drop", "ALL", *_BASE_MOUNTS, "--"]


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _is_file_name(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return rel in PROTECTED_FILES or name == "config" or "." in name[1:]


@dataclass
class _Plan:
    args: list[str] = field(default_factory=lambda: [])
    placeholders: list[tuple[str, bool]] = field(default_factory=lambda: [])  # (path, is_dir), newly created
    bound_dirs: set[str] = field(default_factory=lambda: set())
    ro: set[str] = field(default_factory=lambda: set())
    socket_covers: list[int] = field(default_factory=lambda: [])
    """The index in `args` of the path of each `--ro-bind /dev/null SOCKET` (`_start.py` may drop a vanished one)."""
    tmpfs_bytes: int | None = None
    """The size of each writable tmpfs (None: bubblewrap's default, half the memory)."""

    def tmpfs(self, path: str, *, hidden: bool = False) -> None:
        if self.tmpfs_bytes is not None:
            size = min(HIDDEN_TMPFS_BYTES, self.tmpfs_bytes) if hidden else self.tmpfs_bytes
            self.args += ["--size", str(size)]
        self.args += ["--tmpfs", path]


def _placeholder(plan: _Plan, path: Path, is_dir: bool) -> None:
    key = str(path)
    if key in plan.ro:
        return
    plan.ro.add(key)
    if is_dir:
        plan.args += ["--perms", "0555", "--tmpfs", key, "--remount-ro", key]
    else:
        plan.args += ["--ro-bind", "/dev/null", key]
    if not os.path.lexists(key):  # bubblewrap will create it on the host: the last call to end removes it
        plan.placeholders.append((key, is_dir))


def _empty(path: Path) -> str | None:
    """ "dir" or "file" when `path` is an empty directory or an empty regular file, "gone" when it vanished just now
    (a placeholder removed meanwhile), else None."""
    try:
        if path.is_dir():
            with os.scandir(path) as entries:
                return "dir" if next(entries, None) is None else None
        if path.is_file():
            return "file" if path.stat().st_size == 0 else None
    except FileNotFoundError:
        return "gone"
    except OSError:
        return None
    return None if os.path.lexists(path) else "gone"  # is_dir/is_file say False for a path removed meanwhile


def _protect(plan: _Plan, root: Path, rel: str) -> None:
    parts = [p for p in rel.split("/") if p]
    current = root
    for index, part in enumerate(parts):
        current = current / part
        last = index == len(parts) - 1
        key = str(current)
        if current.is_symlink():
            target = Path(os.path.realpath(current))
            if _inside(target, root) and target.exists() and str(target) not in plan.ro:
                plan.ro.add(str(target))
                plan.args += ["--ro-bind", str(target), str(target)]
            return
        if not current.exists():
            _placeholder(plan, current, not last or not _is_file_name(rel))
            return
        empty = _empty(current)
        if empty is not None:
            # perhaps another process's placeholder, which it removes when its call ends: binding the host path
            # would then fail ("Can't get type of source"), so protect it with a placeholder of our own (the
            # command sees the same thing: an empty, read-only file or directory)
            _placeholder(plan, current, empty == "dir" or (empty == "gone" and (not last or not _is_file_name(rel))))
            return
        if last or not current.is_dir():
            if key not in plan.ro:
                plan.ro.add(key)
                plan.args += ["--ro-bind", key, key]
            return
        if key not in plan.bound_dirs:  # a mount point cannot be renamed away and replaced
            plan.bound_dirs.add(key)
            plan.args += ["--bind", key, key]


def _hide(plan: _Plan, path: Path, root: Path, *, home: bool = False) -> None:
    if not _inside(path, root) and any(_inside(path, Path(t)) for t in PRIVATE_TMP):
        return  # already invisible: the sandbox has its own /tmp
    try:
        if path.is_dir() and not path.is_symlink():
            real = os.path.realpath(path)  # `/var/run/x` is `/run/x`: bubblewrap cannot mount through a symlink
            if real not in plan.ro:
                plan.ro.add(real)
                plan.tmpfs(real, hidden=not home)
        elif os.path.lexists(path):
            target = Path(os.path.realpath(path))
            try:
                mode = os.stat(target).st_mode
            except OSError:
                mode = 0  # gone just now, or a dangling link: covered as a file
            if stat.S_ISDIR(mode):
                plan.tmpfs(str(target), hidden=not home)
            else:
                plan.args += ["--ro-bind", "/dev/null", str(target if path.is_symlink() else path)]
                if stat.S_ISSOCK(mode):
                    plan.socket_covers.append(len(plan.args) - 1)
    except OSError:
        return


@dataclass(frozen=True, slots=True)
class PreparedCommand:
    """The argv to spawn, the variables the sandbox sets on top of the call's environment, and `finish()` to call
    once the command is over (removes this call's placeholders)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    placeholders: tuple[tuple[str, bool], ...] = ()
    lease: PlaceholderLease | None = None
    """Held while the call may rely on placeholders (workspace-write): `placeholders.py`."""
    groups: cgroups.CallGroups | None = None
    """The call's control groups (`cgroups.py`), when the host lets BearAgent make them."""
    repositories: tuple[Repositories, ...] = ()
    """The repositories below each writable tree as the call started (workspace-write): `git_plants.py`."""

    def notes(self) -> list[str]:
        """What the kernel's ceilings stopped in this call (read once the command is over, before `finish`)."""
        return self.groups.notes() if self.groups is not None else []

    def finish(self) -> list[str]:
        """The call is over: its control groups go, a repository the call created or changed that git would run
        code of is disarmed (`git_plants.disarm`), its lease ends, and the placeholders go once no call of any
        process relies on them. Returns the notes on disarmed repositories, for the call's result."""
        notes: list[str] = []
        try:
            if self.groups is not None:
                self.groups.remove()
            for before in self.repositories:
                notes += disarm(before)
        finally:
            if self.lease is not None:
                self.lease.release(_remove_placeholder)
        return notes


def _remove_placeholder(key: str, is_dir: bool) -> None:
    """Remove a mount point bubblewrap left on the host, but only while it is still the empty thing it made."""
    with contextlib.suppress(OSError):
        st = os.lstat(key)
        if is_dir and Path(key).is_dir() and not any(Path(key).iterdir()):
            os.rmdir(key)
        elif not is_dir and os.path.isfile(key) and st.st_size == 0:
            os.unlink(key)


class BwrapBackend:
    """The `SandboxBackend` for Linux."""

    name = "bubblewrap"

    def __init__(self, program: str) -> None:
        self.program = program

    def prepare(
        self, argv: Sequence[str], request: SandboxRequest, root: Path, *, cwd: Path | None = None
    ) -> PreparedCommand:
        """`cwd`: where the command starts inside the sandbox (default: the workspace root)."""
        root = Path(os.path.realpath(root))
        plan = _Plan(args=[self.program, *_NAMESPACE_ARGS])
        if request.limits[1] is not None and supports_size(self.program):
            plan.tmpfs_bytes = request.limits[1]
        if request.network == "allow":
            plan.args.append("--share-net")
        plan.args += ["--cap-drop", "ALL", *_BASE_MOUNTS[:-2]]
        plan.tmpfs("/tmp")
        python = os.path.realpath(sys.executable)
        # always, limits or not: the Landlock scopes and the Unix socket filter (`_limits.py`)
        plan.args += ["--ro-bind", LIMITER, SANDBOX_LIMITER]
        limits = ["-" if limit is None else str(limit) for limit in request.limits]
        argv = [python, "-I", "-S", SANDBOX_LIMITER, *limits, request.unix_sockets, "--", *argv]
        if isinstance(request.network, tuple):  # outside the limiter: it must reach the proxy's Unix socket
            socket_path = proxy_socket(request.network)
            plan.args += ["--bind", socket_path, SANDBOX_SOCKET, "--ro-bind", FORWARDER, SANDBOX_FORWARDER]
            argv = [python, "-I", "-S", SANDBOX_FORWARDER, SANDBOX_SOCKET, "--", *argv]
        if Path("/var/tmp").is_dir() and not _inside(root, Path("/var/tmp")):
            plan.tmpfs("/var/tmp")
        for home in request.hidden_homes:  # first: the workspace and what stays readable are bound on top
            if Path(home) != root:
                _hide(plan, Path(home), root, home=True)
        for raw in request.home_readable:
            if Path(raw).is_dir() and not _inside(root, Path(raw)):
                plan.args += ["--ro-bind", raw, raw]
        hidden = [Path(p) for p in request.hidden]
        around = [h for h in hidden if _inside(root, h) and h != root]
        for path in around:
            _hide(plan, path, root)
        plan.args += ["--bind" if request.mode == "workspace-write" else "--ro-bind", str(root), str(root)]
        extra = [Path(os.path.realpath(d)) for d in request.writable] if request.mode == "workspace-write" else []
        extra = [d for d in dict.fromkeys(extra) if d.is_dir() and not _inside(d, root)]
        for directory in extra:
            plan.args += ["--bind", str(directory), str(directory)]
        # from before the mounts are planned until the call ends: no other call's cleanup removes a placeholder
        # this one binds or relies on
        lease = PlaceholderLease.take(root) if request.mode == "workspace-write" else None
        repositories: list[Repositories] = []
        try:
            if request.mode == "workspace-write":
                repositories = [snapshot(base) for base in (root, *extra)]
                for base in (root, *extra):
                    for rel in (
                        *SHELL_READ_ONLY,
                        *git_protected_paths(base, os.environ, writable_git=request.git_writable),
                    ):
                        _protect(plan, base, rel)
            for path in [*hidden, *(Path(p) for p in host_sockets())]:
                if path not in around and path != root:
                    _hide(plan, path, root)
            for raw in request.readable:
                path = Path(raw)
                if path.exists() and any(_inside(path, h) for h in [*hidden, *map(Path, request.hidden_homes)]):
                    plan.args += ["--ro-bind", raw, raw]
        except BaseException:
            PreparedCommand((), {}, tuple(plan.placeholders), lease).finish()
            raise
        plan.args += ["--chdir", str(Path(os.path.realpath(cwd)) if cwd is not None else root), "--", *argv]
        env = {"TMPDIR": "/tmp", "BEARAGENT_SANDBOX": request.mode}
        if lease is not None:
            lease.register(plan.placeholders)
        groups = cgroups.prepare(request.limits[0], request.limits[1])
        try:
            cgroups.require_process_ceiling(request.limits[0], groups)
        except cgroups.ProcessLimitUnenforceableError:
            PreparedCommand((), {}, tuple(plan.placeholders), lease, groups).finish()
            raise
        prefix = groups.argv_prefix() if groups is not None else []
        full = [*prefix, *plan.args]
        if plan.socket_covers and supports_status(self.program):
            # started again if a socket it covers vanishes before its mounts are made: `_start.py`, which reads
            # bubblewrap's report on fd 3 (did the command start at all?)
            full[len(prefix) + 1 : len(prefix) + 1] = ["--json-status-fd", "3"]
            covers = [str(index + len(prefix) + 2) for index in plan.socket_covers]
            full = [python, "-I", "-S", STARTER, str(os.getpid()), *covers, "--", *full]
        return PreparedCommand(tuple(full), env, tuple(plan.placeholders), lease, groups, tuple(repositories))

"""Start bubblewrap, and start it again when its set-up failed only because a host socket it was to cover had just
vanished. A standalone script: run as `python -I -S _start.py PARENT_PID INDEX... -- ARGV...`, where ARGV is the
whole command (the control-group prefix of `cgroups.py`, then bubblewrap with `--json-status-fd 3`) and each INDEX
points at the last word of one socket cover in ARGV (`--ro-bind /dev/null SOCKET`); it imports nothing of BearAgent.

Why: the covers of `sockets.py` are planned from the sockets `/proc/net/unix` lists, and bubblewrap mounts
`/dev/null` over each a moment later. A socket removed in between, with its directory, on a read-only part of the
host leaves bubblewrap no mount point, and it cannot make one there: it exits 1 before the command starts
(`bwrap: Can't mkdir parents for …/db.sock: Read-only file system`). A daemon that restarts does that; under load,
so did another test's socket. Without this the call failed, confined or not.

A set-up failure is told apart from the command's own failure (which must never start the command twice) by three
things, all required:

- bubblewrap's own stderr goes to a pipe read here, and the command's is the real one: it is passed as fd 4 and
  `_limits.py` puts it back on fd 2 (named by `STDERR_VARIABLE`) before the command starts, so nothing the command
  writes reaches the pipe;
- bubblewrap reports the command's end on its `--json-status-fd` (fd 3) as `"exit-code"`; a start without it never
  reached the command;
- bubblewrap's last words name one of the socket covers: `Can't mkdir parents for SOCKET` or `Can't create file
  at SOCKET` (no mount point), or `Can't bind mount /oldroot/dev/null on /newrootSOCKET` (gone just before the
  mount).

Then that cover is dropped if the socket is gone (there is nothing left to cover; a socket bound there later is
like one bound during the call: out of reach under `sandbox.unix_sockets: deny`, the default), and bubblewrap starts again, at most `MAX_STARTS` times in all. Otherwise
what bubblewrap wrote goes to the real stderr and its status is this script's: its exit code, or the same signal.

When BearAgent dies (its process, not the thread that started this one), this script kills bubblewrap and exits;
bubblewrap takes the sandbox with it (`--die-with-parent`), as it does when this script is killed. It imports only
modules built into the interpreter (`_signal`, not `signal`, which builds enums: ~9 ms of every sandboxed call).
"""

from __future__ import annotations

import fcntl
import os
import select
import sys

TYPE_CHECKING = False  # not `typing`'s: importing it would cost more than `signal`
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal  # the same functions and numbers, without the enums

MAX_STARTS = 3
STATUS_FD = 3
STDERR_FD = 4
STDERR_VARIABLE = "BEARAGENT_SANDBOX_STDERR_FD"
KEEP_BYTES = 65_536
"""What is kept of bubblewrap's own stderr (its set-up messages are one line)."""
REFUSALS = (
    "bwrap: Can't mkdir parents for ",
    "bwrap: Can't create file at ",
    "bwrap: Can't bind mount /oldroot/dev/null on /newroot",
)
"""bubblewrap's words before the path of a mount point it could not make, or that went just before the mount."""


def vanished_cover(stderr: str, covers: set[str]) -> str | None:
    """The socket cover bubblewrap's set-up stopped at, when its last line names one (else None)."""
    lines = stderr.rstrip("\n").splitlines()
    last = lines[-1] if lines else ""
    for prefix in REFUSALS:
        if last.startswith(prefix):
            rest = last[len(prefix) :]
            return next((c for c in covers if rest.startswith(c + ":")), None)
    return None


def drop_cover(argv: list[str], covers: list[int], path: str) -> tuple[list[str], list[int]]:
    """`argv` without the covers of `path` (`--ro-bind /dev/null PATH` at the given indices), and the indices of the
    covers left."""
    gone = {i for i in covers if argv[i] == path}
    out: list[str] = []
    left: list[int] = []
    skip = {j for i in gone for j in (i - 2, i - 1, i)}
    for index, word in enumerate(argv):
        if index in skip:
            continue
        if index in covers and index not in gone:
            left.append(len(out))
        out.append(word)
    return out, left


def _read_all(fd: int, keep: int, parent: int | None = None, child: int = 0) -> bytes:
    """What `fd` yields until its end (the first `keep` bytes). `parent`: a pidfd of BearAgent; should it end first,
    `child` is killed and this script exits."""
    data = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if parent is not None:
        poller.register(parent, select.POLLIN)
    while True:
        try:
            ready = [ready_fd for ready_fd, _ in poller.poll()]
            if parent in ready:
                os.kill(child, signal.SIGKILL)
                os._exit(137)
            chunk = os.read(fd, 65_536)
        except InterruptedError:
            continue
        if not chunk:
            return bytes(data)
        if len(data) < keep:
            data += chunk[: keep - len(data)]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except InterruptedError:
            continue
        except OSError:
            return  # nobody reads our stderr any more


def _start(argv: list[str], parent: int | None) -> tuple[int, bytes, bytes]:
    """Run `argv` once: its wait status, what it wrote on fd 2, what bubblewrap reported on fd 3."""
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        real_stderr = fcntl.fcntl(2, fcntl.F_DUPFD_CLOEXEC, 10)  # above 4, so the moves below do not overwrite it
    except OSError:  # started with no stderr
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        real_stderr = fcntl.fcntl(null, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(null)
    env = dict(os.environ)
    env[STDERR_VARIABLE] = str(STDERR_FD)
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            env,
            # each source is used before a later move could overwrite it: err_w first, status_w second (only the
            # third move writes fd 4), real_stderr is above 9
            file_actions=[
                (os.POSIX_SPAWN_DUP2, err_w, 2),
                (os.POSIX_SPAWN_DUP2, status_w, STATUS_FD),
                (os.POSIX_SPAWN_DUP2, real_stderr, STDERR_FD),
            ],
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT),
        )
    finally:
        for fd in (err_w, status_w, real_stderr):
            os.close(fd)
    try:
        stderr = _read_all(err_r, KEEP_BYTES, parent, pid)  # its end: bubblewrap and its sandbox are gone
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        return status, stderr, _read_all(status_r, KEEP_BYTES)
    finally:
        os.close(err_r)
        os.close(status_r)


def main() -> int:
    parent = int(sys.argv[1])
    separator = sys.argv.index("--", 2)
    covers = [int(i) for i in sys.argv[2:separator]]
    argv = sys.argv[separator + 1 :]
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    watch: int | None = None
    try:
        watch = os.pidfd_open(parent)  # Linux 5.3+
    except ProcessLookupError:
        return 137  # BearAgent is gone already
    except OSError:  # an older kernel: die with the thread that started this script, as bubblewrap does
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        return 137  # BearAgent died before it was watched
    for start in range(1, MAX_STARTS + 1):
        status, stderr, report = _start(argv, watch)
        failed = os.WIFEXITED(status) and os.waitstatus_to_exitcode(status) != 0 and b'"exit-code"' not in report
        cover = vanished_cover(stderr.decode("utf-8", "replace"), {argv[i] for i in covers}) if failed else None
        if cover is None or start == MAX_STARTS:
            _write_all(2, stderr)
            if os.WIFSIGNALED(status):
                signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
                os.kill(os.getpid(), os.WTERMSIG(status))
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
        if not os.path.lexists(cover):
            argv, covers = drop_cover(argv, covers, cover)
    return 1  # not reached: the last start returns above


if __name__ == "__main__":
    sys.exit(main())

"""Run a command inside the sandbox under per-call limits and Landlock scopes (run as
`python3 -I -S _limits.py PROCS DATA FSIZE UNIX -- argv`; each limit a number or `-` for none, UNIX `deny` or
`allow`; standard library only, nothing of BearAgent imported).

- `UNIX=deny` (`sandbox.unix_sockets`, the default): a seccomp filter refuses `socket(AF_UNIX, ...)` (and io_uring,
  which could make one past the filter) with `EPERM` for the command and everything it starts. A Unix socket of the
  host that has a path is reachable through any directory the sandbox shows, including one bound after the call
  started (the mounts are live views of the host's directories), and the covers of `sockets.py` only know the ones
  bound before; a process that cannot make a Unix socket reaches none of them, nor an abstract one. `socketpair`
  stays allowed (a connected pair reaches nothing). On an architecture the filter does not know, the command is not
  run (exit 126, naming the setting).

- Landlock scopes (Linux 6.12+, Landlock ABI 6): the command and everything it starts cannot connect to an abstract
  Unix socket (one with no path) made outside the sandbox, nor signal a process outside it. Abstract sockets are per
  network namespace, so this matters with `network: allow`, where the sandbox shares the host's (X11's, a session
  bus's, an IDE's or an agent's abstract socket). On an older kernel the command runs without the scopes (the
  documented gap).

- `DATA` and `FSIZE`: `RLIMIT_DATA` (a process's heap and private writable mappings: an allocation beyond it fails,
  so a memory hog gets `MemoryError` / `Cannot allocate memory`) and `RLIMIT_FSIZE` (a write beyond it fails), set
  for the command and everything it starts.
- `PROCS`: this supervisor counts the processes of the sandbox's own PID namespace (`/proc` inside shows only
  them) every few milliseconds: past the limit, it kills them all (a fork bomb ends) and says so on stderr. The
  call's exit status is then 137. `RLIMIT_NPROC` is the backstop the count can be outrun without, set above the
  limit (`nproc_backstop`): it counts every process of the user on the machine, so set at the limit itself it held
  a bomb just below it, forks failing forever and the count never passing the limit (the command was never
  stopped); the kernel does not apply it to root in the sandbox's user namespace.

Otherwise the exit status is the command's (128 + the signal when a signal ended it).

Started by `_start.py` (a call that covers host sockets), it first puts the call's real stderr back on fd 2
(`STDERR_VARIABLE`): until then fd 2 is a pipe that only bubblewrap writes on.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import struct
import sys
import time

TYPE_CHECKING = False  # not `typing`'s: importing it costs more than what it saves here
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal  # the same functions and numbers without the enums of `signal` (~9 ms a call)

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
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AF_UNIX = 1
EPERM = 1
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | EPERM
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
# native architecture → (AUDIT_ARCH, socket, io_uring_setup, io_uring_enter, io_uring_register, X32 bit or 0)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 425, 426, 427, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, 426, 427, 0),
}
_I386 = (0x40000003, 359, 102)  # the compat ABI on x86_64: socket, socketcall (whose SYS_SOCKET is 1)


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def unix_socket_filter(machine: str) -> bytes | None:
    """The classic BPF program that refuses `socket(AF_UNIX, ...)` and io_uring with EPERM on `machine`'s native
    ABI (and, on x86_64, on the x32 and i386 ones); None for an architecture it does not know."""
    known = _ARCHES.get(machine)
    if known is None:
        return None
    arch, socket_nr, uring_setup, uring_enter, uring_register, x32 = known
    deny, allow = _insn(_RET_K, 0, 0, _RET_EPERM), _insn(_RET_K, 0, 0, _RET_ALLOW)
    native = [
        _insn(_LD_W_ABS, 0, 0, 0),  # nr
        *([_insn(_JGE_K, 0, 1, x32), deny] if x32 else []),  # the x32 ABI: refused whole
        _insn(_JEQ_K, 0, 3, socket_nr),
        _insn(_LD_W_ABS, 0, 0, 16),  # args[0], the family (an int: the low 32 bits)
        _insn(_JEQ_K, 0, 5, AF_UNIX),
        deny,
        _insn(_JEQ_K, 2, 0, uring_setup),
        _insn(_JEQ_K, 1, 0, uring_enter),
        _insn(_JEQ_K, 0, 1, uring_register),
        deny,
        allow,
    ]
    compat: list[bytes] = []
    if machine == "x86_64":
        i386, socket32, socketcall = _I386
        compat = [
            _insn(_JEQ_K, 0, 11, i386),  # neither native nor i386: allowed (the kernel refuses it anyway)
            _insn(_LD_W_ABS, 0, 0, 0),
            _insn(_JEQ_K, 0, 2, socket32),
            _insn(_LD_W_ABS, 0, 0, 16),
            _insn(_JEQ_K, 6, 7, AF_UNIX),
            _insn(_JEQ_K, 0, 2, socketcall),
            _insn(_LD_W_ABS, 0, 0, 16),  # socketcall's call number; its arguments are behind a pointer
            _insn(_JEQ_K, 3, 4, 1),  # SYS_SOCKET, whatever the family
            _insn(_JEQ_K, 2, 0, uring_setup),  # the same numbers on i386
            _insn(_JEQ_K, 1, 0, uring_enter),
            _insn(_JEQ_K, 0, 1, uring_register),
            deny,
        ]
    head = [_insn(_LD_W_ABS, 0, 0, 4), _insn(_JEQ_K, 0, len(native), arch)]
    return b"".join([*head, *native, *compat, allow])


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _deny_unix_sockets() -> bool:
    """Install the filter of `unix_socket_filter` on this process (inherited by what it starts); False when it
    could not be."""
    program = unix_socket_filter(os.uname().machine)  # what `platform.machine()` says, without its ~12 ms import
    if program is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0
    except (OSError, AttributeError):
        return False


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


def nproc_backstop(procs: str) -> str:
    """`RLIMIT_NPROC` for a call limited to `procs` processes: half as many again plus 64, for the user's own
    processes outside the sandbox that the kernel counts too (so the supervisor's count passes the limit first)."""
    return procs if procs == "-" else str(int(procs) + int(procs) // 2 + 64)


def _count() -> int:
    try:
        return sum(1 for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return 0


STDERR_VARIABLE = "BEARAGENT_SANDBOX_STDERR_FD"
"""Set by `_start.py`: the fd of the call's real stderr (bubblewrap's own fd 2 is a pipe `_start.py` reads, to tell
a failed set-up from the command's failure), put back on fd 2 here, before anything of the command runs."""


def _restore_stderr() -> None:
    fd = os.environ.pop(STDERR_VARIABLE, None)
    if fd is not None and fd.isdigit():
        os.dup2(int(fd), 2)
        os.close(int(fd))


def main(argv: list[str]) -> int:
    _restore_stderr()
    procs, data, fsize, unix, sep, *command = argv
    if sep != "--" or not command or unix not in ("deny", "allow"):
        sys.stderr.write("usage: _limits.py PROCS DATA FSIZE deny|allow -- command...\n")
        return 2
    pid = os.fork()
    if pid == 0:
        try:
            _scope()
            if unix == "deny" and not _deny_unix_sockets():
                sys.stderr.write(
                    "[sandbox] the command was not run: Unix sockets could not be refused inside the sandbox on this "
                    "machine (a seccomp filter for its architecture). To fix: set `sandbox: {unix_sockets: allow}` "
                    "in your user config (the host's sockets bound before each call stay covered)\n"
                )
                os._exit(126)
            _limit(resource.RLIMIT_DATA, data)
            _limit(resource.RLIMIT_FSIZE, fsize)
            _limit(resource.RLIMIT_NPROC, nproc_backstop(procs))
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"{command[0]}: {exc.strerror or exc}\n")
            os._exit(127)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(pid, signum))
    cap = int(procs) if procs != "-" else None
    try:
        ended = os.pidfd_open(pid)  # readable once the command has exited: no poll interval to wait out
    except OSError:
        ended = None
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
        if ended is not None:
            select.select([ended], [], [], POLL_SECONDS)
        else:
            time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Inside the sandbox with `network: [hosts]`: the way to the proxy, then the command.

Run as `python3 -I -S _forward.py SOCKET -- ARGV...` (standard library only, no site). It listens on a free port of
the sandbox's own 127.0.0.1 *before* the command starts, forks a forwarder that relays each TCP connection to the
host proxy's Unix socket SOCKET (`bearagent.sandbox.proxy`), and then becomes the command (`exec`) with
`HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` (and the lower-case names) set to `http://127.0.0.1:<port>` and `NO_PROXY`
empty. It is started before `_limits.py`, which
it execs into (the command may not make Unix sockets, the forwarder must), and makes itself untraceable. The command stays the sandbox's main process: when it exits the PID namespace ends, and the forwarder with
it.
"""

import contextlib
import os
import socket
import sys
import threading

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _relay(conn: socket.socket, path: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_pipe, args=(up, conn), daemon=True)
    back.start()
    _pipe(conn, up)
    back.join()
    conn.close()
    up.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def _not_traceable() -> None:
    """The forwarder runs outside `_limits.py` (it must make a Unix socket to reach the proxy, which the command may
    not: `sandbox.unix_sockets`), so the command must not be able to take it over: not dumpable, it cannot be traced
    or have its memory written by a process without capabilities (and Landlock refuses the trace too, where the
    kernel has it)."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        os._exit(1)


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.stderr.write("usage: _forward.py SOCKET -- ARGV...\n")
        sys.exit(2)
    path, argv = sys.argv[1], sys.argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    if os.fork() == 0:
        _not_traceable()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # the call's pipes close when the command ends, not when the forwarder does
        os.closerange(3, listener.fileno())  # and so does the call's stderr, passed on above them (`_start.py`)
        os.closerange(listener.fileno() + 1, 1 << 16)
        try:
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    env = dict(os.environ)
    for name in PROXY_VARS:
        env[name] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        sys.stderr.write(f"bearagent sandbox: cannot run {argv[0]}: {exc}\n")
        sys.exit(127)


if __name__ == "__main__":
    main()

"""The host's Unix sockets that have a path, so the sandbox can cover each (`/dev/null` over it).

A socket on a read-only mount still accepts connections, so a readable socket is a way out of the sandbox: a
database's (PostgreSQL's `/var/run/postgresql/.s.PGSQL.5432`, a BearAgent PostgreSQL store's socket directory), an
agent's (ssh-agent, gpg-agent), a container engine's, the session bus, X11. Rather than a list of known places, the
sandbox covers every socket with a path the kernel lists in `/proc/net/unix` (bound by any process of this network
namespace; listening or not) plus the well-known places of `request.HIDDEN_SOCKETS` (sockets of other namespaces
cannot be listed). Abstract sockets (no path) are per network namespace, and the sandbox has its own unless
`network: allow`; then the Landlock scope of `_limits.py` refuses the host's (Linux 6.12+). At most `MAX_SOCKETS`
are covered (the first ones listed).
"""

from __future__ import annotations

import contextlib
import os
import stat

MAX_SOCKETS = 2000
PROC_NET_UNIX = "/proc/net/unix"


def host_sockets(table: str = PROC_NET_UNIX) -> list[str]:
    """The paths of the Unix sockets listed in `table` that still exist as sockets."""
    out: list[str] = []
    try:
        with open(table, encoding="utf-8", errors="replace") as handle:
            next(handle, None)  # header
            for line in handle:
                fields = line.rstrip("\n").split(None, 7)
                if len(fields) < 8 or not fields[7].startswith("/"):
                    continue
                path = fields[7]
                with contextlib.suppress(OSError):
                    if stat.S_ISSOCK(os.lstat(path).st_mode) and path not in out:
                        out.append(path)
                if len(out) >= MAX_SOCKETS:
                    break
    except OSError:
        return out
    return out

"""A PgBouncer in transaction mode in front of a test cluster (`transaction_pooler`): each transaction of a client
connection may run on any of the pooler's few server connections, as behind a production PgBouncer with
`pool_mode = transaction`. Debian's `pgbouncer` package; a test that needs it and does not find it skips with that
reason (`unavailable`). As root it runs as the cluster's user (PgBouncer refuses to run as root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.support.postgres_cluster import SUPERUSER, Cluster, free_port


def binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )


def unavailable() -> str | None:
    """Why no PgBouncer can be started here (None: it can)."""
    if binary() is None:
        return "PgBouncer not found: install Debian's `pgbouncer` package (scripts/ci-extras.sh does)"
    return None


@dataclass(frozen=True)
class Pooler:
    dsn: str
    """`dbname` of the cluster through the pooler."""
    pid: int
    """The PgBouncer process (its CPU time is part of what a pooled store costs)."""


@contextlib.contextmanager
def transaction_pooler(cluster: Cluster, dbname: str, *, pool_size: int) -> Generator[Pooler]:
    """A new PgBouncer in front of `dbname` (transaction mode, at most `pool_size` server connections to the
    cluster), stopped when the block ends."""
    pgbouncer = binary()
    assert pgbouncer is not None, unavailable()
    root = Path(tempfile.mkdtemp(prefix="bearagent-pgbouncer-"))
    port = free_port()
    (root / "users.txt").write_text(f'"{SUPERUSER}" ""\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={cluster.socket_dir} port={cluster.port}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {root / 'users.txt'}\n"
        f"pool_mode = transaction\ndefault_pool_size = {pool_size}\nmax_client_conn = 1000\n"
        f"logfile = {root / 'pgbouncer.log'}\n"
    )
    command = [pgbouncer, str(root / "pgbouncer.ini")]
    if cluster.user is not None:
        entry = pwd.getpwnam(cluster.user)
        os.chmod(root, 0o755)
        for path in (root, *root.iterdir()):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        command = [pgbouncer, "-u", cluster.user, str(root / "pgbouncer.ini")]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dsn = f"host=127.0.0.1 port={port} user={SUPERUSER} dbname={dbname}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (
                        (root / "pgbouncer.log").read_text(errors="replace")
                        if (root / "pgbouncer.log").exists()
                        else ""
                    )
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    raise RuntimeError(f"PgBouncer did not start (exit {proc.poll()}): {err}\n{log}") from None
                time.sleep(0.1)
        yield Pooler(dsn, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(root, ignore_errors=True)


def server_connections(cluster: Cluster, dbname: str) -> int:
    """The cluster's client backends connected to `dbname` now (PgBouncer's server connections, when only it
    connects there)."""
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = %s", (dbname,)
        ).fetchone()
    return int(row[0]) if row else 0

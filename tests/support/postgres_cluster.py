"""A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, `pg_ctl start` on a free port
of 127.0.0.1 with its unix socket in that directory, one cluster per test session (started on first use, stopped at
the session's end by the `postgres_cluster_teardown` fixture of `tests/conftest.py`, or at exit), a fresh database
per test (`new_database`).

The server binaries come from `pg_ctl`/`initdb` on PATH, else the newest `/usr/lib/postgresql/*/bin` (where Debian's
`postgresql` package puts them). PostgreSQL refuses to run as root: as root the cluster runs as the `postgres` OS
user (which the Debian package creates), else as `nobody`; its directory lives under the system temp directory,
where that user can reach it. Without the binaries `unavailable()` names the package to install, and the postgres
tests skip with that reason (`require`), except in CI, which installs it (`scripts/ci-extras.sh`) and where they
fail instead.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

SUPERUSER = "bearagent_test"
_REQUIRED = ("initdb", "pg_ctl", "postgres")


def find_bin_dir() -> Path | None:
    """The directory of the PostgreSQL server binaries, or None."""
    on_path = shutil.which("pg_ctl")
    candidates: list[Path] = []
    if on_path is not None:
        candidates.append(Path(on_path).resolve().parent)
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)]
    for candidate in candidates:
        if all((candidate / name).is_file() for name in _REQUIRED):
            return candidate
    return None


def _version_key(path: str) -> tuple[int, ...]:
    version = Path(path).parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _run_as() -> str | None:
    """The OS user the server runs as when we are root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    bin_dir: Path
    root: Path
    port: int
    user: str | None

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={dbname}"

    def tcp_dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname}"

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", self.user, "--", *args] if self.user is not None else list(args)

    @classmethod
    def start(cls, bin_dir: Path, *, max_connections: int = 200) -> Cluster:
        _reap_stale(bin_dir)
        root = Path(tempfile.mkdtemp(prefix=_PREFIX))
        (root / "owner.pid").write_text(str(os.getpid()))
        user = _run_as()
        (root / "sock").mkdir()
        os.chmod(root, 0o755)
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (root, root / "sock"):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        cluster = cls(bin_dir, root, 0, user)
        initdb = cluster._command(
            str(bin_dir / "initdb"),
            "-D",
            str(cluster.data_dir),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        subprocess.run(initdb, check=True, capture_output=True, text=True, cwd=root)
        last: subprocess.CalledProcessError | None = None
        for _attempt in range(3):  # another process may take the free port before the server binds it
            cluster.port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {cluster.port} -k {cluster.socket_dir}"
                " -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
                f" -c max_connections={max_connections}"
            )
            start = cluster._command(
                str(bin_dir / "pg_ctl"), "-D", str(cluster.data_dir), "-l", str(root / "server.log"), "-o", options
            )
            try:
                subprocess.run(
                    [*start, "-w", "-t", "60", "start"], check=True, capture_output=True, text=True, cwd=root
                )
                return cluster
            except subprocess.CalledProcessError as exc:
                last = exc
        shutil.rmtree(root, ignore_errors=True)
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {last.stderr if last else ''}\n{log}")

    def stop(self) -> None:
        stop = self._command(str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        subprocess.run(stop, capture_output=True, text=True, cwd=self.root, check=False)
        shutil.rmtree(self.root, ignore_errors=True)


_PREFIX = "bearagent-pg-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_stale(bin_dir: Path) -> None:
    """Stop the clusters of test sessions that died without stopping theirs (killed by a timeout): each cluster
    directory names the process that started it; a live owner's cluster is left alone."""
    for owner in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*/owner.pid"):
        try:
            pid = int(owner.read_text().strip())
        except (OSError, ValueError):
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        root = owner.parent
        user = _run_as() if (root / "data").exists() else None
        Cluster(bin_dir, root, 0, user).stop()


_lock = threading.Lock()
_cluster: Cluster | None = None
_databases = 0


def unavailable() -> str | None:
    """Why the postgres tests cannot run here, or None."""
    if find_bin_dir() is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's `postgresql` package "
            "(apt-get install postgresql; scripts/ci-extras.sh does in CI)"
        )
    return None


def require() -> None:
    """Skip the calling test where PostgreSQL is not installed; in CI (`CI=true`) fail instead: there the postgres
    tests must run (`scripts/ci-extras.sh` installs the server)."""
    import pytest

    reason = unavailable()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; CI must run the postgres tests")
    pytest.skip(reason)


def cluster() -> Cluster:
    """The test session's cluster, started on first use."""
    global _cluster
    with _lock:
        if _cluster is None:
            bin_dir = find_bin_dir()
            if bin_dir is None:
                raise RuntimeError(unavailable())
            _cluster = Cluster.start(bin_dir)
            atexit.register(stop_cluster)
        return _cluster


def stop_cluster() -> None:
    global _cluster
    with _lock:
        if _cluster is not None:
            _cluster.stop()
            _cluster = None


def new_database() -> str:
    """The DSN of a new, empty database in the session's cluster."""
    global _databases
    running = cluster()
    with _lock:
        _databases += 1
        name = f"t{os.getpid()}_{_databases}"
    with psycopg.connect(running.dsn(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 STRATEGY FILE_COPY").format(sql.Identifier(name)))
    return running.dsn(name)


@contextlib.contextmanager
def own_cluster(*, max_connections: int) -> Generator[Cluster]:
    """A cluster of the calling test alone (started with `max_connections`), stopped when the test ends."""
    require()
    bin_dir = find_bin_dir()
    assert bin_dir is not None
    running = Cluster.start(bin_dir, max_connections=max_connections)
    try:
        yield running
    finally:
        running.stop()


def database_in(running: Cluster, name: str) -> str:
    """The DSN of a new, empty database `name` in `running`."""
    with psycopg.connect(running.dsn(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 STRATEGY FILE_COPY").format(sql.Identifier(name)))
    return running.dsn(name)


def started() -> bool:
    return _cluster is not None


def other_connections(dsn: str) -> int:
    """Client connections to the DSN's database other than the one asking (what a store left open)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def connections_left_open(dsn: str, *, settle_s: float = 15.0) -> int:
    """`other_connections` once the connections a client has closed are gone from the server: PostgreSQL ends a
    backend after its client's goodbye arrives, on its own time, so a connection closed a moment ago can still be
    listed (seen under load: one listed right after a store's `close()` had returned, its loop thread gone). A
    connection left open never goes away, so it is still counted after `settle_s`; a count of 0 returns at once."""
    deadline = time.monotonic() + settle_s
    while True:
        count = other_connections(dsn)
        if count == 0 or time.monotonic() >= deadline:
            return count
        time.sleep(0.05)

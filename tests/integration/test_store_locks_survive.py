"""Opening a second store on a database must not drop the SQLite locks this process already holds on it.

POSIX record locks belong to the process: closing *any* descriptor of the file releases all of them. A server keeps
one runtime per caller on the same workspace database, so a store that opened and closed the file while checking
it would silently release another connection's write lock and let a second process write at the same time.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from bearagent.runtime.state_files import prepare_sqlite_file

PROBE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute("BEGIN IMMEDIATE")
except sqlite3.OperationalError as exc:
    print("locked" if "locked" in str(exc) else f"error: {exc}")
else:
    print("acquired")
"""


def other_process_can_write(path: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


def test_preparing_an_open_database_keeps_this_process_locks(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    prepare_sqlite_file(path)  # a missing database is created 0600
    assert path.stat().st_mode & 0o777 == 0o600
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")  # this process holds the write lock
    holder.execute("INSERT INTO t VALUES (1)")
    assert other_process_can_write(path) == "locked"
    prepare_sqlite_file(path)  # another store of this process opens the same database
    assert other_process_can_write(path) == "locked"  # the lock is still ours
    holder.execute("COMMIT")
    assert other_process_can_write(path) == "acquired"

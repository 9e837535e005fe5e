"""`bearagent db check`: whether a workspace's SQLite store is whole, read without changing it.

The file is opened read-only (never created, migrated or repaired: a damaged store is the user's to move aside or
restore, never silently replaced), then SQLite's full `PRAGMA integrity_check` runs and every stored row is read
once (a page the check passes can still hold text that is not UTF-8). A damaged file raises `StoreError
(storage.corrupt)` naming it and what to do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bearagent.store.connection import refuse_empty_store
from bearagent.store.errors import StoreError
from bearagent.store.schema import check_identity, identify

DAMAGED_FIX = (
    "Move the file aside (BearAgent then starts a new, empty store) and restore it from a backup; "
    "`sqlite3 FILE .recover` may salvage the events"
)
TABLES = ("events", "run_projections", "sessions")


@dataclass(frozen=True, slots=True)
class CheckResult:
    path: Path
    exists: bool
    rows: int = 0


def check_sqlite_store(path: Path) -> CheckResult:
    """Check the store file at `path` (see the module docstring); `exists=False` when there is none yet."""
    if not path.exists():
        return CheckResult(path, exists=False)
    refuse_empty_store(path)  # 0 bytes: none of BearAgent's making (a repository may ship one)
    rows = 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _damaged(path, str(exc)) from exc
    try:
        problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
        if problems:
            raise _damaged(path, problems[0])
        app_id, version, tables = identify(conn)
        if app_id == 0 and version == 0 and tables == 0:
            check_identity(path, app_id, version, tables)  # storage.empty_file: an SQLite file with nothing in it
        names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in TABLES:
            if table in names:
                for row in conn.execute(f"SELECT * FROM {table}"):
                    rows += 1
                    del row
    except sqlite3.Error as exc:
        raise _damaged(path, str(exc)) from exc
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.close()
    return CheckResult(path, exists=True, rows=rows)


def _damaged(path: Path, problem: str) -> StoreError:
    return StoreError(path, "corrupt", f"the event store file is damaged ({problem[:300]})", DAMAGED_FIX)

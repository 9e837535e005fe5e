"""The SQLite schema of the event store, as numbered migrations (`PRAGMA user_version` is the last one applied),
and how an opened file is recognised and brought up to it.

A migration only ever adds; a released migration never changes. `APPLICATION_ID` marks a file as ours, so a foreign
SQLite file is refused instead of being written into.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

from bearagent.store.errors import StoreError

APPLICATION_ID = 0x42656172  # "Bear"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the event log and the Run/Activity projections. The active (pending/running) activity of a run lives in
    #    its run row (`active_activity`, JSON) and moves to `activity_projections` when it ends: one page write less
    #    for most appends.
    (
        """CREATE TABLE events (
            seq_no INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            sequence INTEGER NOT NULL CHECK (sequence >= 1),
            event_id TEXT NOT NULL UNIQUE,
            event_type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            occurred_at TEXT NOT NULL,
            causation_id TEXT,
            correlation_id TEXT,
            payload TEXT NOT NULL,
            UNIQUE (run_id, sequence)
        )""",
        """CREATE TABLE run_projections (
            run_id TEXT PRIMARY KEY,
            session_id TEXT,
            parent_run_id TEXT,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            last_sequence INTEGER NOT NULL,
            data TEXT NOT NULL,
            active_activity TEXT
        )""",
        "CREATE INDEX run_projections_session ON run_projections (session_id)",
        "CREATE INDEX run_projections_status ON run_projections (status)",
        "CREATE INDEX run_projections_parent ON run_projections (parent_run_id)",
        """CREATE TABLE activity_projections (
            run_id TEXT NOT NULL,
            activity_id TEXT NOT NULL,
            requested_sequence INTEGER NOT NULL,
            status TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, activity_id)
        ) WITHOUT ROWID""",
    ),
    # 2: sessions (the runtime's serial run queue keys on them)
    (
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            agent_name TEXT,
            active_agent_name TEXT,
            title TEXT,
            caller TEXT
        )""",
        "CREATE INDEX sessions_updated ON sessions (updated_at)",
    ),
    # 3: the goal (up to 1 MiB, never changes) moves out of the run row's JSON, so appends do not rewrite it
    (
        "ALTER TABLE run_projections ADD COLUMN goal TEXT",
        "UPDATE run_projections SET goal = json_extract(data, '$.goal'), data = json_remove(data, '$.goal')",
    ),
    # 4: leases (the heartbeat of each run a live process executes: written often, so not in the run row), the
    #    session's "allow always" answers (a JSON array of permission rules, added to one at a time) and its
    #    pending facts
    (
        """CREATE TABLE run_leases (
            run_id TEXT PRIMARY KEY,
            heartbeat_at TEXT NOT NULL
        ) WITHOUT ROWID""",
        "ALTER TABLE sessions ADD COLUMN allowed_rules TEXT NOT NULL DEFAULT '[]'",
        # facts of the session that happened outside any run (a SessionEnd hook's execution), recorded at the
        # start of the session's next run
        "ALTER TABLE sessions ADD COLUMN pending_facts TEXT NOT NULL DEFAULT '[]'",
    ),
    # 5: the caller context a session was created with over the HTTP API (JSON; NULL for a local session)
    ("ALTER TABLE sessions ADD COLUMN auth_context TEXT",),
    # 6: requests to cancel a run that another process executes (its worker looks for them)
    (
        """CREATE TABLE run_cancel_requests (
            run_id TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            requested_at TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    # 7: workspace records (seed 002's Workspace: `store/workspace_rows.py`), one per served workspace key
    (
        """CREATE TABLE workspaces (
            key TEXT PRIMARY KEY,
            workspace_id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    # 8: run search (`store/search.py`): a full-text index of each event's searchable text, filled from the log
    #    before each search up to the sequence `run_text_state` records per run; and the runs a user pinned, which
    #    `db prune` keeps
    (
        """CREATE VIRTUAL TABLE run_text USING fts5(
            body, run_id UNINDEXED, sequence UNINDEXED, event_type UNINDEXED,
            tokenize = 'unicode61 remove_diacritics 2'
        )""",
        """CREATE TABLE run_text_state (
            run_id TEXT PRIMARY KEY,
            indexed_sequence INTEGER NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE run_pins (
            run_id TEXT PRIMARY KEY,
            pinned_at TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    # 9: where a session was forked from (`bearagent sessions fork`: JSON {session_id, run_id, sequence}; NULL for
    #    a session that was not forked)
    ("ALTER TABLE sessions ADD COLUMN forked_from TEXT",),
)

SCHEMA_VERSION = len(MIGRATIONS)


def identify(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The file's application id, schema version and number of schema objects."""
    # one statement, so one snapshot: another process may be migrating the file right now
    row = conn.execute(
        "SELECT a.application_id, v.user_version, (SELECT count(*) FROM sqlite_master)"
        " FROM pragma_application_id() AS a, pragma_user_version() AS v"
    ).fetchone()
    return cast(tuple[int, int, int], row)


EMPTY_FIX = (
    "If nothing of yours is in it, remove it (`rm FILE`; if git tracks it, `git rm --cached FILE` and add "
    "`.bearagent/` to .gitignore) and run again: BearAgent then creates a new store of its own (0600); "
    "`bearagent db check` checks the file"
)


def check_identity(path: Path, app_id: int, version: int, tables: int, *, new: bool = False) -> None:
    """Refuse a foreign SQLite file, or a store of a newer schema than this BearAgent knows. An SQLite file with
    nothing in it is initialised only when `new` (the file `connection.create_store_file` just made, before it is
    linked into place): BearAgent never leaves an empty store, so one at a store's path came from elsewhere."""
    if app_id == 0 and version == 0 and tables == 0:
        if new:
            return  # our own new file: ours to initialise
        raise StoreError(
            path,
            "empty_file",
            "the event store file is an SQLite database with nothing in it, and BearAgent never leaves an empty "
            "store: it came from elsewhere (a repository that ships it, a copy), so BearAgent will not make it the "
            "store of your runs",
            EMPTY_FIX,
        )
    if app_id != APPLICATION_ID:
        raise StoreError(
            path,
            "foreign_file",
            f"this SQLite file is not a BearAgent event store (application_id {app_id:#x}, {tables} schema objects)",
            "Move it aside or point BearAgent at another file; BearAgent never writes into foreign databases",
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            path,
            "newer_schema",
            f"the event store has schema version {version}, newer than this BearAgent supports ({SCHEMA_VERSION})",
            "Upgrade BearAgent (pip install -U bearagent) to open it; older versions never downgrade a store",
        )


def migrate(conn: sqlite3.Connection, path: Path, *, new: bool = False) -> int:
    """Apply the missing migrations in one transaction (re-checked inside it: another process may be migrating) and
    return the version the file had under that lock (0: a new file, only when `new`: `check_identity`)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        app_id, version, tables = identify(conn)  # another process may have migrated meanwhile
        check_identity(path, app_id, version, tables, new=new)
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number - 1]:
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return version

"""Sessions in the SQLite store: the rows of the `sessions` table and the statements that write and read them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import SessionId
from bearagent.domain.state import SessionRecord
from bearagent.runtime.run_state import iso
from bearagent.store.errors import translate_sqlite_error
from bearagent.store.run_reads import query_on

_SESSION_SELECT = (
    "SELECT session_id, created_at, updated_at, agent_name, active_agent_name, title, caller, allowed_rules,"
    " auth_context, forked_from FROM sessions"
)


def _session_row(session: SessionRecord) -> tuple[str | None, ...]:
    return (
        str(session.session_id),
        iso(session.created_at.astimezone(UTC)),
        iso(session.updated_at.astimezone(UTC)),
        session.agent_name,
        session.active_agent_name,
        session.title,
        session.caller,
    )


def _session_of(row: tuple[object, ...]) -> SessionRecord:
    return SessionRecord.model_validate(
        {
            "session_id": row[0],
            "created_at": row[1],
            "updated_at": row[2],
            "agent_name": row[3],
            "active_agent_name": row[4],
            "title": row[5],
            "caller": row[6],
            "allowed_rules": json.loads(cast(str, row[7])) if row[7] else [],
            "auth_context": json.loads(cast(str, row[8])) if row[8] else None,
            "forked_from": json.loads(cast(str, row[9])) if row[9] else None,
        }
    )


def insert_session_on(conn: sqlite3.Connection, path: Path, session: SessionRecord) -> SessionRecord:
    try:
        conn.execute(
            "INSERT INTO sessions (session_id, created_at, updated_at, agent_name, active_agent_name, title,"
            " caller, allowed_rules, auth_context, forked_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *_session_row(session),
                json.dumps(list(session.allowed_rules)),
                None if session.auth_context is None else json.dumps(thaw_json_mapping(session.auth_context)),
                None if session.forked_from is None else session.forked_from.model_dump_json(),
            ),
        )
    except sqlite3.IntegrityError as exc:
        raise BearAgentError(
            ErrorInfo.of(
                "conflict",
                "session_exists",
                f"session {session.session_id} already exists; continue it with --session or create a new id",
            )
        ) from exc
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"creating session {session.session_id}") from exc
    return session


def save_session_on(conn: sqlite3.Connection, path: Path, session: SessionRecord) -> SessionRecord:
    """Replace a stored session's fields (its id must exist), except `allowed_rules`: those only grow, one rule at a
    time (`allow_in_session_on`), so a run saving the session it loaded never drops an answer given meanwhile."""
    try:
        cursor = conn.execute(
            "UPDATE sessions SET created_at = ?, updated_at = ?, agent_name = ?, active_agent_name = ?,"
            " title = ?, caller = ? WHERE session_id = ?",
            (*_session_row(session)[1:], str(session.session_id)),
        )
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"updating session {session.session_id}") from exc
    if cursor.rowcount == 0:
        raise BearAgentError(
            ErrorInfo.of(
                "not_found",
                "session",
                f"session {session.session_id} does not exist; create it first (create_session)",
            )
        )
    return session


def allow_in_session_on(conn: sqlite3.Connection, path: Path, session_id: SessionId, rule: str) -> None:
    """Add `rule` to the session's "allow always" answers (once; in one statement, so concurrent answers add up)."""
    try:
        cursor = conn.execute(
            "UPDATE sessions SET allowed_rules = json_insert(allowed_rules, '$[#]', ?) WHERE session_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM json_each(sessions.allowed_rules) WHERE value = ?)",
            (rule, str(session_id), rule),
        )
        if cursor.rowcount == 0 and not session_on(conn, path, session_id):
            raise BearAgentError(
                ErrorInfo.of("not_found", "session", f"session {session_id} does not exist; create it first")
            )
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"remembering an answer in session {session_id}") from exc


def queue_facts_on(conn: sqlite3.Connection, path: Path, session_id: SessionId, facts: list[JsonValue]) -> None:
    """Append `facts` (event payloads as JSON, `{"event_type", "schema_version", "payload"}`) to the session's
    pending facts, in one transaction."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT pending_facts FROM sessions WHERE session_id = ?", (str(session_id),)).fetchone()
            if row is not None:
                pending = cast(list[JsonValue], json.loads(cast(str, row[0]) or "[]"))
                conn.execute(
                    "UPDATE sessions SET pending_facts = ? WHERE session_id = ?",
                    (json.dumps([*pending, *facts]), str(session_id)),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"keeping facts of session {session_id}") from exc


def take_facts_on(conn: sqlite3.Connection, path: Path, session_id: SessionId) -> list[JsonValue]:
    """The session's pending facts, oldest first, removed in the same transaction (each is taken once)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT pending_facts FROM sessions WHERE session_id = ?", (str(session_id),)).fetchone()
            taken = cast(list[JsonValue], json.loads(cast(str, row[0]) or "[]")) if row is not None else []
            if taken:
                conn.execute("UPDATE sessions SET pending_facts = '[]' WHERE session_id = ?", (str(session_id),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"taking facts of session {session_id}") from exc
    return taken


def session_on(conn: sqlite3.Connection, path: Path, session_id: SessionId) -> SessionRecord | None:
    rows = query_on(conn, path, f"{_SESSION_SELECT} WHERE session_id = ?", (str(session_id),), "reading a session")
    return _session_of(rows[0]) if rows else None


def sessions_on(conn: sqlite3.Connection, path: Path, caller: str | None, limit: int) -> Sequence[SessionRecord]:
    """Sessions, most recently updated first (of `caller`, when given)."""
    sql = _SESSION_SELECT
    params: list[object] = []
    if caller is not None:
        sql += " WHERE caller = ?"
        params.append(caller)
    sql += " ORDER BY updated_at DESC, rowid DESC LIMIT ?"
    params.append(limit)
    return [_session_of(row) for row in query_on(conn, path, sql, params, "listing sessions")]

"""Sessions in the PostgreSQL store: the `sessions` rows, their "allow always" rules and the facts a session keeps
for its next run (`session_facts`, one row per fact: queueing is one INSERT, taking one DELETE ... RETURNING, so
concurrent processes never lose or duplicate a fact)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

import orjson
import psycopg
from psycopg import errors as pg_errors

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import SessionId
from bearagent.domain.state import SessionRecord
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries
from bearagent.store.postgres.run_commit import json_string
from bearagent.store.postgres.run_reads import rows_of

_SELECT = (
    "SELECT session_id, created_at, updated_at, agent_name, active_agent_name, title, caller, allowed_rules,"
    " auth_context, forked_from"
    " FROM {s}.sessions"
)


def _missing(session_id: SessionId) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of("not_found", "session", f"session {session_id} does not exist; create it first (create_session)")
    )


def _values(session: SessionRecord) -> tuple[object, ...]:
    return (
        session.created_at.astimezone(UTC),
        session.updated_at.astimezone(UTC),
        session.agent_name,
        session.active_agent_name,
        None if session.title is None else json_string(session.title),
        session.caller,
    )


def _session_of(row: tuple[object, ...]) -> SessionRecord:
    return SessionRecord.model_validate(
        {
            "session_id": row[0],
            "created_at": cast(datetime, row[1]).astimezone(UTC),
            "updated_at": cast(datetime, row[2]).astimezone(UTC),
            "agent_name": row[3],
            "active_agent_name": row[4],
            "title": row[5],
            "caller": row[6],
            "allowed_rules": row[7] or [],
            "auth_context": row[8],
            "forked_from": row[9],
        }
    )


async def insert(conn: Conn, q: Queries, where: str, session: SessionRecord) -> SessionRecord:
    try:
        await conn.execute(
            q(
                "INSERT INTO {s}.sessions (session_id, created_at, updated_at, agent_name, active_agent_name, title,"
                " caller, allowed_rules, auth_context, forked_from)"
                " VALUES (%s, %s, %s, %s, %s, %s::json, %s, %s::json, %s::json, %s::json)"
            ),
            (
                str(session.session_id),
                *_values(session),
                orjson.dumps(list(session.allowed_rules)).decode(),
                None
                if session.auth_context is None
                else orjson.dumps(thaw_json_mapping(session.auth_context)).decode(),
                None if session.forked_from is None else session.forked_from.model_dump_json(),
            ),
        )
    except pg_errors.UniqueViolation as exc:
        raise BearAgentError(
            ErrorInfo.of(
                "conflict",
                "session_exists",
                f"session {session.session_id} already exists; continue it with --session or create a new id",
            )
        ) from exc
    except psycopg.Error as exc:
        raise translate(where, exc, f"creating session {session.session_id}") from exc
    return session


async def save(conn: Conn, q: Queries, where: str, session: SessionRecord) -> SessionRecord:
    """Replace a stored session's fields, except `allowed_rules`: those only grow, one rule at a time (`allow`), so
    a run saving the session it loaded never drops an answer given meanwhile."""
    try:
        cur = await conn.execute(
            q(
                "UPDATE {s}.sessions SET created_at = %s, updated_at = %s, agent_name = %s, active_agent_name = %s,"
                " title = %s::json, caller = %s WHERE session_id = %s"
            ),
            (*_values(session), str(session.session_id)),
        )
    except psycopg.Error as exc:
        raise translate(where, exc, f"updating session {session.session_id}") from exc
    if cur.rowcount == 0:
        raise _missing(session.session_id)
    return session


async def allow(conn: Conn, q: Queries, where: str, session_id: SessionId, rule: str) -> None:
    """Add `rule` to the session's "allow always" answers, once: the row is locked while the list is read and
    written, so concurrent answers from any process add up."""
    try:
        async with conn.transaction():
            cur = await conn.execute(
                q("SELECT allowed_rules FROM {s}.sessions WHERE session_id = %s FOR UPDATE"), (str(session_id),)
            )
            row = await cur.fetchone()
            if row is None:
                raise _missing(session_id)
            rules = cast(list[JsonValue], row[0] or [])
            if rule not in rules:
                await conn.execute(
                    q("UPDATE {s}.sessions SET allowed_rules = %s::json WHERE session_id = %s"),
                    (orjson.dumps([*rules, rule]).decode(), str(session_id)),
                )
    except psycopg.Error as exc:
        raise translate(where, exc, f"remembering an answer in session {session_id}") from exc


async def queue_facts(conn: Conn, q: Queries, where: str, session_id: SessionId, facts: Sequence[JsonValue]) -> None:
    """Keep `facts` for the session's next run, in order; nothing is kept for a session that does not exist."""
    try:
        await conn.execute(
            q(
                "INSERT INTO {s}.session_facts (session_id, fact)"
                " SELECT s.session_id, f.fact FROM {s}.sessions s,"
                " unnest(%s::json[]) WITH ORDINALITY AS f (fact, n) WHERE s.session_id = %s ORDER BY f.n"
            ),
            ([orjson.dumps(fact).decode() for fact in facts], str(session_id)),
        )
    except psycopg.Error as exc:
        raise translate(where, exc, f"keeping facts of session {session_id}") from exc


async def take_facts(conn: Conn, q: Queries, where: str, session_id: SessionId) -> list[JsonValue]:
    """The session's kept facts, oldest first, deleted by the statement that returns them (each is taken once)."""
    rows = await rows_of(
        conn,
        q("DELETE FROM {s}.session_facts WHERE session_id = %s RETURNING fact_order, fact"),
        (str(session_id),),
        where,
        f"taking facts of session {session_id}",
    )
    return [cast(JsonValue, row[1]) for row in sorted(rows, key=lambda row: cast(int, row[0]))]


async def fetch(conn: Conn, q: Queries, where: str, session_id: SessionId) -> SessionRecord | None:
    rows = await rows_of(conn, q(_SELECT + " WHERE session_id = %s"), (str(session_id),), where, "reading a session")
    return _session_of(rows[0]) if rows else None


async def listing(conn: Conn, q: Queries, where: str, caller: str | None, limit: int) -> Sequence[SessionRecord]:
    """Sessions, most recently updated first (of `caller`, when given)."""
    if caller is None:
        statement = q(_SELECT + " ORDER BY updated_at DESC, created_order DESC LIMIT %s")
        params: tuple[object, ...] = (limit,)
    else:
        statement = q(_SELECT + " WHERE caller = %s ORDER BY updated_at DESC, created_order DESC LIMIT %s")
        params = (caller, limit)
    return [_session_of(row) for row in await rows_of(conn, statement, params, where, "listing sessions")]

"""Run search on the PostgreSQL store: `run_text` (migration 5) with a `simple` tsvector per event, caught up with
the log before each search, and the query over it.

Catching up is per run, as on SQLite (`store/search.py`): `run_text_state` records up to which sequence each run's
events are indexed. Each batch is one transaction under a transaction-scoped advisory lock of the schema's index,
so concurrent searches (many hosts) never index the same events twice; a run's events and its `last_sequence`
commit together, so nothing committed is missed. The `simple` configuration (no stemming, no stop words) matches
whole words in any language, as FTS5's `unicode61` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import LiteralString, cast

import psycopg

from bearagent.domain._base import JsonValue
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.search import RunSearch, RunSearchHit, clean_snippet
from bearagent.runtime.search_text import SEARCHED_EVENTS, search_text
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries
from bearagent.store.postgres.schema import lock_key

INDEX_BATCH = 2_000

_PENDING: LiteralString = (
    "SELECT e.run_id, e.sequence, e.event_type, e.payload FROM {s}.run_projections p"
    " LEFT JOIN {s}.run_text_state s ON s.run_id = p.run_id"
    " JOIN {s}.events e ON e.run_id = p.run_id AND e.sequence > coalesce(s.indexed_sequence, 0)"
    " WHERE p.last_sequence > coalesce(s.indexed_sequence, 0) AND e.event_type = ANY(%s)"
    " ORDER BY e.run_id, e.sequence LIMIT %s"
)


async def index(conn: Conn, q: Queries, where: str) -> int:
    """Bring the index up to date with the log; the number of events looked at."""
    total = 0
    types = sorted(SEARCHED_EVENTS)
    try:
        while True:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(q.schema, "run_text"),))
                cur = await conn.execute(q(_PENDING), (types, INDEX_BATCH))
                rows = cast(list[tuple[str, int, str, object]], await cur.fetchall())
                done = len(rows) < INDEX_BATCH
                marks: dict[str, int] = {}
                texts: list[tuple[str, int, str, str]] = []
                for run_id, sequence, event_type, payload in rows:
                    marks[run_id] = sequence
                    text = search_text(event_type, cast(Mapping[str, JsonValue], payload))
                    if text is not None:
                        texts.append((run_id, sequence, event_type, text))
                if texts:
                    async with conn.cursor() as cursor:
                        await cursor.executemany(
                            q(
                                "INSERT INTO {s}.run_text (run_id, sequence, event_type, body) VALUES (%s, %s, %s, %s)"
                                " ON CONFLICT (run_id, sequence) DO NOTHING"
                            ),
                            texts,
                        )
                if done:
                    await conn.execute(
                        q(
                            "INSERT INTO {s}.run_text_state (run_id, indexed_sequence)"
                            " SELECT run_id, last_sequence FROM {s}.run_projections"
                            " ON CONFLICT (run_id) DO UPDATE SET indexed_sequence = excluded.indexed_sequence"
                            " WHERE {s}.run_text_state.indexed_sequence < excluded.indexed_sequence"
                        )
                    )
                elif marks:
                    async with conn.cursor() as cursor:
                        await cursor.executemany(
                            q(
                                "INSERT INTO {s}.run_text_state (run_id, indexed_sequence) VALUES (%s, %s)"
                                " ON CONFLICT (run_id) DO UPDATE SET indexed_sequence = excluded.indexed_sequence"
                            ),
                            list(marks.items()),
                        )
            total += len(rows)
            if done:
                return total
    except psycopg.Error as exc:
        raise translate(where, exc, "indexing runs for search") from exc


_AGENT: LiteralString = "coalesce(p.data->>'effective_agent_name', p.data->>'agent_name')"


async def search(conn: Conn, q: Queries, where: str, query: RunSearch) -> list[RunSearchHit]:
    """The newest runs (at most `query.limit`) with an event holding every word, best-matching event each."""
    text = " ".join(query.words)
    params: dict[str, object] = {
        "text": text,
        "status": query.status,
        "agent": query.agent,
        "since": query.since,
        "session": None if query.session_id is None else str(query.session_id),
        "caller": query.caller,
        "limit": query.limit,
    }
    statement = q(
        "WITH tq AS (SELECT plainto_tsquery('simple'::regconfig, %(text)s) AS tq),"
        " m AS MATERIALIZED (SELECT t.run_id, t.sequence, t.event_type, t.body, ts_rank(t.tsv, tq.tq) AS score"
        " FROM {s}.run_text t, tq WHERE t.tsv @@ tq.tq),"
        " best AS (SELECT m.*, row_number() OVER (PARTITION BY m.run_id ORDER BY m.score DESC, m.sequence) AS n"
        " FROM m)"
        " SELECT b.run_id, b.sequence, b.event_type, p.session_id, p.status, p.created_at, p.goal, " + _AGENT + ","
        " ts_headline('simple'::regconfig, b.body, tq.tq,"
        " 'StartSel=[, StopSel=], MaxWords=40, MinWords=12, MaxFragments=1, FragmentDelimiter=…')"
        " FROM best b JOIN {s}.run_projections p ON p.run_id = b.run_id, tq"
        " WHERE b.n = 1"
        " AND (%(status)s::text IS NULL OR p.status = %(status)s::text)"
        " AND (%(agent)s::text IS NULL OR " + _AGENT + " = %(agent)s::text)"
        " AND (%(since)s::timestamptz IS NULL OR p.created_at >= %(since)s::timestamptz)"
        " AND (%(session)s::text IS NULL OR p.session_id = %(session)s::text)"
        " AND (%(caller)s::text IS NULL OR p.session_id IN"
        " (SELECT session_id FROM {s}.sessions WHERE caller = %(caller)s::text))"
        " ORDER BY p.created_order DESC LIMIT %(limit)s"
    )
    try:
        cur = await conn.execute(statement, params)
        rows = cast(
            list[tuple[str, int, str, str | None, str, datetime, JsonValue, str | None, str]], await cur.fetchall()
        )
    except psycopg.Error as exc:
        raise translate(where, exc, "searching runs") from exc
    return [
        RunSearchHit(
            run_id=RunId(run_id),
            session_id=SessionId(session_id) if session_id else None,
            status=status,
            agent_name=agent,
            created_at=created_at,
            goal=clean_snippet(goal) if isinstance(goal, str) and goal else None,
            sequence=sequence,
            event_type=event_type,
            snippet=clean_snippet(headline),
        )
        for run_id, sequence, event_type, session_id, status, created_at, goal, agent, headline in rows
    ]


async def search_caught_up(conn: Conn, q: Queries, where: str, query: RunSearch) -> list[RunSearchHit]:
    await index(conn, q, where)
    return await search(conn, q, where, query)

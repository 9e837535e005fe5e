"""Run search on the SQLite store: the FTS5 index `run_text` (migration 8), caught up with the log before each
search, and the query over it.

Catching up is per run: `run_text_state` records up to which sequence each run's events are indexed, and a run
whose `last_sequence` is past it gets its newer events indexed, in batches, each batch one `BEGIN IMMEDIATE`
transaction (so two processes never index the same events twice: the second finds the watermark moved). A run's
events and its `last_sequence` are committed together, so nothing committed is missed and nothing half-written is
read. The index only ever holds text the log holds; `db prune` deletes a run's rows with the run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.search import RunSearch, RunSearchHit, clean_snippet
from bearagent.runtime.run_state import iso
from bearagent.runtime.search_text import SEARCHED_EVENTS, search_text
from bearagent.store.errors import translate_sqlite_error

INDEX_BATCH = 2_000
_TYPES = ",".join(f"'{name}'" for name in sorted(SEARCHED_EVENTS))


def index_on(conn: sqlite3.Connection, path: Path) -> int:
    """Bring the index up to date with the log; the number of events indexed."""
    total = 0
    try:
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                rows = conn.execute(
                    "SELECT e.run_id, e.sequence, e.event_type, e.payload FROM run_projections p"
                    " LEFT JOIN run_text_state s ON s.run_id = p.run_id"
                    " JOIN events e ON e.run_id = p.run_id AND e.sequence > coalesce(s.indexed_sequence, 0)"
                    f" WHERE p.last_sequence > coalesce(s.indexed_sequence, 0) AND e.event_type IN ({_TYPES})"
                    " ORDER BY e.run_id, e.sequence LIMIT ?",
                    (INDEX_BATCH,),
                ).fetchall()
                done = len(rows) < INDEX_BATCH
                marks: dict[str, int] = {}
                for run_id, sequence, event_type, payload in cast(list[tuple[str, int, str, str]], rows):
                    marks[run_id] = sequence
                    text = search_text(event_type, cast(dict[str, JsonValue], json.loads(payload)))
                    if text is not None:
                        conn.execute(
                            "INSERT INTO run_text (body, run_id, sequence, event_type) VALUES (?, ?, ?, ?)",
                            (text, run_id, sequence, event_type),
                        )
                if done:
                    # every run is indexed to its last sequence (events of other types included)
                    conn.execute(
                        "INSERT INTO run_text_state (run_id, indexed_sequence) SELECT run_id, last_sequence"
                        " FROM run_projections WHERE true"
                        " ON CONFLICT (run_id) DO UPDATE SET indexed_sequence = excluded.indexed_sequence"
                        " WHERE indexed_sequence < excluded.indexed_sequence"
                    )
                else:
                    # a batch may end inside a run: its watermark is the last sequence indexed
                    conn.executemany(
                        "INSERT INTO run_text_state (run_id, indexed_sequence) VALUES (?, ?)"
                        " ON CONFLICT (run_id) DO UPDATE SET indexed_sequence = excluded.indexed_sequence",
                        list(marks.items()),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            total += len(rows)
            if done:
                return total
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "indexing runs for search") from exc


def fts_query(words: Sequence[str]) -> str:
    """FTS5 query text for "every one of these words": each a quoted string (no operator of the user's gets in)."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)


def search_on(conn: sqlite3.Connection, path: Path, search: RunSearch) -> list[RunSearchHit]:
    """The newest runs (at most `search.limit`) with an event holding every word, best-matching event each."""
    match = fts_query(search.words)
    filters: list[str] = []
    params: list[object] = [match]
    if search.status is not None:
        filters.append("p.status = ?")
        params.append(search.status)
    if search.agent is not None:
        filters.append(
            "coalesce(json_extract(p.data, '$.effective_agent_name'), json_extract(p.data, '$.agent_name')) = ?"
        )
        params.append(search.agent)
    if search.since is not None:
        filters.append("p.created_at >= ?")
        params.append(iso(search.since))
    if search.session_id is not None:
        filters.append("p.session_id = ?")
        params.append(str(search.session_id))
    if search.caller is not None:
        filters.append("p.session_id IN (SELECT session_id FROM sessions WHERE caller = ?)")
        params.append(search.caller)
    where = (" AND " + " AND ".join(filters)) if filters else ""
    params.append(search.limit)
    sql = (
        "WITH m AS MATERIALIZED (SELECT rowid AS rid, run_id, sequence, event_type, rank AS score"
        " FROM run_text WHERE run_text MATCH ?),"
        " best AS (SELECT m.*, row_number() OVER (PARTITION BY m.run_id ORDER BY m.score, m.sequence) AS n FROM m)"
        " SELECT b.rid, b.run_id, b.sequence, b.event_type, p.session_id, p.status, p.created_at, p.goal,"
        " coalesce(json_extract(p.data, '$.effective_agent_name'), json_extract(p.data, '$.agent_name'))"
        " FROM best b JOIN run_projections p ON p.run_id = b.run_id"
        f" WHERE b.n = 1{where} ORDER BY p.created_at DESC, p.run_id LIMIT ?"
    )
    try:
        rows = cast(
            list[tuple[int, str, int, str, str | None, str, str, str | None, str | None]],
            conn.execute(sql, params).fetchall(),
        )
        hits: list[RunSearchHit] = []
        for rid, run_id, sequence, event_type, session_id, status, created_at, goal, agent in rows:
            found = conn.execute(
                "SELECT snippet(run_text, 0, '[', ']', '…', 24) FROM run_text WHERE run_text MATCH ? AND rowid = ?",
                (match, rid),
            ).fetchone()
            hits.append(
                RunSearchHit(
                    run_id=RunId(run_id),
                    session_id=SessionId(session_id) if session_id else None,
                    status=status,
                    agent_name=agent,
                    created_at=datetime.fromisoformat(created_at),
                    goal=clean_snippet(goal) if goal else None,
                    sequence=sequence,
                    event_type=event_type,
                    snippet=clean_snippet(cast(str, found[0]) if found else ""),
                )
            )
        return hits
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "searching runs") from exc


def forget_runs_on(conn: sqlite3.Connection, run_ids: Sequence[str]) -> None:
    """Drop the index rows of deleted runs (inside the deleting transaction)."""
    for run_id in run_ids:
        conn.execute("DELETE FROM run_text WHERE run_id = ?", (run_id,))
        conn.execute("DELETE FROM run_text_state WHERE run_id = ?", (run_id,))

"""Pruning and pinning on the PostgreSQL store (`domain/retention.py` says which runs may go). A prune is one
transaction: the runs' events, projections, leases, cancel requests, search rows and pins go together or not at
all. PostgreSQL reuses the freed space after (auto)vacuum; the tables do not shrink on disk by themselves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import LiteralString, cast

import psycopg

from bearagent.domain.ids import RunId
from bearagent.domain.retention import PRUNABLE_STATUSES, PruneResult, choose_prunable
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries
from bearagent.store.postgres.run_reads import rows_of

_TREES: LiteralString = (
    "WITH RECURSIVE tree(root, run_id) AS ("
    " SELECT run_id, run_id FROM {s}.run_projections WHERE parent_run_id IS NULL AND status = ANY(%(statuses)s)"
    " AND created_at < %(before)s"
    " UNION ALL SELECT tree.root, p.run_id FROM {s}.run_projections p JOIN tree ON p.parent_run_id = tree.run_id)"
    " SELECT tree.root, tree.run_id, EXISTS (SELECT 1 FROM {s}.run_pins k WHERE k.run_id = tree.run_id), p.status"
    " FROM tree JOIN {s}.run_projections p ON p.run_id = tree.run_id"
)
_DELETES: tuple[LiteralString, ...] = (
    "DELETE FROM {s}.events WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.activity_projections WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_leases WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_cancel_requests WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_text WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_text_state WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_pins WHERE run_id = ANY(%s)",
    "DELETE FROM {s}.run_projections WHERE run_id = ANY(%s)",
)


class _DryRun(Exception):
    pass


async def prune(conn: Conn, q: Queries, where: str, before: datetime, *, dry_run: bool) -> PruneResult:
    found: list[PruneResult] = []
    try:
        async with conn.transaction():
            cur = await conn.execute(q(_TREES), {"statuses": list(PRUNABLE_STATUSES), "before": before.astimezone(UTC)})
            rows = cast(list[tuple[str, str, bool, str]], await cur.fetchall())
            choice = choose_prunable(rows)
            run_ids = list(choice.run_ids)
            cur = await conn.execute(
                q(
                    "SELECT count(*), coalesce(sum(octet_length(payload::text)), 0) FROM {s}.events"
                    " WHERE run_id = ANY(%s)"
                ),
                (run_ids,),
            )
            count, size = cast(tuple[int, int], await cur.fetchone())
            cur = await conn.execute(
                q(
                    "SELECT payload->>'tool_call_id' FROM {s}.events WHERE run_id = ANY(%s)"
                    " AND event_type = 'ToolCallRequested'"
                ),
                (run_ids,),
            )
            calls = tuple(cast(str, row[0]) for row in await cur.fetchall() if row[0])
            found.append(PruneResult(choice.run_ids, choice.top_level, count, int(size), calls, choice.kept_pinned))
            if dry_run:
                raise _DryRun
            for statement in _DELETES:
                await conn.execute(q(statement), (run_ids,))
    except _DryRun:
        pass
    except psycopg.Error as exc:
        raise translate(where, exc, "pruning old runs") from exc
    return found[0]


async def set_pinned(conn: Conn, q: Queries, where: str, run_id: RunId, pinned: bool, at: datetime) -> bool:
    try:
        if pinned:
            cur = await conn.execute(
                q("INSERT INTO {s}.run_pins (run_id, pinned_at) VALUES (%s, %s) ON CONFLICT (run_id) DO NOTHING"),
                (str(run_id), at.astimezone(UTC)),
            )
        else:
            cur = await conn.execute(q("DELETE FROM {s}.run_pins WHERE run_id = %s"), (str(run_id),))
        return cur.rowcount > 0
    except psycopg.Error as exc:
        raise translate(where, exc, f"pinning run {run_id}") from exc


async def pinned(conn: Conn, q: Queries, where: str) -> list[RunId]:
    rows = await rows_of(conn, q("SELECT run_id FROM {s}.run_pins ORDER BY pinned_at"), (), where, "reading pins")
    return [RunId(cast(str, row[0])) for row in rows]


async def size(conn: Conn, q: Queries, where: str) -> int:
    """The bytes the store's tables and indexes take in the database."""
    rows = await rows_of(
        conn,
        q(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'"
        ),
        (q.schema,),
        where,
        "measuring the store",
    )
    return int(cast(int, rows[0][0]))


async def vacuum(conn: Conn, q: Queries, where: str) -> None:
    """Plain VACUUM of the store's tables: the freed space is reused at once (no exclusive lock taken)."""
    tables: tuple[LiteralString, ...] = ("events", "run_projections", "activity_projections", "run_text")
    try:
        for table in tables:
            await conn.execute(q("VACUUM {s}." + table))
    except psycopg.Error as exc:
        raise translate(where, exc, "vacuuming the store") from exc

"""Run leases in the PostgreSQL store: the heartbeat of every run a live process executes (`run_leases`), in a
table of its own, so renewing it never rewrites a run row nor moves a run's version. The times are the writers'
clocks (the port passes them): hosts sharing a store keep their clocks in step (NTP), well within the lease."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import cast

import psycopg

from bearagent.domain.ids import RunId
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries
from bearagent.store.postgres.notify import CANCEL_REQUESTED, notify_statement
from bearagent.store.postgres.run_reads import rows_of


async def renew(conn: Conn, q: Queries, where: str, run_ids: Sequence[RunId], at: datetime) -> None:
    """Set the heartbeat of `run_ids` to `at`, in one statement."""
    try:
        await conn.execute(
            q(
                "INSERT INTO {s}.run_leases (run_id, heartbeat_at) SELECT unnest(%s::text[]), %s"
                " ON CONFLICT (run_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
            ),
            (sorted({str(run_id) for run_id in run_ids}), at.astimezone(UTC)),
        )
    except psycopg.Error as exc:
        raise translate(where, exc, "renewing run leases") from exc


async def heartbeats(conn: Conn, q: Queries, where: str, run_ids: Sequence[RunId]) -> Mapping[RunId, datetime]:
    """The last heartbeat of each of `run_ids` that has one."""
    rows = await rows_of(
        conn,
        q("SELECT run_id, heartbeat_at FROM {s}.run_leases WHERE run_id = ANY(%s)"),
        ([str(run_id) for run_id in run_ids],),
        where,
        "reading run leases",
    )
    return {RunId(cast(str, row[0])): cast(datetime, row[1]).astimezone(UTC) for row in rows}


async def request_cancel(conn: Conn, q: Queries, where: str, run_id: RunId, reason: str, at: datetime) -> None:
    """Record a request to cancel `run_id` (the first one stays) and tell the listening processes at once."""
    try:
        async with conn.transaction():
            await conn.execute(
                q(
                    "INSERT INTO {s}.run_cancel_requests (run_id, reason, requested_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (run_id) DO NOTHING"
                ),
                (str(run_id), reason[:500], at.astimezone(UTC)),
            )
            await conn.execute(*notify_statement(q.schema, str(run_id), 0, CANCEL_REQUESTED, lifecycle=True))
    except psycopg.Error as exc:
        raise translate(where, exc, f"asking to cancel run {run_id}") from exc


async def cancel_requests(conn: Conn, q: Queries, where: str, run_ids: Sequence[RunId]) -> Mapping[RunId, str]:
    """The reason of each of `run_ids` someone asked to cancel."""
    rows = await rows_of(
        conn,
        q("SELECT run_id, reason FROM {s}.run_cancel_requests WHERE run_id = ANY(%s)"),
        ([str(run_id) for run_id in run_ids],),
        where,
        "reading cancel requests",
    )
    return {RunId(cast(str, row[0])): cast(str, row[1]) for row in rows}

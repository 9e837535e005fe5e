"""The PostgreSQL schema of the store, as numbered migrations, and how a store's schema is brought up to date.

`{s}.bearagent_schema` has one row per applied migration. Opening a store applies the missing ones in one
transaction under a transaction-scoped advisory lock of that schema, so processes starting at once on many hosts
migrate once: the others wait for the lock, then find nothing left to do. A migration only ever adds; a released
migration never changes. A schema holding tables but no version table belongs to something else and is refused; one
of a newer BearAgent too (never downgraded).

JSON columns are `json`, not `jsonb`, on purpose: the log must give back every event exactly as it was committed
(the contract suite compares the JSON text: key order and number spelling), and `jsonb` reorders keys and refuses
the string "\\u0000", which tool output and model text may hold (so does `text`: free text lives in `json` columns).
Queries that need jsonb's operators cast (`payload::jsonb`). Ids are `COLLATE "C"`, so their primary key indexes
serve prefix lookups (`LIKE 'ab%'`).
"""

from __future__ import annotations

import hashlib
from typing import LiteralString

from bearagent.store.errors import StoreError
from bearagent.store.postgres.location import Conn, Location, Queries

MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    # 1: the log, the run and activity projections (the active activity of a run lives in its run row and moves to
    #    activity_projections when it ends), run leases, sessions with their "allow always" rules, and the facts a
    #    session keeps for its next run
    (
        """CREATE TABLE {s}.events (
            seq_no bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id text COLLATE "C" NOT NULL,
            sequence integer NOT NULL CHECK (sequence >= 1),
            event_id text COLLATE "C" NOT NULL,
            event_type text NOT NULL,
            schema_version integer NOT NULL,
            occurred_at timestamptz NOT NULL,
            causation_id text,
            correlation_id text,
            payload json NOT NULL,
            CONSTRAINT events_event_id_key UNIQUE (event_id),
            CONSTRAINT events_run_sequence_key UNIQUE (run_id, sequence)
        )""",
        """CREATE TABLE {s}.run_projections (
            run_id text COLLATE "C" PRIMARY KEY,
            created_order bigint GENERATED ALWAYS AS IDENTITY,
            session_id text COLLATE "C",
            parent_run_id text COLLATE "C",
            status text NOT NULL,
            created_at timestamptz NOT NULL,
            last_sequence integer NOT NULL,
            data json NOT NULL,
            active_activity json,
            goal json
        )""",
        "CREATE INDEX run_projections_order ON {s}.run_projections (created_order)",
        "CREATE INDEX run_projections_session ON {s}.run_projections (session_id, created_order)",
        "CREATE INDEX run_projections_status ON {s}.run_projections (status, created_order)",
        "CREATE INDEX run_projections_parent ON {s}.run_projections (parent_run_id, created_order)",
        """CREATE TABLE {s}.activity_projections (
            run_id text COLLATE "C" NOT NULL,
            activity_id text COLLATE "C" NOT NULL,
            requested_sequence integer NOT NULL,
            status text NOT NULL,
            data json NOT NULL,
            CONSTRAINT activity_projections_pkey PRIMARY KEY (run_id, activity_id)
        )""",
        """CREATE TABLE {s}.run_leases (
            run_id text COLLATE "C" PRIMARY KEY,
            heartbeat_at timestamptz NOT NULL
        )""",
        """CREATE TABLE {s}.sessions (
            session_id text COLLATE "C" PRIMARY KEY,
            created_order bigint GENERATED ALWAYS AS IDENTITY,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            agent_name text,
            active_agent_name text,
            title json,
            caller text,
            allowed_rules json NOT NULL DEFAULT '[]'
        )""",
        "CREATE INDEX sessions_updated ON {s}.sessions (updated_at DESC, created_order DESC)",
        "CREATE INDEX sessions_caller ON {s}.sessions (caller, updated_at DESC, created_order DESC)",
        """CREATE TABLE {s}.session_facts (
            fact_order bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id text COLLATE "C" NOT NULL REFERENCES {s}.sessions ON DELETE CASCADE,
            fact json NOT NULL
        )""",
        "CREATE INDEX session_facts_session ON {s}.session_facts (session_id, fact_order)",
    ),
    # 2: the caller context a session was created with over the HTTP API (NULL for a local session)
    ("ALTER TABLE {s}.sessions ADD COLUMN auth_context json",),
    # 3: requests to cancel a run that another process executes (its worker looks for them)
    (
        """CREATE TABLE {s}.run_cancel_requests (
            run_id text COLLATE "C" PRIMARY KEY,
            reason text NOT NULL,
            requested_at timestamptz NOT NULL
        )""",
    ),
    # 4: workspace records (seed 002's Workspace: `store/workspace_rows.py`), one per served workspace key
    (
        """CREATE TABLE {s}.workspaces (
            key text COLLATE "C" PRIMARY KEY,
            workspace_id text COLLATE "C" NOT NULL UNIQUE,
            content json NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )""",
    ),
    # 5: run search (`store/postgres/search.py`): each event's searchable text with its `simple` tsvector (GIN),
    #    filled from the log before each search up to the sequence `run_text_state` records per run; and the runs
    #    a user pinned, which `db prune` keeps
    (
        """CREATE TABLE {s}.run_text (
            run_id text COLLATE "C" NOT NULL,
            sequence integer NOT NULL,
            event_type text NOT NULL,
            body text NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, body)) STORED,
            PRIMARY KEY (run_id, sequence)
        )""",
        "CREATE INDEX run_text_tsv ON {s}.run_text USING gin (tsv)",
        """CREATE TABLE {s}.run_text_state (
            run_id text COLLATE "C" PRIMARY KEY,
            indexed_sequence integer NOT NULL
        )""",
        """CREATE TABLE {s}.run_pins (
            run_id text COLLATE "C" PRIMARY KEY,
            pinned_at timestamptz NOT NULL
        )""",
    ),
    # 6: where a session was forked from (`bearagent sessions fork`: {session_id, run_id, sequence}; NULL for a
    #    session that was not forked)
    ("ALTER TABLE {s}.sessions ADD COLUMN forked_from json",),
    # 7: session locks as leases, for a store reached through a transaction pooler, where a session's advisory lock
    #    cannot stay on one server connection (`session_lock.LeasedLocks`): the lock's key, the store handle holding
    #    it, and when it is free unless that handle renews it
    (
        """CREATE TABLE {s}.session_locks (
            lock_key bigint PRIMARY KEY,
            holder text COLLATE "C" NOT NULL,
            expires_at timestamptz NOT NULL
        )""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)

_VERSION_TABLE = "bearagent_schema"


def lock_key(schema: str, what: str) -> int:
    """A signed 64-bit advisory lock key for `what` in `schema` (one key space for the whole database, so the
    schema is part of it)."""
    digest = hashlib.blake2b(f"bearagent\0{schema}\0{what}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def applied_version(conn: Conn, where: Location) -> int | None:
    """The schema's last applied migration; None when it has no version table (new, or not ours)."""
    cur = await conn.execute("SELECT to_regclass(%s)", (f'"{where.schema}".{_VERSION_TABLE}',))
    row = await cur.fetchone()
    if row is None or row[0] is None:
        return None
    cur = await conn.execute(Queries(where.schema)("SELECT coalesce(max(version), 0) FROM {s}.bearagent_schema"))
    found = await cur.fetchone()
    return int(found[0]) if found is not None else 0


def _newer(where: Location, version: int) -> StoreError:
    return StoreError(
        where.display,
        "newer_schema",
        f"the store has schema version {version}, newer than this BearAgent supports ({SCHEMA_VERSION})",
        "Upgrade BearAgent (pip install -U bearagent) to open it; older versions never downgrade a store",
    )


async def migrate(conn: Conn, where: Location, *, upto: int = SCHEMA_VERSION) -> int:
    """Bring the schema to version `upto` (the latest by default; tests stop earlier) and return the version it
    had. `conn` must be in autocommit mode; the migrations run in one transaction."""
    found = await applied_version(conn, where)
    if found is not None and found >= upto:
        if found > SCHEMA_VERSION:
            raise _newer(where, found)
        return found
    q = Queries(where.schema)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(where.schema, "migrate"),))
        cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (where.schema,))
        if await cur.fetchone() is None:
            await conn.execute(q("CREATE SCHEMA {s}"))
        found = await applied_version(conn, where)  # another process may have migrated meanwhile
        if found is None:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
                (where.schema,),
            )
            tables = await cur.fetchone()
            if tables is not None and int(tables[0]) > 0:
                raise StoreError(
                    where.display,
                    "foreign_schema",
                    f"schema {where.schema} holds {tables[0]} tables but is not a BearAgent store",
                    "Name another schema in the store config (store.schema); BearAgent never writes into foreign "
                    "schemas",
                )
            await conn.execute(
                q(
                    "CREATE TABLE {s}.bearagent_schema (version integer PRIMARY KEY,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
            )
            found = 0
        if found > SCHEMA_VERSION:
            raise _newer(where, found)
        for number in range(found + 1, upto + 1):
            for statement in MIGRATIONS[number - 1]:
                await conn.execute(q(statement))
            await conn.execute(q("INSERT INTO {s}.bearagent_schema (version) VALUES (%s)"), (number,))
    return found

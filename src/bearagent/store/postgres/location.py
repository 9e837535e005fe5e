"""Where a PostgreSQL store lives: the server (a libpq connection string or URL, `dsn`) and the schema holding
its tables, and how it is reached. The DSN may carry a password: it is only ever handed to libpq. Messages, errors
and logs name the store by `display`, which keeps host, port, database, user and schema and drops everything else.

`transaction_pooler`: the DSN reaches PostgreSQL through a pooler that hands each transaction to any server
connection (PgBouncer's `pool_mode = transaction`). Nothing may then live on a server connection beyond one
transaction: no named prepared statements (psycopg's automatic ones are turned off), no session advisory locks (the
session locks are leases in a table instead: `session_lock.LeasedLocks`), no LISTEN (it goes to `listen_dsn`, a
direct connection, or the readers poll). `listen_dsn`: where the commit notices are listened for (None: nowhere)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, LiteralString, TypeAlias

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.store.postgres.naming import DEFAULT_SCHEMA, SCHEMA_RE

Conn: TypeAlias = psycopg.AsyncConnection[TupleRow]


def _bad_dsn(why: str) -> BearAgentError:
    return BearAgentError(
        ErrorInfo.of("configuration", "invalid_store_dsn", f"the PostgreSQL connection string is not valid ({why})"),
        hint="give a libpq connection string (host=... dbname=...) or a postgresql:// URL",
    )


def display_of(dsn: str, schema: str) -> str:
    """`postgresql://user@host:port/dbname#schema`, without the password or any other parameter."""
    try:
        params = conninfo_to_dict(dsn)
    except Exception:
        raise _bad_dsn("libpq could not parse it") from None
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port")
    dbname = params.get("dbname") or user or ""
    who = f"{user}@" if user else ""
    where = f"{host}:{port}" if port else str(host)
    return f"postgresql://{who}{where}/{dbname}#{schema}"


@dataclass(frozen=True, slots=True)
class Location:
    dsn: str = field(repr=False)
    schema: str
    display: str
    transaction_pooler: bool = False
    listen_dsn: str | None = field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        dsn: str,
        schema: str = DEFAULT_SCHEMA,
        *,
        transaction_pooler: bool = False,
        listen_dsn: str | None = None,
    ) -> Location:
        """`listen_dsn` None: the store's DSN, unless a transaction pooler is in the way (then nothing listens)."""
        if not SCHEMA_RE.match(schema):
            raise BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "invalid_store_schema",
                    f"store schema {schema!r} is not a plain PostgreSQL name",
                    schema=schema,
                ),
                hint="use lower-case letters, digits and '_' (at most 63, not starting with a digit)",
            )
        if listen_dsn is not None:
            display_of(listen_dsn, schema)  # a bad one is refused now, not at the first notice
        elif not transaction_pooler:
            listen_dsn = dsn
        return cls(dsn, schema, display_of(dsn, schema), transaction_pooler, listen_dsn)

    @property
    def connect_kwargs(self) -> dict[str, Any]:
        """psycopg's connection arguments for this store: autocommit (a transaction is always explicit), and behind a
        transaction pooler no automatic prepared statements (a later transaction may run on another server
        connection, where the statement does not exist)."""
        if self.transaction_pooler:
            return {"autocommit": True, "prepare_threshold": None}
        return {"autocommit": True}

    def __str__(self) -> str:
        return self.display


class Queries:
    """SQL of one store: each template names its tables as `{s}.table`; the schema goes in as a quoted
    identifier (never as text). Each statement is composed and rendered to its bytes once and kept: psycopg then
    neither renders a composed statement again at every execution (~10% of a read's CPU on the store's thread,
    docs/scale-out.md) nor converts its placeholders again (its cache is keyed by the bytes), and can prepare it.
    The schema is a plain name (`SCHEMA_RE`), so its quoting needs no connection's encoding."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._schema = sql.Identifier(schema)
        self._made: dict[str, bytes] = {}

    def __call__(self, template: LiteralString) -> bytes:
        made = self._made.get(template)
        if made is None:
            made = self._made[template] = sql.SQL(template).format(s=self._schema).as_bytes()
        return made

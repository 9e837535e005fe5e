"""`store:` of the user's config.yaml or the server config: where a workspace's runs, sessions and locks are kept.

The backend is the user's (or a server's) choice, never a workspace file's: a cloned repository must not be able to
send its runs (prompts, tool output, file contents) to a database of its choosing, nor read the runs of another
project there. So `store:` in a workspace's config.yaml is refused with an error and the default applies. The DSN
itself (it may hold a password) is never written in a file: `dsn_env` names the environment variable that holds it,
or `dsn:` refers to it as `${VAR}` (nothing else: a literal DSN is refused and the store cannot be opened until it
is fixed), read from BearAgent's own environment (never from a settings file's `env`).

    store:
      backend: postgres            # sqlite (default: <workspace>/.bearagent/state.db) | postgres
      dsn: ${BEARAGENT_DATABASE_URL}   # or dsn_env: BEARAGENT_DATABASE_URL (default: BEARAGENT_PG_DSN)
      schema: team_docs            # optional; default: one schema per workspace (bearagent_<hash of its path>)
      pool_size: 4                 # optional; connections per process and store (1..64)
      pooler: transaction          # optional; the DSN goes through PgBouncer in transaction mode (default: none)
      listen_dsn_env: BEARAGENT_PG_DIRECT   # optional; a direct DSN for LISTEN (default: the store's, or none
                                   # behind a transaction pooler: readers poll)

Which settings apply (`choose_store`): the server config's `store:` (for the workspaces that server serves), else
the user config's, else `BEARAGENT_DATABASE_URL` alone in BearAgent's environment (PostgreSQL with that DSN), else
SQLite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.sandbox.settings import Problem
from bearagent.store.postgres.naming import SCHEMA_RE

StoreBackend = Literal["sqlite", "postgres"]
StoreLevel = Literal["workspace", "platform", "server"]
STORE_KEYS = ("backend", "dsn", "dsn_env", "schema", "pool_size", "pooler", "listen_dsn_env")
StorePooler = Literal["none", "transaction"]
LISTEN_DSN_ENV_EXAMPLE = "BEARAGENT_PG_DIRECT"
DEFAULT_DSN_ENV = "BEARAGENT_PG_DSN"
DATABASE_URL_ENV = "BEARAGENT_DATABASE_URL"
"""Set alone (no `store:` in the user or server config), it selects the PostgreSQL store it points at."""
MAX_POOL_SIZE = 64
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_REF_RE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
LITERAL_DSN_FIX = (
    f"write `dsn: ${{{DATABASE_URL_ENV}}}` and export {DATABASE_URL_ENV}='postgresql://USER:PASSWORD@HOST/DB'"
)


class StoreSettings(DomainModel):
    backend: StoreBackend = "sqlite"
    dsn_env: str = DEFAULT_DSN_ENV
    pg_schema: str | None = None
    """`schema:`; None: a schema per workspace, named from the hash of its path (as separate as state.db files)."""
    pool_size: int = Field(default=4, ge=1, le=MAX_POOL_SIZE)
    pooler: StorePooler = "none"
    """`transaction`: the DSN reaches PostgreSQL through a transaction-pooling pooler (PgBouncer's
    `pool_mode = transaction`): no prepared statements, session locks as leases, LISTEN only on `listen_dsn_env`."""
    listen_dsn_env: str | None = None
    """The environment variable holding a direct DSN for LISTEN (None: the store's DSN, or none behind a pooler)."""
    source: str | None = None
    """The config file that chose this store, or `environment (BEARAGENT_DATABASE_URL)` (None: the default)."""
    dsn_key: Literal["dsn", "dsn_env"] = "dsn_env"
    """Which key named the variable (what an error about it points at)."""
    refusal: tuple[str, str, str] | None = None
    """(error code, what is wrong, how to fix it) when this section cannot be used as written, e.g. `dsn:` holds a connection
    string instead of a `${VAR}` reference: the store is refused until it is fixed (the value itself is never kept)."""

    @property
    def where(self) -> str:
        """The file and key that chose the variable, for messages: `/home/u/.config/bearagent/config.yaml: store.dsn`."""
        if self.source is None:
            return "the default store settings"
        if self.source.startswith("environment"):
            return self.source
        return f"{self.source}: store.{self.dsn_key}"


def database_url_store(env: Mapping[str, str]) -> StoreSettings | None:
    """The store `BEARAGENT_DATABASE_URL` alone selects (PostgreSQL), when it is set and not empty."""
    if not env.get(DATABASE_URL_ENV):
        return None
    return StoreSettings(
        backend="postgres", dsn_env=DATABASE_URL_ENV, source=f"environment ({DATABASE_URL_ENV})", dsn_key="dsn"
    )


def choose_store(
    configured: StoreSettings, env: Mapping[str, str], *, server: StoreSettings | None = None
) -> StoreSettings:
    """The store that applies: the server config's, else the one the user config chose (`configured` merged from the
    config files: its `source` is None when none did), else `BEARAGENT_DATABASE_URL` alone, else SQLite."""
    if server is not None:
        return server
    if configured.source is not None:
        return configured
    return database_url_store(env) or configured


def parse_store(value: object, *, level: str) -> tuple[dict[str, object], list[Problem]]:
    """The valid keys of one file's `store:` section and the problems of the others. A workspace file's section is
    refused whole. A literal `dsn:` is a problem and marks the section refused (`literal_dsn`); no problem message
    ever quotes a DSN's value."""
    if value is None:
        return {}, []
    if level == "workspace":
        return {}, [
            Problem(
                "store",
                "can only be set in the user config (a workspace file must not choose where its runs are stored)",
                "move it to ~/.config/bearagent/config.yaml ($BEARAGENT_HOME/config.yaml) or the server config",
            )
        ]
    if not isinstance(value, dict):
        return {}, [
            Problem("store", "must be a mapping", "write `store: {backend: postgres, dsn_env: BEARAGENT_PG_DSN}`")
        ]
    out: dict[str, object] = {}
    problems: list[Problem] = []
    for key, item in cast(dict[str, object], value).items():
        where = f"store.{key}"
        if key == "backend":
            if item in ("sqlite", "postgres"):
                out["backend"] = item
            else:
                problems.append(
                    Problem(where, f"{item!r} is not a store backend", "write `backend: sqlite` or `postgres`")
                )
        elif key == "dsn":
            ref = _ENV_REF_RE.match(item) if isinstance(item, str) else None
            if ref is not None:
                out["dsn_env"] = ref.group(1)
                out["dsn_key"] = "dsn"
            else:
                what = (
                    "must be a reference to an environment variable, `${VAR}`: a connection string written in a "
                    "file may hold a password, so the store is refused until this is fixed"
                )
                out["refusal"] = ("literal_store_dsn", f"store.dsn {what}", LITERAL_DSN_FIX)
                problems.append(Problem(where, what, LITERAL_DSN_FIX))
        elif key in ("dsn_env", "listen_dsn_env"):
            if isinstance(item, str) and _ENV_NAME_RE.match(item):
                out[key] = item
            else:
                example = DEFAULT_DSN_ENV if key == "dsn_env" else LISTEN_DSN_ENV_EXAMPLE
                problems.append(
                    Problem(
                        where,
                        "must name an environment variable (the DSN itself never goes in a file)",
                        f"write `{key}: {example}` and export {example}=postgresql://...",
                    )
                )
        elif key == "schema":
            if isinstance(item, str) and SCHEMA_RE.match(item):
                out["pg_schema"] = item
            else:
                problems.append(
                    Problem(where, f"{item!r} is not a plain schema name", "use lower-case letters, digits and '_'")
                )
        elif key == "pool_size":
            if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= MAX_POOL_SIZE:
                out["pool_size"] = item
            else:
                problems.append(Problem(where, f"must be an integer from 1 to {MAX_POOL_SIZE}", "write `pool_size: 4`"))
        elif key == "pooler":
            if item in ("none", "transaction"):
                out["pooler"] = item
            else:
                problems.append(
                    Problem(
                        where,
                        f"{item!r} is not a pooler mode",
                        "write `pooler: transaction` (PgBouncer's pool_mode = transaction) or `pooler: none`",
                    )
                )
        else:
            problems.append(
                Problem(where, f"unknown key {key!r}", f"known keys: {', '.join(STORE_KEYS)}", severity="warning")
            )
    named = cast(dict[str, object], value)
    if isinstance(named.get("dsn"), str) and isinstance(named.get("dsn_env"), str) and "refusal" not in out:
        ref = _ENV_REF_RE.match(cast(str, named["dsn"]))
        if ref is not None and ref.group(1) != named["dsn_env"]:
            what = "store.dsn and store.dsn_env name different variables"
            fix = "keep one of them"
            out["refusal"] = ("conflicting_store_dsn", what, fix)
            problems.append(Problem("store.dsn", "and store.dsn_env name different variables", fix))
    return out, problems

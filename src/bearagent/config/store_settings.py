"""`store:` of the user's config.yaml: where a workspace's runs, sessions and locks are kept.

The backend is the user's (or a server's) choice, never a workspace file's: a cloned repository must not be able to
send its runs (prompts, tool output, file contents) to a database of its choosing, nor read the runs of another
project there. So `store:` in a workspace's config.yaml is refused with an error and the default applies. The DSN
itself (it may hold a password) is never written in a file: `dsn_env` names the environment variable that holds it,
read from BearAgent's own environment (never from a settings file's `env`).

    store:
      backend: postgres            # sqlite (default: <workspace>/.bearagent/state.db) | postgres
      dsn_env: BEARAGENT_PG_DSN    # the variable holding the libpq DSN or postgresql:// URL (this is the default)
      schema: team_docs            # optional; default: one schema per workspace (bearagent_<hash of its path>)
      pool_size: 4                 # optional; connections per process and store (1..64)
"""

from __future__ import annotations

import re
from typing import Literal, cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.sandbox.settings import Problem
from bearagent.store.postgres.naming import SCHEMA_RE

StoreBackend = Literal["sqlite", "postgres"]
STORE_KEYS = ("backend", "dsn_env", "schema", "pool_size")
DEFAULT_DSN_ENV = "BEARAGENT_PG_DSN"
MAX_POOL_SIZE = 64
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class StoreSettings(DomainModel):
    backend: StoreBackend = "sqlite"
    dsn_env: str = DEFAULT_DSN_ENV
    pg_schema: str | None = None
    """`schema:`; None: a schema per workspace, named from the hash of its path (as separate as state.db files)."""
    pool_size: int = Field(default=4, ge=1, le=MAX_POOL_SIZE)
    source: str | None = None
    """The config file that chose this store (None: the default)."""


def parse_store(value: object, *, level: str) -> tuple[dict[str, object], list[Problem]]:
    """The valid keys of one file's `store:` section and the problems of the others. A workspace file's section is
    refused whole."""
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
        elif key == "dsn_env":
            if isinstance(item, str) and _ENV_NAME_RE.match(item):
                out["dsn_env"] = item
            else:
                problems.append(
                    Problem(
                        where,
                        "must name an environment variable (the DSN itself never goes in a file)",
                        f"write `dsn_env: {DEFAULT_DSN_ENV}` and export {DEFAULT_DSN_ENV}=postgresql://...",
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
        else:
            problems.append(
                Problem(where, f"unknown key {key!r}", f"known keys: {', '.join(STORE_KEYS)}", severity="warning")
            )
    return out, problems

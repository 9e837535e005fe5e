"""Names of the PostgreSQL store that config checks need without importing psycopg (its import costs a CLI start
on SQLite ~0.2 s): the schema name rule and the default schema."""

from __future__ import annotations

import re

DEFAULT_SCHEMA = "bearagent"
SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
"""A plain, unquoted PostgreSQL name: the schema goes into SQL as an identifier, never as text."""

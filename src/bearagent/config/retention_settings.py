"""`retention:` of the user's config.yaml: how long runs are kept by default and when the store is big enough to
mention (`bearagent db prune`, `bearagent doctor`; docs/observability.md#retention).

    retention:
      keep_days: 90        # `db prune` without --older-than removes finished runs older than this (default: none,
                           # so `db prune` needs --older-than)
      warn_size: 2GB       # `doctor` warns when the store is larger (default 1GB; units B, KB, MB, GB, TB: 1000s)

User config only: a workspace file must not decide how much of the user's history is deleted, so `retention:` in a
workspace's config.yaml is refused with an error (and the user's settings apply).
"""

from __future__ import annotations

import re
from typing import cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.sandbox.problems import Problem

DEFAULT_WARN_BYTES = 1_000_000_000
MAX_KEEP_DAYS = 100_000
RETENTION_KEYS = ("keep_days", "warn_size")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB)?\s*$", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


class RetentionSettings(DomainModel):
    keep_days: int | None = Field(default=None, ge=1, le=MAX_KEEP_DAYS)
    warn_size_bytes: int = Field(default=DEFAULT_WARN_BYTES, ge=1)
    source: str | None = None
    """The config file that set `retention:` (None: the defaults)."""


def parse_size(value: object) -> int | None:
    """`2GB`, `500 MB`, `1.5GB`, or a plain number of bytes; None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    found = _SIZE.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    size = int(float(found.group(1)) * _UNITS[(found.group(2) or "B").upper()])
    return size if size > 0 else None


def parse_retention(value: object, *, level: str) -> tuple[dict[str, object], list[Problem]]:
    """The valid keys of one file's `retention:` section and the problems of the others; a workspace file's section
    is refused whole."""
    if value is None:
        return {}, []
    if level == "workspace":
        return {}, [
            Problem(
                "retention",
                "can only be set in the user config (a repository must not decide how much of your run history is "
                "deleted)",
                "move it to ~/.config/bearagent/config.yaml ($BEARAGENT_HOME/config.yaml)",
            )
        ]
    if not isinstance(value, dict):
        return {}, [Problem("retention", "must be a mapping", "write `retention: {keep_days: 90, warn_size: 2GB}`")]
    out: dict[str, object] = {}
    problems: list[Problem] = []
    for key, item in cast(dict[str, object], value).items():
        where = f"retention.{key}"
        if key == "keep_days":
            if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= MAX_KEEP_DAYS:
                out["keep_days"] = item
            else:
                problems.append(
                    Problem(where, f"must be a whole number of days, 1 to {MAX_KEEP_DAYS}", "write `keep_days: 90`")
                )
        elif key == "warn_size":
            size = parse_size(item)
            if size is None:
                problems.append(Problem(where, "must be a size such as 500MB or 2GB", "write `warn_size: 2GB`"))
            else:
                out["warn_size_bytes"] = size
        else:
            problems.append(
                Problem(where, f"unknown key {key!r}", f"use one of: {', '.join(RETENTION_KEYS)}", severity="warning")
            )
    return out, problems

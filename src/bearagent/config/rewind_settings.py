"""`rewind:` of the user's config.yaml: the limits of the blob store that keeps the contents of the files runs change
(docs/rewind.md).

    rewind:
      max_file_size: 16MiB    # a file larger than this is recorded by its hash only, "not restorable" (default 16MiB)
      max_store_size: 1GiB    # a content that would take the store over this is recorded by hash only (default 1GiB)

Sizes: a number of bytes, or with a unit: B, KB, MB, GB, TB (1000s) or KiB, MiB, GiB, TiB (1024s).

User config only: a workspace is what the capture protects the user from, so a workspace file must neither raise
nor lower the limits (raised, a repository could fill the disk; lowered, it could make its changes unrestorable).
`rewind:` in a workspace's config.yaml is refused with an error and the user's settings apply.
"""

from __future__ import annotations

import re
from typing import cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.rewind.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_STORE_BYTES
from bearagent.sandbox.problems import Problem

REWIND_KEYS = ("max_file_size", "max_store_size")
MAX_BYTES = 1 << 50
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*$", re.IGNORECASE)
_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 1 << 10,
    "MIB": 1 << 20,
    "GIB": 1 << 30,
    "TIB": 1 << 40,
}


class RewindSettings(DomainModel):
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1, le=MAX_BYTES)
    max_store_bytes: int = Field(default=DEFAULT_MAX_STORE_BYTES, ge=1, le=MAX_BYTES)
    source: str | None = None
    """The config file that set `rewind:` (None: the defaults)."""


def _size(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value <= MAX_BYTES else None
    found = _SIZE.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    size = int(float(found.group(1)) * _UNITS[(found.group(2) or "B").upper()])
    return size if 0 < size <= MAX_BYTES else None


def parse_rewind(value: object, *, level: str) -> tuple[dict[str, object], list[Problem]]:
    """The valid keys of one file's `rewind:` section and the problems of the others; a workspace file's section is
    refused whole."""
    if value is None:
        return {}, []
    if level == "workspace":
        return {}, [
            Problem(
                "rewind",
                "can only be set in the user config (a repository must not decide how much of its changes can be "
                "taken back, nor how much disk the store of their contents takes)",
                "move it to ~/.config/bearagent/config.yaml ($BEARAGENT_HOME/config.yaml)",
            )
        ]
    if not isinstance(value, dict):
        return {}, [
            Problem("rewind", "must be a mapping", "write `rewind: {max_file_size: 16MiB, max_store_size: 1GiB}`")
        ]
    out: dict[str, object] = {}
    problems: list[Problem] = []
    for key, item in cast(dict[str, object], value).items():
        where = f"rewind.{key}"
        if key in REWIND_KEYS:
            size = _size(item)
            if size is None:
                problems.append(
                    Problem(
                        where,
                        "must be a size such as 16MiB, 500MB or 2GiB (above 0, at most 1PiB)",
                        f"write `{key}: 16MiB`",
                    )
                )
            else:
                out[key.replace("_size", "_bytes")] = size
        else:
            problems.append(
                Problem(where, f"unknown key {key!r}", f"use one of: {', '.join(REWIND_KEYS)}", severity="warning")
            )
    return out, problems

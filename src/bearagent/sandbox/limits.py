"""`sandbox.limits` (user config only): the per-call process, memory and file-size limits and their parsing. They
are applied inside the sandbox by `_limits.py` (docs/sandbox.md, "Limits")."""

from __future__ import annotations

import re
from typing import cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.sandbox.problems import Problem


class SandboxLimits(DomainModel):
    """Per-call resource limits inside the sandbox, applied to every process of the call (`sandbox.limits`): at most
    `processes` processes (and threads) at once, `memory` bytes of data (heap) and `file_size` bytes per written
    file for each process. None: no limit."""

    processes: int | None = Field(default=1024, ge=8)
    memory: int | None = Field(default=8 << 30, ge=16 << 20)
    file_size: int | None = Field(default=16 << 30, ge=1 << 20)


_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgGtT]?)i?[bB]?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: object) -> int | None:
    """`4G`, `512M`, `1048576` as bytes; None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match:
            return int(match.group(1)) * _UNITS[match.group(2).lower()]
    return None


def parse_limits(item: object) -> tuple[dict[str, int | None] | None, list[Problem]]:
    """One file's `sandbox.limits` value: the limits it sets (None when it sets none) and the problems."""
    problems: list[Problem] = []
    where = "sandbox.limits"
    fix = "write `limits: {processes: 512, memory: 4G, file_size: 4G}` (or `off` for a limit, `limits: off` for none)"
    if item in ("off", False):
        return {"processes": None, "memory": None, "file_size": None}, problems
    if not isinstance(item, dict):
        problems.append(Problem(where, "must be a mapping or `off`", fix))
        return None, problems
    out: dict[str, int | None] = {}
    floors = {"processes": 8, "memory": 16 << 20, "file_size": 1 << 20}
    for key, value in cast(dict[object, object], item).items():
        name = str(key)
        if name not in floors:
            problems.append(Problem(f"{where}.{name}", "unknown limit", "known limits: processes, memory, file_size"))
            continue
        if value in ("off", False):
            out[name] = None
            continue
        number = value if name == "processes" and isinstance(value, int) and not isinstance(value, bool) else None
        if name != "processes":
            number = parse_size(value)
        if number is None or number < floors[name]:
            problems.append(
                Problem(f"{where}.{name}", f"{value!r} is not a valid limit (at least {floors[name]})", fix)
            )
            continue
        out[name] = number
    return out, problems

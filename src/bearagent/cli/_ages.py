"""Ages and points in time as the CLI takes them (`runs search --since 7d`, `db prune --older-than 30d`): a count
with a unit (`90m`, `12h`, `7d`, `2w`), or an ISO date or time (`2026-11-01`, `2026-11-01T09:30`, UTC unless it says
otherwise)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_AGE = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


class AgeError(ValueError):
    pass


def parse_age(text: str) -> timedelta:
    """`7d` as seven days; `AgeError` naming the accepted forms otherwise."""
    found = _AGE.match(text)
    if found is None:
        raise AgeError(f"{text!r} is not an age: write a number and a unit, m (minutes), h, d or w, e.g. 30d")
    return int(found.group(1)) * _UNITS[found.group(2)]


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """A point in time: `now` minus an age (`7d`), or an ISO date/time (UTC when it names no offset)."""
    if _AGE.match(text):
        return (now or datetime.now(UTC)) - parse_age(text)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise AgeError(
            f"{text!r} is neither an age nor a date: write e.g. 7d, 12h, or 2026-11-01 (ISO, UTC unless it has an offset)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)

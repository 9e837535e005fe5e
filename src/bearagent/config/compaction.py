"""`compaction:` (config.yaml, and `policy.compaction` in an agent file): one parser for both, strict per field.
A bad value is reported with its field (`compaction.threshold`) and what to write, and that field falls back to
the next source; the other fields still apply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from bearagent.config.files import did_you_mean
from bearagent.domain.specs import CompactionSettings

COMPACTION_KEYS = ("enabled", "threshold", "model", "keep_recent_turns")


@dataclass(frozen=True, slots=True)
class CompactionProblem:
    severity: str
    """`error` (a bad value, ignored) or `warning` (an unknown key, ignored)."""
    field: str
    message: str
    fix: str


def parse_compaction(value: object, prefix: str) -> tuple[CompactionSettings, list[CompactionProblem]]:
    """The settings `value` holds and the problems of the fields that were left out. `prefix` names the section
    in messages (`compaction`, `policy.compaction`)."""
    problems: list[CompactionProblem] = []
    if value is None:
        return CompactionSettings(), problems
    if not isinstance(value, Mapping):
        problems.append(
            CompactionProblem(
                "error",
                prefix,
                f"{prefix} must be a mapping, got {type(value).__name__}; it is ignored",
                f"write `{prefix.rsplit('.', 1)[-1]}: {{threshold: 0.8, keep_recent_turns: 2}}`",
            )
        )
        return CompactionSettings(), problems
    fields: dict[str, object] = {}
    for key, item in cast(Mapping[str, object], value).items():
        field = f"{prefix}.{key}"
        if key not in COMPACTION_KEYS:
            guess = did_you_mean(str(key), COMPACTION_KEYS)
            problems.append(
                CompactionProblem(
                    "warning",
                    field,
                    f"unknown key {field!r}" + (f" (did you mean {guess!r}?)" if guess else "") + "; it is ignored",
                    f"rename it to {guess!r}" if guess else f"known keys: {', '.join(COMPACTION_KEYS)}",
                )
            )
            continue
        problem = _check(key, item)
        if problem is not None:
            message, fix = problem
            problems.append(CompactionProblem("error", field, f"{field}: {message}; it is ignored", fix))
            continue
        fields[key] = float(item) if key == "threshold" else item  # pyright: ignore[reportArgumentType]
    return CompactionSettings.model_validate(fields), problems


def _check(key: str, item: object) -> tuple[str, str] | None:
    """(what is wrong, how to fix it), or None when `item` is a valid value of `key`."""
    if key == "enabled":
        return None if isinstance(item, bool) else (f"must be true or false, got {item!r}", "write `enabled: true`")
    if key == "threshold":
        ok = isinstance(item, int | float) and not isinstance(item, bool) and 0 < float(item) <= 1
        return None if ok else (f"must be a number above 0 and at most 1, got {item!r}", "write `threshold: 0.8`")
    if key == "model":
        if isinstance(item, str) and item.strip() and len(item) <= 256:
            return None
        return f"must be a model entry name, got {item!r}", "write `model: <entry name>` (or leave it out)"
    ok = isinstance(item, int) and not isinstance(item, bool) and 0 <= item <= 1_000
    return None if ok else (f"must be a whole number from 0 to 1000, got {item!r}", "write `keep_recent_turns: 2`")

"""Maps that keep their latest entries only: what a long-lived process remembers per run, session or lane (a run's
starting subject, a session's caller, its git facts, a run's last committed status, the lanes a worker served) is
bounded, the entry remembered longest ago forgotten first. A `dict` keeps insertion order, so the oldest entry is
its first."""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(mapping: dict[K, V], key: K, value: V, limit: int) -> V:
    """Keep `value` under `key` as `mapping`'s latest entry (moved last if `key` was there), forgetting the oldest
    entries beyond `limit`; returns `value`."""
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > limit:
        del mapping[next(iter(mapping))]
    return value

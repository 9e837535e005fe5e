"""What pruning the run log means (`bearagent db prune`; docs/observability.md#retention): which runs may go and
what a prune reports. Both stores apply these rules alike (`store/retention.py`, `store/postgres/retention.py`).

A run is pruned with its whole tree (its subagents' runs) when its top-level run ended (`succeeded`, `failed`,
`cancelled`) before the cut-off, no run of the tree is pinned, and no run of the tree is still active. Runs that
can still continue (`queued`, `running`, `waiting`, `interrupted`) are never pruned, whatever their age.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

PRUNABLE_STATUSES = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class PruneResult:
    run_ids: tuple[str, ...]
    """Every run removed (top-level runs and their subagents' runs)."""
    top_level: int
    events: int
    event_bytes: int
    """The size of the removed events' payloads (what the log held of them)."""
    tool_call_ids: tuple[str, ...]
    """The removed runs' tool calls (their spilled results, `.bearagent/tool-results/<id>.txt`, go too)."""
    kept_pinned: int
    """Top-level runs old enough that were kept because a run of their tree is pinned."""


@dataclass(frozen=True, slots=True)
class PruneChoice:
    run_ids: tuple[str, ...]
    """Every run to remove (whole trees)."""
    top_level: int
    kept_pinned: int


def choose_prunable(rows: Iterable[tuple[str, str, bool, str]]) -> PruneChoice:
    """From (top-level run, member run, member pinned, member status) of every tree whose top-level run ended
    before the cut-off, the trees that may go: none of their runs pinned or still able to continue."""
    trees: dict[str, list[str]] = {}
    held: set[str] = set()
    pinned: set[str] = set()
    for root, run_id, pin, status in rows:
        trees.setdefault(root, []).append(run_id)
        if pin:
            pinned.add(root)
        if status not in PRUNABLE_STATUSES:
            held.add(root)
    kept = pinned | held
    gone = [root for root in trees if root not in kept]
    return PruneChoice(tuple(run for root in gone for run in trees[root]), len(gone), len(pinned - held))

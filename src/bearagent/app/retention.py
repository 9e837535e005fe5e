"""`bearagent db prune`: remove old finished runs from a workspace's store (`domain/retention.py` says which) and
the tool results they spilled beside it (`.bearagent/tool-results/<tool call>.txt`, `tools/spill.py`), and say how
much that freed. The store's rows go in one transaction first; the spilled files after (a crash between leaves
files no run names, which the next prune of the same runs cannot find: they are only disk space, never a wrong
answer). Files are removed through the state directory's checked file descriptors: nothing under `.bearagent/` is
followed through a symlink."""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from datetime import datetime

from bearagent.domain.retention import PruneResult
from bearagent.ports import WorkspaceStore
from bearagent.runtime.state_files import open_state_dir
from bearagent.tools.spill import SPILL_SUBDIR
from bearagent.workspace import LoadedWorkspace


@dataclass(frozen=True, slots=True)
class PruneReport:
    result: PruneResult
    files: int
    file_bytes: int
    dry_run: bool
    blobs: int = 0
    blob_bytes: int = 0

    @property
    def freed_bytes(self) -> int:
        return self.result.event_bytes + self.file_bytes + self.blob_bytes


BLOB_GRACE_SECONDS = 3600.0
"""A blob younger than this is kept even when no run names it yet: a call still running may have just stored it."""


def prune_workspace(loaded: LoadedWorkspace, store: WorkspaceStore, before: datetime, *, dry_run: bool) -> PruneReport:
    result = store.prune_runs(before, dry_run=dry_run)
    files, size = _spilled(loaded, result.tool_call_ids, remove=not dry_run)
    blobs, blob_bytes = _unreferenced_blobs(loaded, store, set(result.run_ids) if dry_run else set(), dry_run)
    return PruneReport(result, files, size, dry_run, blobs, blob_bytes)


def _unreferenced_blobs(
    loaded: LoadedWorkspace, store: WorkspaceStore, pruned: set[str], dry_run: bool
) -> tuple[int, int]:
    """Rewind's blobs (`.bearagent/blobs/`, docs/rewind.md) that neither a kept run's file changes nor the capture's
    index (the current state of the tree) name, older than `BLOB_GRACE_SECONDS`: removed (or, `dry_run`, counted
    as if `pruned` were gone)."""
    from bearagent.rewind.capture import blob_store, capture_for
    from bearagent.rewind.restore import blobs_of

    blobs = blob_store(loaded.root)
    if not blobs.root.is_dir():
        return 0, 0
    keep = capture_for(loaded.root).referenced()
    for run in store.list_runs(limit=10_000_000):
        if str(run.run_id) not in pruned:
            keep |= blobs_of(store.read_events(run.run_id))
    return blobs.sweep(keep, grace_seconds=BLOB_GRACE_SECONDS, remove=not dry_run)


def _spilled(loaded: LoadedWorkspace, tool_call_ids: tuple[str, ...], *, remove: bool) -> tuple[int, int]:
    if not tool_call_ids:
        return 0, 0
    try:
        dfd = open_state_dir(loaded.state_dir, SPILL_SUBDIR, create=False)
    except (FileNotFoundError, NotADirectoryError):
        return 0, 0
    files = total = 0
    try:
        for call_id in tool_call_ids:
            name = f"{call_id}.txt"
            if "/" in name or name.startswith("."):
                continue  # ids are UUIDs; anything else never names a file here
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            files += 1
            total += st.st_size
            if remove:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)
    return files, total

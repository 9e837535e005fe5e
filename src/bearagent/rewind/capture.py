"""Capturing a tool call's file changes: a scan of the workspace before and after the call.

The index (`.bearagent/rewind/index.json`) is the last known state of every path: its metadata and its recorded
`FileState` (content in the blob store). Before a call the tree is scanned and only paths whose metadata differ from
the index are read and stored (the first call of a workspace stores the whole tree once); after it, a second scan
names what changed, each change recorded with the state it replaced. Write, Edit, MultiEdit, NotebookEdit and Bash
(in or out of the sandbox) go through the same capture, so a change is recorded however it was made.

A marker (`pending.json`) is written before a call and removed once its changes are recorded: if the process dies
during the call (kill -9), the next capture in the workspace records the changes it finds against the index for
the dead call (`late`), and `bearagent rewind` reports them; they are never absorbed silently.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from bearagent.domain.run_events import FileChange, FilesChangedV1, FileState
from bearagent.rewind.tree import SKIPPED_DIRS, BlobStore, Meta, TreeTooLarge, capture_state, same, scan

CAPTURED_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})
MAX_CHANGES = 10_000
INDEX_VERSION = 2


def state_root(workspace_root: Path) -> Path:
    return workspace_root / ".bearagent"


def blob_store(workspace_root: Path) -> BlobStore:
    return BlobStore(state_root(workspace_root) / "blobs")


class WorkspaceCapture:
    """The capture of one workspace (one per process and root: `capture_for`)."""

    def __init__(self, root: Path, blobs: BlobStore | None = None) -> None:
        self.root = root
        self.blobs = blobs or blob_store(root)
        self._dir = state_root(root) / "rewind"
        self._index: dict[str, tuple[Meta, FileState]] | None = None
        self._lock = threading.Lock()

    # ---- index -------------------------------------------------------------------------------------------------

    def _load(self) -> dict[str, tuple[Meta, FileState]]:
        if self._index is not None:
            return self._index
        index: dict[str, tuple[Meta, FileState]] = {}
        try:
            raw: Any = json.loads((self._dir / "index.json").read_text(encoding="utf-8"))
            if isinstance(raw, dict) and cast(dict[str, Any], raw).get("version") == INDEX_VERSION:
                rows = cast(dict[str, list[Any]], cast(dict[str, Any], raw)["paths"])
                for path, (kind, mode, size, mtime, ino, target, ssize, sha, restorable) in rows.items():
                    state = FileState.model_construct(
                        kind=kind, mode=mode, size=ssize, sha256=sha, target=target, restorable=restorable
                    )
                    index[path] = (Meta(kind, mode, size, mtime, ino, target), state)
        except (OSError, ValueError, TypeError, KeyError):
            index = {}  # a missing or damaged index only costs a full re-read of the tree
        self._index = index
        return index

    def _save(self) -> None:
        index = self._load()
        self._dir.mkdir(parents=True, exist_ok=True)
        paths = {
            p: [m.kind, m.mode, m.size, m.mtime_ns, m.ino, m.target, s.size, s.sha256, s.restorable]
            for p, (m, s) in index.items()
        }
        tmp = self._dir / f".index.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"version": INDEX_VERSION, "paths": paths}), encoding="utf-8")
        tmp.replace(self._dir / "index.json")

    def _sync(self, scanned: Mapping[str, Meta]) -> tuple[dict[str, tuple[FileState | None, FileState | None]], bool]:
        """Bring the index to `scanned`; return the paths that differed (old state, new state)."""
        index = self._load()
        diff: dict[str, tuple[FileState | None, FileState | None]] = {}
        for path, meta in scanned.items():
            known = index.get(path)
            if known is not None and same(known[0], meta):
                continue
            state = capture_state(self.root, path, meta, self.blobs)
            if state is None:
                continue
            index[path] = (meta, state)
            old = known[1] if known is not None else None
            if old is None or old != state:
                diff[path] = (old, state)
        for path in [p for p in index if p not in scanned]:
            diff[path] = (index.pop(path)[1], None)
        return diff, bool(diff)

    # ---- a call ------------------------------------------------------------------------------------------------

    def pending(self) -> dict[str, str] | None:
        """The call a dead process was making when it stopped (its changes not yet recorded), if any."""
        try:
            raw: Any = json.loads((self._dir / "pending.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict):
            return None
        return {str(k): str(v) for k, v in cast(dict[str, Any], raw).items()}

    def before(
        self, run_id: str, tool_call_id: str, tool_name: str
    ) -> tuple[Mapping[str, Meta] | None, FilesChangedV1 | None]:
        """Scan before a call. Returns the scan (None: the tree is over the scan limit) and, when a previous call
        died mid-way, the changes found for it (to be recorded, late)."""
        with self._lock:
            late: FilesChangedV1 | None = None
            stale = self.pending()
            try:
                scanned = scan(self.root)
            except TreeTooLarge:
                return None, None
            if stale is not None and self._index is None and not (self._dir / "index.json").exists():
                stale = None
            diff, dirty = self._sync(scanned)
            if stale is not None:
                late = _event(
                    diff,
                    stale.get("tool_call_id"),
                    stale.get("tool_name", "unknown") or "unknown",
                    note=(
                        f"recorded late: the process running this call (run {stale.get('run_id', '?')}) stopped "
                        "before recording its changes; these are the differences found afterwards, and may include "
                        "changes made outside BearAgent meanwhile"
                    ),
                )
            if dirty or stale is not None:
                self._save()
            self._dir.mkdir(parents=True, exist_ok=True)
            (self._dir / "pending.json").write_text(
                json.dumps({"run_id": run_id, "tool_call_id": tool_call_id, "tool_name": tool_name}), encoding="utf-8"
            )
            return scanned, late

    def after(self, tool_call_id: str, tool_name: str) -> FilesChangedV1:
        """Scan after a call: what it changed, each with the state it replaced."""
        with self._lock:
            try:
                scanned = scan(self.root)
            except TreeTooLarge as exc:
                (self._dir / "pending.json").unlink(missing_ok=True)
                return _event({}, tool_call_id, tool_name, note=f"not captured: {exc}")
            diff, dirty = self._sync(scanned)
            if dirty:
                self._save()
            (self._dir / "pending.json").unlink(missing_ok=True)
            return _event(diff, tool_call_id, tool_name)

    def paths_of(self, arguments: Mapping[str, object]) -> list[str] | None:
        """The workspace paths a file tool's arguments name (`file_path`, `notebook_path`) with their parent
        directories, relative to the root; None when the call names none inside the workspace (a full scan then)."""
        value = arguments.get("file_path", arguments.get("notebook_path"))
        if not isinstance(value, str) or not value or "\0" in value:
            return None
        path = Path(value).expanduser()
        path = path if path.is_absolute() else self.root / path
        try:
            rel = Path(os.path.normpath(path)).relative_to(self.root)
        except ValueError:
            return None
        parts = rel.parts
        if not parts or parts[0] in SKIPPED_DIRS or ".." in parts:
            return None
        return ["/".join(parts[: i + 1]) for i in range(len(parts))]

    def _stat(self, rel: str) -> Meta | None:
        path = self.root / rel
        try:
            st = path.lstat()
        except OSError:
            return None
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            return Meta("symlink", stat.S_IMODE(mode), 0, st.st_mtime_ns, st.st_ino, os.readlink(path))
        if stat.S_ISDIR(mode):
            return Meta("dir", stat.S_IMODE(mode), 0, st.st_mtime_ns, st.st_ino)
        if stat.S_ISREG(mode):
            return Meta("file", stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ino)
        return None

    def _sync_paths(self, rels: list[str]) -> dict[str, tuple[FileState | None, FileState | None]]:
        index = self._load()
        diff: dict[str, tuple[FileState | None, FileState | None]] = {}
        for rel in rels:
            meta = self._stat(rel)
            known = index.get(rel)
            if meta is None:
                if known is not None:
                    diff[rel] = (index.pop(rel)[1], None)
                continue
            if known is not None and same(known[0], meta):
                continue
            state = capture_state(self.root, rel, meta, self.blobs)
            if state is None:
                continue
            index[rel] = (meta, state)
            old = known[1] if known is not None else None
            if old != state:
                diff[rel] = (old, state)
        return diff

    def before_paths(self, run_id: str, tool_call_id: str, tool_name: str, rels: list[str]) -> None:
        """Before a file tool's call: only the paths it names (and their parents) are read, not the tree."""
        with self._lock:
            if self._sync_paths(rels):
                self._save()
            self._dir.mkdir(parents=True, exist_ok=True)
            (self._dir / "pending.json").write_text(
                json.dumps({"run_id": run_id, "tool_call_id": tool_call_id, "tool_name": tool_name}), encoding="utf-8"
            )

    def after_paths(self, tool_call_id: str, tool_name: str, rels: list[str]) -> FilesChangedV1:
        with self._lock:
            diff = self._sync_paths(rels)
            if diff:
                self._save()
            (self._dir / "pending.json").unlink(missing_ok=True)
            return _event(diff, tool_call_id, tool_name)

    def forget(self) -> None:
        """Drop the in-memory index (after a rewind changed the tree, the next scan re-reads what differs)."""
        with self._lock:
            self._index = None


def _event(
    diff: Mapping[str, tuple[FileState | None, FileState | None]],
    tool_call_id: str | None,
    tool_name: str,
    note: str | None = None,
) -> FilesChangedV1:
    changes = [FileChange(path=p, before=b, after=a) for p, (b, a) in sorted(diff.items())]
    return FilesChangedV1.model_validate(
        {
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "changes": changes[:MAX_CHANGES],
            "unrecorded": max(0, len(changes) - MAX_CHANGES),
            "note": note,
        }
    )


_CAPTURES: dict[Path, WorkspaceCapture] = {}
_CAPTURES_LOCK = threading.Lock()


def capture_for(root: Path) -> WorkspaceCapture:
    """The process's capture of the workspace at `root`."""
    key = root.resolve()
    with _CAPTURES_LOCK:
        found = _CAPTURES.get(key)
        if found is None:
            found = _CAPTURES[key] = WorkspaceCapture(key)
        return found

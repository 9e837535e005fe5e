"""Capturing a tool call's file changes: a look at the workspace before and after the call.

The index (`.bearagent/rewind/index.json`, plus `journal.jsonl`: a line per path changed since) is the last known
state of every path: its metadata and its recorded `FileState` (content in the blob store). The first look of a
process scans the whole tree (metadata only: only paths whose metadata differ from the index are read and stored;
the first call of a workspace stores the whole tree once) and puts an inotify watch on every directory
(`rewind/watch.py`); later looks stat only the paths the watches name. Before a call, what changed since (outside
BearAgent) is taken into the index without being recorded; after it, what changed is the call's, each change
recorded with the state it replaced. Write, Edit, MultiEdit, NotebookEdit and Bash
(in or out of the sandbox) go through the same capture, so a change is recorded however it was made.

A marker per call (`pending/<pid>-<start>-<call>.json`, `rewind/markers.py`, which owns the naming and liveness
rule) is written before a call and removed once its changes are recorded: if the process dies during the call
(kill -9), the next capture in the workspace records the changes it finds against the index for the dead call
(`late`), and `bearagent rewind` reports them; they are never absorbed silently. Changes another process's live
call made while this one ran are recorded with this call and noted in that call's `.absorbed.jsonl`, so that its
late record, should it die, names where they went.

Why it is over 400 lines: one workspace's capture is one index under one lock. Its persistence (the file and the
journal), the two ways of bringing it to the tree (the watched paths, the full scan), the marker of a call in flight
and the late record of a dead one all read and change that same in-memory index under that lock; split apart, each
part would reach into the others' state.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import threading
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, cast

from bearagent.domain.ids import ToolCallId
from bearagent.domain.run_events import FileChange, FilesChangedV1, FileState
from bearagent.rewind import markers
from bearagent.rewind.tree import SKIPPED_DIRS, BlobStore, Meta, TreeTooLarge, capture_state, same, scan
from bearagent.rewind.watch import Watcher, new_watcher

CAPTURED_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})
MAX_CHANGES = 10_000
INDEX_VERSION = 2
JOURNAL_LINES = 5_000
"""The journal (`journal.jsonl`, a line per path changed since) is folded into `index.json` beyond this many lines."""


def state_root(workspace_root: Path) -> Path:
    return workspace_root / ".bearagent"


def blob_store(workspace_root: Path) -> BlobStore:
    return BlobStore(state_root(workspace_root) / "blobs")


class WorkspaceCapture:
    """The capture of one workspace (one per process and root: `capture_for`)."""

    def __init__(self, root: Path, blobs: BlobStore | None = None, *, watch: bool = True) -> None:
        self.root = root
        self.blobs = blobs or blob_store(root)
        self._dir = state_root(root) / "rewind"
        self._index: dict[str, tuple[Meta, FileState]] | None = None
        self._journal_lines = 0
        self._torn = False
        self._lock = threading.Lock()
        self._watch = watch
        self._watcher: Watcher | None = None
        self._trusted = False
        """Whether the index is the tree as it is but for the paths named by the watcher's queued events."""
        self._linked: set[str] = set()
        """Files with more than one hard link: a write through another name (maybe outside the workspace) raises
        no event for this one, so each watched look `lstat`s them all."""
        self._in_flight: set[str] = set()
        """Tool calls of this process between their look before and after (their marker is not a dead call's)."""
        self._running: dict[str, str] = {}
        """The run of each call in flight."""
        self._settling: list[markers.Marker] = []
        """The dead calls whose changes `settle` returned, until `settled` removes their markers."""

    def set_limits(self, max_file_bytes: int, max_store_bytes: int) -> None:
        """The blob store's limits, from the user config (`rewind:`; a workspace's config cannot set them)."""
        self.blobs.max_file_bytes = max_file_bytes
        self.blobs.max_store_bytes = max_store_bytes

    # ---- index -------------------------------------------------------------------------------------------------

    def _load(self) -> dict[str, tuple[Meta, FileState]]:
        if self._index is not None:
            return self._index
        index: dict[str, tuple[Meta, FileState]] = {}
        try:
            raw: Any = json.loads((self._dir / "index.json").read_text(encoding="utf-8"))
            if isinstance(raw, dict) and cast(dict[str, Any], raw).get("version") == INDEX_VERSION:
                rows = cast(dict[str, list[Any]], cast(dict[str, Any], raw)["paths"])
                for path, row in rows.items():
                    index[path] = _unrow(row)
        except (OSError, ValueError, TypeError, KeyError):
            index = {}  # a missing or damaged index only costs a full re-read of the tree
        self._journal_lines = 0
        if index:
            index = self._replay(index)
        self._index = index
        return index

    def _replay(self, index: dict[str, tuple[Meta, FileState]]) -> dict[str, tuple[Meta, FileState]]:
        """The journal's lines (`[path, row]`, or `[path, null]` for a path gone) over the index; a damaged line
        (a process killed while writing it) is skipped: that path's metadata then differs and it is read again."""
        try:
            text = (self._dir / "journal.jsonl").read_text(encoding="utf-8")
        except (OSError, ValueError):
            return index
        self._torn = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            self._journal_lines += 1
            try:
                path, row = json.loads(line)
                if row is None:
                    index.pop(str(path), None)
                else:
                    index[str(path)] = _unrow(row)
            except (ValueError, TypeError, KeyError):
                continue
        return index

    def _save(self) -> None:
        index = self._load()
        self._dir.mkdir(parents=True, exist_ok=True)
        paths = {p: _row(m, s) for p, (m, s) in index.items()}
        tmp = self._dir / f".index.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"version": INDEX_VERSION, "paths": paths}), encoding="utf-8")
        tmp.replace(self._dir / "index.json")
        (self._dir / "journal.jsonl").unlink(missing_ok=True)
        self._journal_lines = 0
        self._torn = False

    def _persist(self, paths: Collection[str]) -> None:
        """Keep the index's rows of `paths` on disk: appended to the journal (a line per path, so that a call that
        changed one file writes one line, not the whole index), the index rewritten once the journal is long."""
        if not paths:
            return
        index = self._load()
        if self._journal_lines + len(paths) > JOURNAL_LINES or not (self._dir / "index.json").exists():
            self._save()
            return
        lines = "".join(json.dumps([p, _row(*index[p]) if p in index else None]) + "\n" for p in sorted(paths))
        with (self._dir / "journal.jsonl").open("a", encoding="utf-8") as fh:
            fh.write("\n" + lines if self._torn else lines)  # a torn last line is ended first
        self._torn = False
        self._journal_lines += len(paths)

    def _sync(self, scanned: Mapping[str, Meta]) -> dict[str, tuple[FileState | None, FileState | None]]:
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
        return diff

    def _refresh(self) -> dict[str, tuple[FileState | None, FileState | None]]:
        """Bring the index to the tree: the paths the watcher names since the last look, or a full scan (the first
        look of the process, or when the watcher lost track). Raises TreeTooLarge."""
        dirty = self._watcher.drain() if self._trusted and self._watcher is not None else None
        if dirty is not None:
            return self._sync_paths(sorted(dirty | self._linked))
        self._trusted = False
        if self._watcher is None and self._watch:
            self._watcher = new_watcher(str(self.root), SKIPPED_DIRS)
        elif self._watcher is not None:
            self._watcher.reset()
        linked: set[str] = set()
        try:
            scanned = scan(self.root, watcher=self._watcher, linked=linked)
        except TreeTooLarge:
            self._unwatch()
            raise
        if self._watcher is not None and self._watcher.broken:
            self._unwatch()  # out of watches: this process scans the whole tree at every look
        self._trusted = self._watcher is not None
        self._linked = linked
        return self._sync(scanned)

    def _unwatch(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        self._watcher = None
        self._watch = False
        self._trusted = False

    # ---- a call ------------------------------------------------------------------------------------------------

    def pending(self) -> dict[str, str] | None:
        """The call a dead process was making when it stopped (its changes not yet recorded), if any: the oldest
        dead marker (`rewind/markers.py`). A marker of a call still running (in this process, or in another one
        that is alive: workers run calls in one workspace at once) is not a dead call's."""
        dead = markers.dead(self._dir, self._in_flight)
        return dead[0].as_dict() if dead else None

    def _unmark(self, tool_call_id: str) -> None:
        """The call is done: forget it and remove its marker (the other calls' markers are theirs)."""
        self._in_flight.discard(tool_call_id)
        self._running.pop(tool_call_id, None)
        markers.unmark(self._dir, tool_call_id)

    def before(self, run_id: str, tool_call_id: str, tool_name: str) -> tuple[bool, Late | None]:
        """Look at the tree before a call. Returns whether it is captured (False: the tree is over the scan limit)
        and, when a previous call died mid-way, the changes found for it (to be recorded, late)."""
        with self._lock:
            late: Late | None = None
            stale = self._stale()
            try:
                diff = self._refresh()
            except TreeTooLarge:
                return False, None
            if stale:
                late = _late(diff, stale)
            else:
                self._absorbing(None, diff)
            self._persist(diff)
            for marker in stale:
                markers.remove(marker)
            self._mark(run_id, tool_call_id, tool_name)
            return True, late

    def _stale(self, run_id: str | None = None) -> list[markers.Marker]:
        """The dead calls' markers (only when one names `run_id`, when given; that one first)."""
        stale = markers.dead(self._dir, self._in_flight)
        if run_id is not None:
            stale.sort(key=lambda m: m.run_id != run_id)
            if not stale or stale[0].run_id != run_id:
                return []
        if stale and self._index is None and not (self._dir / "index.json").exists():
            for marker in stale:  # nothing was known before them: there is nothing to compare with
                markers.remove(marker)
            return []
        return stale

    def settle(self, run_id: str | None = None) -> Late | None:
        """The changes of a call whose process died (the pending marker; only if it names `run_id`, when given):
        the differences between the index and the tree. None when no call is pending. The caller records them and
        then calls `settled()`, or `forget()` when it could not (the marker stays: they are found again)."""
        with self._lock:
            stale = self._stale(run_id)
            if not stale:
                return None
            try:
                late = _late(self._refresh(), stale)
            except TreeTooLarge:
                return None
            self._settling = stale
            return late

    def settled(self) -> None:
        """The changes `settle` returned are recorded: the index is kept and the dead calls' markers removed."""
        with self._lock:
            self._save()
            for marker in self._settling:
                markers.remove(marker)
            self._settling = []

    def _mark(self, run_id: str, tool_call_id: str, tool_name: str) -> None:
        self._in_flight.add(tool_call_id)
        markers.mark(self._dir, run_id, tool_call_id, tool_name)
        self._running[tool_call_id] = run_id

    def _absorbing(
        self, tool_call_id: str | None, diff: Mapping[str, tuple[FileState | None, FileState | None]]
    ) -> None:
        """Keep what this look took in for each other process's live call (`rewind/markers.py`): a look before a
        call (`tool_call_id` None) keeps the changes whole, a look after one where it recorded them."""
        if not diff:
            return
        others = markers.others_alive(self._dir)
        if not others:
            return
        if tool_call_id is None:
            changes = [FileChange(path=p, before=b, after=a).model_dump(mode="json") for p, (b, a) in diff.items()]
            markers.note_absorbed(others, {"changes": changes[:MAX_CHANGES]})
        else:
            row = {
                "run_id": self._running.get(tool_call_id, "?"),
                "tool_call_id": tool_call_id,
                "paths": sorted(diff)[:50],
            }
            markers.note_absorbed(others, row)

    def after(self, tool_call_id: str, tool_name: str) -> FilesChangedV1:
        """Look at the tree after a call: what it changed, each with the state it replaced."""
        with self._lock:
            try:
                diff = self._refresh()
            except TreeTooLarge as exc:
                self._unmark(tool_call_id)
                return _event({}, tool_call_id, tool_name, note=f"not captured: {exc}")
            self._persist(diff)
            self._absorbing(tool_call_id, diff)
            self._unmark(tool_call_id)
            return _event(diff, tool_call_id, tool_name)

    def warm(self) -> None:
        """Look at the tree ahead of the first call (the full scan of the process, and the contents a new
        workspace stores once), so that the call does not wait for it. Does nothing while a dead call's changes
        are pending: they are recorded, late, by the next call's `before`."""
        with self._lock:
            if self._trusted or self.pending() is not None:
                return
            try:
                diff = self._refresh()
                self._absorbing(None, diff)
                self._persist(diff)
                self.blobs.used()  # the store's size, summed once per process, before the first content is put
            except (TreeTooLarge, OSError):
                return

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
            self._linked.discard(rel)
            return None
        mode = st.st_mode
        if stat.S_ISREG(mode) and st.st_nlink > 1:
            if rel not in self._linked:  # a new hard link: the other names of its inode are watched alike
                self._linked.add(rel)
                index = self._load()
                self._linked.update(p for p, (m, _s) in index.items() if m.kind == "file" and m.ino == st.st_ino)
        else:
            self._linked.discard(rel)
        if stat.S_ISLNK(mode):
            return Meta("symlink", stat.S_IMODE(mode), 0, st.st_mtime_ns, st.st_ino, os.readlink(path))
        if stat.S_ISDIR(mode):
            return Meta("dir", stat.S_IMODE(mode), 0, st.st_mtime_ns, st.st_ino)
        if stat.S_ISREG(mode):
            return Meta("file", stat.S_IMODE(mode), st.st_size, st.st_mtime_ns, st.st_ino)
        return None

    def _sync_paths(self, rels: list[str]) -> dict[str, tuple[FileState | None, FileState | None]]:
        """Bring the index to the tree for `rels` (and, for a directory gone or replaced, every path under it)."""
        index = self._load()
        diff: dict[str, tuple[FileState | None, FileState | None]] = {}
        gone_dirs: set[str] = set()
        for rel in rels:
            meta = self._stat(rel)
            known = index.get(rel)
            if known is not None and known[0].kind == "dir" and (meta is None or meta.kind != "dir"):
                gone_dirs.add(rel)
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
        if gone_dirs:
            named = set(rels)
            for path in [p for p in index if _under(p, gone_dirs)]:
                if path not in named:
                    diff[path] = (index.pop(path)[1], None)
        return diff

    def before_paths(self, run_id: str, tool_call_id: str, tool_name: str, rels: list[str]) -> None:
        """Before a file tool's call: only the paths it names (and their parents) are read, not the tree."""
        with self._lock:
            diff = self._sync_paths(rels)
            self._absorbing(None, diff)
            self._persist(diff)
            self._mark(run_id, tool_call_id, tool_name)

    def after_paths(self, tool_call_id: str, tool_name: str, rels: list[str]) -> FilesChangedV1:
        with self._lock:
            diff = self._sync_paths(rels)
            self._persist(diff)
            self._absorbing(tool_call_id, diff)
            self._unmark(tool_call_id)
            return _event(diff, tool_call_id, tool_name)

    def referenced(self) -> set[str]:
        """The contents the index names (the last known state of the tree: the `before` of the next change of
        each path), as kept on disk."""
        with self._lock:
            self._index = None
            self._trusted = False
            return {s.sha256 for _m, s in self._load().values() if s.sha256 is not None and s.restorable}

    def forget(self) -> None:
        """Drop the in-memory index (after a rewind changed the tree, the next scan re-reads what differs)."""
        with self._lock:
            self._index = None
            self._trusted = False


@dataclasses.dataclass(frozen=True, slots=True)
class Late:
    """The changes of a call whose process died before recording them, found afterwards."""

    run_id: str
    """The run the dead call belonged to (where they are best recorded)."""
    event: FilesChangedV1


def _late(diff: Mapping[str, tuple[FileState | None, FileState | None]], stale: list[markers.Marker]) -> Late:
    """The changes found for the dead calls of `stale`, recorded with the first (the others' are named)."""
    first = stale[0]
    run_id = first.run_id
    note = (
        f"recorded late: the process running this call (run {run_id}) stopped before recording its changes; "
        "these are the differences found afterwards, and may include changes made outside BearAgent meanwhile"
    )
    if len(stale) > 1:
        note += "; and those of other calls that stopped too: " + ", ".join(
            f"call {m.tool_call_id} of run {m.run_id}" for m in stale[1:6]
        )
    for marker in stale[:6]:
        extra = markers.absorbed_note(marker)
        if extra:
            note += f"; for call {marker.tool_call_id}: {extra}"
    merged: dict[str, tuple[FileState | None, FileState | None]] = {}
    for marker in stale:  # what looks of other processes took in while the dead calls ran, then what is left now
        for row in markers.absorbed(marker):
            for raw in cast(list[Any], row.get("changes") or []):
                try:
                    change = FileChange.model_validate(raw)
                except ValueError:
                    continue  # a damaged line: that change is not in the record (the note says where to look)
                _fold(merged, change.path, change.before, change.after)
    for path, (old, new) in diff.items():
        _fold(merged, path, old, new)
    merged = {p: (b, a) for p, (b, a) in merged.items() if b != a}
    event = _event(merged, first.tool_call_id or None, first.tool_name or "unknown", note=note[:2_000])
    return Late(run_id, event)


def _fold(
    merged: dict[str, tuple[FileState | None, FileState | None]],
    path: str,
    old: FileState | None,
    new: FileState | None,
) -> None:
    """A path's change after the ones already folded: it keeps the state before the first, the one after the last."""
    merged[path] = (merged[path][0], new) if path in merged else (old, new)


def _row(meta: Meta, state: FileState) -> list[object]:
    return [
        meta.kind,
        meta.mode,
        meta.size,
        meta.mtime_ns,
        meta.ino,
        meta.target,
        state.size,
        state.sha256,
        state.restorable,
    ]


def _unrow(row: list[Any]) -> tuple[Meta, FileState]:
    kind, mode, size, mtime, ino, target, ssize, sha, restorable = row
    state = FileState.model_construct(
        kind=kind, mode=mode, size=ssize, sha256=sha, target=target, restorable=restorable
    )
    return Meta(kind, mode, size, mtime, ino, target), state


def _under(path: str, dirs: set[str]) -> bool:
    """Whether one of `path`'s parent directories is in `dirs`."""
    cut = path.rfind("/")
    while cut > 0:
        path = path[:cut]
        if path in dirs:
            return True
        cut = path.rfind("/")
    return False


def _event(
    diff: Mapping[str, tuple[FileState | None, FileState | None]],
    tool_call_id: str | None,
    tool_name: str,
    note: str | None = None,
) -> FilesChangedV1:
    changes = [FileChange(path=p, before=b, after=a) for p, (b, a) in sorted(diff.items())]
    if tool_call_id is not None:
        try:  # read back from the marker (a workspace file): a damaged id is dropped, the changes are kept
            ToolCallId(tool_call_id)
        except ValueError:
            tool_call_id = None
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

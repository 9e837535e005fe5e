"""Rewinding the workspace files to the state before a run or a tool call, from the `FilesChanged` facts.

For every path changed from the chosen point on (the run, and the later runs of its session), the state to restore
is the `before` of its first change and the state expected now is the `after` of its last. A path whose current
state is neither was changed since by someone else: the rewind stops and names it (`force` overwrites it, its
current content kept in the blob store). A rewind is recorded (`FilesRewound`) in the run it went back into, so a
second rewind finds nothing to do and a rewind can itself be rewound.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from bearagent.domain.events import Event
from bearagent.domain.run_events import FileChange, FilesChangedV1, FilesRewoundV1, FileState, parse_run_event_payload
from bearagent.rewind.tree import SKIPPED_DIRS, BlobStore, Meta, capture_state, current_state, equal_states


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    path: str
    now: FileState | None
    want: FileState | None
    expected: FileState | None

    @property
    def action(self) -> str:
        if self.want is None:
            return "delete"
        if self.now is None:
            return "create"
        return "restore"


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    conflicts: tuple[str, ...]
    """Paths changed since by someone else (neither the state the run left nor the one to restore)."""
    unrestorable: tuple[str, ...]
    """Paths whose content to restore was over the blob store's limit (recorded by hash only)."""
    found: bool
    """Whether the point (the tool call) was found in the log."""


def _changes(event: Event) -> Sequence[FileChange]:
    if event.event_type not in ("FilesChanged", "FilesRewound"):
        return ()
    payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
    if isinstance(payload, (FilesChangedV1, FilesRewoundV1)):
        return payload.changes
    return ()


def blobs_of(events: Iterable[Event]) -> set[str]:
    """The contents the `FilesChanged` / `FilesRewound` facts of `events` name (what a rewind may need)."""
    out: set[str] = set()
    for event in events:
        for change in _changes(event):
            for state in (change.before, change.after):
                if state is not None and state.sha256 is not None:
                    out.add(state.sha256)
    return out


def plan_rewind(root: Path, runs: Iterable[Sequence[Event]], to_tool_call: str | None = None) -> Plan:
    """What a rewind to the state before the first run of `runs` (or before tool call `to_tool_call` in it) does.
    `runs` are the events of the run and of the later ones, oldest first."""
    want: dict[str, FileState | None] = {}
    expected: dict[str, FileState | None] = {}
    collecting = to_tool_call is None
    for events in runs:
        for event in events:
            if not collecting:
                if event.event_type in ("ToolCallRequested", "FilesChanged"):
                    tcid = str(event.payload.get("tool_call_id", ""))
                    if tcid == to_tool_call or (len(to_tool_call or "") >= 8 and tcid.startswith(to_tool_call or "")):
                        collecting = True
                if not collecting:
                    continue
            for change in _changes(event):
                want.setdefault(change.path, change.before)
                expected[change.path] = change.after
    steps: list[Step] = []
    conflicts: list[str] = []
    unrestorable: list[str] = []
    for path in sorted(want):
        parts = path.split("/")
        if path.startswith("/") or ".." in parts or "" in parts or parts[0] in SKIPPED_DIRS:
            raise ValueError(f"the log names a path outside the workspace's files: {path!r}; nothing was changed")
        now = current_state(root, path)
        target = want[path]
        if equal_states(now, target):
            continue
        if not equal_states(now, expected[path]):
            conflicts.append(path)
        if target is not None and target.kind == "file" and not target.restorable:
            unrestorable.append(path)
        steps.append(Step(path, now, target, expected[path]))
    return Plan(tuple(steps), tuple(conflicts), tuple(unrestorable), collecting)


def apply_rewind(root: Path, plan: Plan, blobs: BlobStore, *, force: bool) -> FilesRewoundV1:
    """Put the files back. Raises ValueError naming the conflicting paths unless `force` (then their current
    content is kept in `blobs` first); content not restorable is left as it is and reported."""
    if plan.conflicts and not force:
        raise ValueError("changed since by someone else: " + ", ".join(plan.conflicts))
    if plan.unrestorable:
        raise ValueError("not restorable (over the blob store's limit when recorded): " + ", ".join(plan.unrestorable))
    done: list[FileChange] = []
    # keep what is there now (so the rewind can be undone), then remove, then create (parents first)
    kept: dict[str, FileState | None] = {}
    for step in plan.steps:
        kept[step.path] = _keep(root, step.path, blobs)
    removals = [s for s in plan.steps if s.now is not None and (s.want is None or s.want.kind != s.now.kind)]
    for step in sorted(removals, key=lambda s: s.path.count("/"), reverse=True):
        _remove(root / step.path)
    for step in sorted(plan.steps, key=lambda s: s.path.count("/")):
        if step.want is not None:
            _inside(root, root / step.path)
            _put(root / step.path, step.want, blobs)
        done.append(FileChange(path=step.path, before=kept[step.path], after=step.want))
    # directory modes last (a read-only directory would refuse its entries)
    for step in plan.steps:
        if step.want is not None and step.want.kind == "dir":
            os.chmod(root / step.path, step.want.mode)
    return FilesRewoundV1(changes=tuple(done), forced=plan.conflicts if force else ())


def _keep(root: Path, rel: str, blobs: BlobStore) -> FileState | None:
    """The current state of `rel`, its content put in the blob store (None: absent)."""
    path = root / rel
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        meta = Meta("symlink", mode, 0, st.st_mtime_ns, st.st_ino, os.readlink(path))
    elif stat.S_ISDIR(st.st_mode):
        meta = Meta("dir", mode, 0, st.st_mtime_ns, st.st_ino)
    else:
        meta = Meta("file", mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return capture_state(root, rel, meta, blobs)


def _inside(root: Path, path: Path) -> None:
    """Refuse to write through a symlinked parent that leads out of the workspace."""
    parent = path.parent.resolve()
    top = root.resolve()
    if parent != top and top not in parent.parents:
        raise ValueError(f"{path.relative_to(root)}: its parent directory leads out of the workspace ({parent})")


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _put(path: Path, want: FileState, blobs: BlobStore) -> None:
    if want.kind == "dir":
        path.mkdir(parents=True, exist_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if want.kind == "symlink":
        if os.path.lexists(path):
            path.unlink()
        os.symlink(want.target or "", path)
        return
    assert want.sha256 is not None
    data = blobs.get(want.sha256)
    tmp = path.with_name(f".{path.name}.bearagent-rewind.tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, want.mode)
    tmp.replace(path)

"""The recorded file changes of a run as diffs, on demand: each `FileChange` of its `FilesChanged` facts, its content
before and after read back from the blob store, as a unified diff (`bearagent runs diff`, `GET
/v1/runs/{id}/diff`, the diff button of `/ui`).

Bounded: at most `max_files` changes are shown and at most `max_bytes` of diff text in all; what is cut is said (the
count of changes left out, the diff cut at the limit, the later files listed without their diff). A change that has
no text diff says why instead: a binary content, a content over `max_content` bytes, a content not kept (over the
blob store's limit when recorded, or removed since by `bearagent db prune`), a directory, a symlink, a mode change.
Everything shown comes from the workspace and the commands the model ran: the faces show it as untrusted text.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bearagent.domain._base import JsonValue
from bearagent.domain.run_events import FileChange, FileState

MAX_FILES = 50
MAX_BYTES = 200_000
MAX_CONTENT = 1_000_000
"""A content larger than this is not diffed (its sizes and hashes are shown)."""


@dataclass(frozen=True, slots=True)
class FileDiff:
    path: str
    action: str
    """`created`, `modified` or `deleted`."""
    tool_call_id: str | None
    tool_name: str
    diff: str | None = None
    """The unified diff (`--- a/PATH`, `+++ b/PATH`), None when there is none (`note` says why)."""
    note: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "path": self.path,
            "action": self.action,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "diff": self.diff,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RunDiff:
    run_id: str
    tool_call_id: str | None
    files: tuple[FileDiff, ...]
    omitted_files: int = 0
    """Changes beyond `max_files`, not shown."""
    cut: tuple[str, ...] = field(default=())
    """What the bounds cut, said in words (empty: nothing)."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "run_id": self.run_id,
            "tool_call_id": self.tool_call_id,
            "files": [f.to_json() for f in self.files],
            "omitted_files": self.omitted_files,
            "cut": list(self.cut),
        }


def action_of(change: FileChange) -> str:
    if change.before is None:
        return "created"
    if change.after is None:
        return "deleted"
    return "modified"


def _describe(state: FileState | None) -> str:
    if state is None:
        return "nothing"
    if state.kind == "dir":
        return f"a directory (mode {state.mode:o})"
    if state.kind == "symlink":
        return f"a symlink to {state.target!r}"
    return f"a file of {state.size} bytes (mode {state.mode:o}, sha256 {(state.sha256 or '?')[:12]})"


def file_diff(
    change: FileChange,
    tool_call_id: str | None,
    tool_name: str,
    read: Callable[[str], bytes | None],
    *,
    max_content: int = MAX_CONTENT,
) -> FileDiff:
    """One change as a diff; `read(sha256)` gives a content from the blob store (None: not there)."""
    action = action_of(change)
    base = FileDiff(change.path, action, tool_call_id, tool_name)
    before, after = change.before, change.after
    kinds = {s.kind for s in (before, after) if s is not None}
    if kinds != {"file"}:
        return _with(base, note=f"{_describe(before)} -> {_describe(after)}")
    texts: list[list[str]] = []
    for state in (before, after):
        if state is None:
            texts.append([])
            continue
        if state.size > max_content:
            return _with(base, note=f"{_describe(before)} -> {_describe(after)}: over {max_content} bytes, not diffed")
        data = read(state.sha256) if state.sha256 is not None and state.restorable else None
        if data is None:
            why = "not kept (over the blob store's limit)" if not state.restorable else "not in the blob store (pruned)"
            return _with(base, note=f"{_describe(before)} -> {_describe(after)}: a content is {why}")
        if b"\0" in data:
            return _with(base, note=f"binary: {_describe(before)} -> {_describe(after)}")
        try:
            texts.append(data.decode("utf-8").splitlines(keepends=True))
        except UnicodeDecodeError:
            return _with(base, note=f"binary (not UTF-8): {_describe(before)} -> {_describe(after)}")
    old = "/dev/null" if before is None else f"a/{change.path}"
    new = "/dev/null" if after is None else f"b/{change.path}"
    lines = list(difflib.unified_diff(texts[0], texts[1], old, new))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    if not text and before is not None and after is not None and before.mode != after.mode:
        return _with(base, note=f"mode {before.mode:o} -> {after.mode:o}")
    return _with(base, diff=text or None, note=None if text else "no difference in content")


def _with(base: FileDiff, *, diff: str | None = None, note: str | None = None) -> FileDiff:
    return FileDiff(base.path, base.action, base.tool_call_id, base.tool_name, diff, note)


def run_diff(
    run_id: str,
    tool_call_id: str | None,
    changes: Sequence[tuple[str | None, str, FileChange]],
    read: Callable[[str], bytes | None],
    *,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
    unrecorded: int = 0,
) -> RunDiff:
    """The diffs of `changes` (`(tool call id, tool name, change)` in the order recorded), bounded."""
    shown = changes[:max_files]
    omitted = max(0, len(changes) - max_files)
    cut: list[str] = []
    if omitted:
        cut.append(f"{omitted} more changed path(s) not shown (at most {max_files}); name a tool call to see fewer")
    if unrecorded:
        cut.append(f"{unrecorded} change(s) were seen but not recorded when the call ran (over the record's limit)")
    files: list[FileDiff] = []
    left = max_bytes
    cut_paths: list[str] = []
    for call, tool, change in shown:
        one = file_diff(change, call, tool, read)
        if one.diff is not None:
            size = len(one.diff.encode("utf-8"))
            if left <= 0:
                one = _with(one, note="diff left out: the output limit was reached")
                cut_paths.append(one.path)
            elif size > left:
                head = one.diff.encode("utf-8")[:left].decode("utf-8", "ignore")
                one = _with(one, diff=head, note=f"diff cut after {left} of {size} bytes: the output limit")
                cut_paths.append(one.path)
                left = 0
            else:
                left -= size
        files.append(one)
    if cut_paths:
        cut.append(f"diff text limited to {max_bytes} bytes: cut or left out for " + ", ".join(cut_paths[:20]))
    return RunDiff(run_id, tool_call_id, tuple(files), omitted, tuple(cut))

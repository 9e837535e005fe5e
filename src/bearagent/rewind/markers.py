"""The markers of tool calls in flight: one file per call, so that a process killed during its call (kill -9) leaves
a marker naming exactly that call, whatever the other calls of the workspace do meanwhile.

A marker is `.bearagent/rewind/pending/<pid>-<start>-<call>.json` (the process's pid and start time in clock ticks,
the tool call id made safe for a file name), holding the run, the call and its tool. It is written before the call's
look before and removed once the call's changes are recorded. The liveness rule is here, once: a marker is a *live*
call's while its process is the same process that wrote it (`runtime/processes.py`: pid and start time, a zombie is
gone) and, for this very process, while the call is in flight; otherwise it is a *dead* call's, whose changes the
next look records late (`rewind/capture.py`).

A look of this process cannot tell another process's call's changes from its own (the tree is shared). What it
takes in while another process's call is in flight goes to that call's `<marker>.absorbed.jsonl`, a line per look:
a look *before* a call takes the changes made since into the index unrecorded, so it keeps them whole
(`{"changes": [FileChange...]}`); a look *after* a call records them with its own call, so it keeps where
(`{"run_id", "tool_call_id", "paths"}`). Should that other call die, its late record carries the changes kept whole
and names where the others were recorded: nothing it did is lost (rewinding its run, or the run named, undoes
them). The file goes with its marker.

`pending.json`, the single marker of earlier versions, is read as one more marker (a process of an earlier version
killed during its call) and removed like the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bearagent.runtime.processes import process_gone, process_start

LEGACY = "pending.json"
MAX_ABSORBED_LINES = 1_000
MAX_ABSORBED_BYTES = 256_000
"""An absorbed file grows to at most this many bytes: later lines are dropped, and the note says the list was cut."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")


@dataclass(frozen=True, slots=True)
class Marker:
    path: Path
    run_id: str
    tool_call_id: str
    tool_name: str
    pid: int
    start: int

    def as_dict(self) -> dict[str, str]:
        return {"run_id": self.run_id, "tool_call_id": self.tool_call_id, "tool_name": self.tool_name}

    @property
    def absorbed_path(self) -> Path:
        return self.path.with_name(self.path.name.removesuffix(".json") + ".absorbed.jsonl")


def pending_dir(rewind_dir: Path) -> Path:
    return rewind_dir / "pending"


def marker_name(pid: int, start: int, tool_call_id: str) -> str:
    return f"{pid}-{start}-{_UNSAFE.sub('_', tool_call_id)[:80]}.json"


def mark(rewind_dir: Path, run_id: str, tool_call_id: str, tool_name: str) -> Marker:
    """Write this process's marker of `tool_call_id` (before the call's look before)."""
    pid = os.getpid()
    start = process_start(pid)
    folder = pending_dir(rewind_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / marker_name(pid, start, tool_call_id)
    body = {
        "run_id": run_id,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "pid": str(pid),
        "process_start": str(start),
    }
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(body), encoding="utf-8")
    tmp.replace(path)
    return Marker(path, run_id, tool_call_id, tool_name, pid, start)


def unmark(rewind_dir: Path, tool_call_id: str) -> None:
    """Remove this process's marker of `tool_call_id` and its absorbed file (the call's changes are recorded)."""
    pid = os.getpid()
    path = pending_dir(rewind_dir) / marker_name(pid, process_start(pid), tool_call_id)
    remove(_parse(path) or Marker(path, "", tool_call_id, "", pid, 0))


def remove(marker: Marker) -> None:
    marker.path.unlink(missing_ok=True)
    marker.absorbed_path.unlink(missing_ok=True)


def _parse(path: Path) -> Marker | None:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    body = {str(k): str(v) for k, v in cast(dict[str, Any], raw).items()}
    try:
        pid, start = int(body.get("pid", "0")), int(body.get("process_start", "0"))
    except ValueError:
        pid, start = 0, 0
    return Marker(path, body.get("run_id", "?"), body.get("tool_call_id", ""), body.get("tool_name", ""), pid, start)


def markers(rewind_dir: Path) -> list[Marker]:
    """Every marker of the workspace (the legacy `pending.json` too), oldest first. A damaged one (a process
    killed while writing it, or a hostile file) counts as a dead call of unknown run."""
    folder = pending_dir(rewind_dir)
    paths: list[Path] = []
    with contextlib.suppress(OSError):
        paths = [p for p in folder.iterdir() if p.name.endswith(".json") and not p.name.startswith(".")]
    legacy = rewind_dir / LEGACY
    if legacy.is_file():
        paths.append(legacy)

    def age(p: Path) -> int:
        try:
            return p.stat().st_mtime_ns
        except OSError:
            return 0

    found: list[Marker] = []
    for path in sorted(paths, key=age):
        parsed = _parse(path)
        found.append(parsed if parsed is not None else Marker(path, "?", "", "unknown", 0, 0))
    return found


def alive(marker: Marker, in_flight: Collection[str]) -> bool:
    """Whether the marker is a call still running: in this process, a call in flight; in another, a process that
    is still the one that wrote it (not gone, not a zombie, its pid not taken over)."""
    if marker.pid == os.getpid():
        return marker.tool_call_id in in_flight
    if marker.pid <= 0:
        return False
    return process_gone(marker.pid, marker.start) is None


def dead(rewind_dir: Path, in_flight: Collection[str]) -> list[Marker]:
    """The markers of calls whose process died before recording their changes, oldest first."""
    return [m for m in markers(rewind_dir) if not alive(m, in_flight)]


def others_alive(rewind_dir: Path) -> list[Marker]:
    """The live calls of other processes (whose changes a look of this process may absorb)."""
    me = os.getpid()
    return [m for m in markers(rewind_dir) if m.pid != me and alive(m, ())]


def note_absorbed(others: Sequence[Marker], row: Mapping[str, Any]) -> None:
    """Append `row` to the absorbed file of each live call of another process (what this look took in while it
    runs)."""
    line = json.dumps(row) + "\n"
    for other in others:
        target = other.absorbed_path
        with contextlib.suppress(OSError):
            if not other.path.exists():  # it finished meanwhile
                continue
            if target.exists() and target.stat().st_size >= MAX_ABSORBED_BYTES:
                continue
            with target.open("a", encoding="utf-8") as fh:
                fh.write(line)


def absorbed(marker: Marker) -> list[dict[str, Any]]:
    """What other calls recorded while `marker`'s call ran (its `.absorbed.jsonl`); damaged lines are skipped."""
    out: list[dict[str, Any]] = []
    try:
        text = marker.absorbed_path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return out
    for line in text.splitlines()[:MAX_ABSORBED_LINES]:
        try:
            row: Any = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            out.append(cast(dict[str, Any], row))
    return out


def absorbed_note(marker: Marker) -> str | None:
    """A sentence naming where changes made while the dead call ran were recorded, or None."""
    rows = [row for row in absorbed(marker) if "paths" in row]
    if not rows:
        return None
    parts: list[str] = []
    for row in rows[:10]:
        paths = [str(p) for p in cast(list[Any], row.get("paths") or [])][:5]
        parts.append(f"call {row.get('tool_call_id')} of run {row.get('run_id')} ({', '.join(paths)})")
    more = f" and {len(rows) - 10} more" if len(rows) > 10 else ""
    with contextlib.suppress(OSError):
        if marker.absorbed_path.stat().st_size >= MAX_ABSORBED_BYTES:
            more += " (the list was cut at its size limit: look at the runs that ran at the same time)"
    return (
        "changes made while it ran were recorded with other calls running at the same time (rewinding those runs "
        "undoes them): " + "; ".join(parts) + more
    )

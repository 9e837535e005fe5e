"""A run's recorded file changes as diffs (`bearagent runs diff RUN [--call ID]`, `GET /v1/runs/{id}/diff`, the
diff button of `/ui`): the faces call this, which reads the run's `FilesChanged` facts from the store and their
contents from the workspace's blob store (`rewind/diff.py` renders and bounds them)."""

from __future__ import annotations

import zlib
from pathlib import Path

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import FileChange, FilesChangedV1, parse_run_event_payload
from bearagent.ports import WorkspaceStore
from bearagent.rewind.capture import blob_store
from bearagent.rewind.diff import RunDiff, run_diff


def files_diff(
    store: WorkspaceStore,
    root: Path,
    run_id: RunId,
    tool_call: str | None = None,
    *,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> RunDiff:
    """The diffs of run `run_id`'s recorded file changes (only those of `tool_call`, its id or 8+ leading
    characters, when given). Raises `BearAgentError` when the run or the call is not there."""
    if store.get_run(run_id) is None:
        raise BearAgentError(
            ErrorInfo.of("not_found", "run", f"run {run_id} does not exist in this workspace"),
            hint="list the runs with `bearagent runs list`",
        )
    changes: list[tuple[str | None, str, FileChange]] = []
    calls: set[str] = set()
    unrecorded = 0
    for event in store.read_events(run_id):
        if event.event_type != "FilesChanged":
            continue
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if not isinstance(payload, FilesChangedV1):
            continue
        call = None if payload.tool_call_id is None else str(payload.tool_call_id)
        if call is not None:
            calls.add(call)
        if tool_call is not None and not _names(tool_call, call):
            continue
        unrecorded += payload.unrecorded
        changes.extend((call, payload.tool_name, change) for change in payload.changes)
    if tool_call is not None and not any(_names(tool_call, c) for c in calls):
        raise BearAgentError(
            ErrorInfo.of(
                "not_found",
                "tool_call",
                f"run {run_id} has no recorded file changes of tool call {tool_call!r}"
                + (f" (calls with changes: {', '.join(sorted(calls)[:10])})" if calls else " (it recorded none)"),
            ),
            hint="name a tool call of the run by its id or 8+ leading characters (`bearagent events RUN` lists them)",
        )
    blobs = blob_store(root)

    def read(sha: str) -> bytes | None:
        try:
            return blobs.get(sha)
        except (OSError, ValueError, zlib.error):
            return None

    kwargs: dict[str, int] = {}
    if max_files is not None:
        kwargs["max_files"] = max_files
    if max_bytes is not None:
        kwargs["max_bytes"] = max_bytes
    resolved = tool_call
    if tool_call is not None:
        resolved = next((c for c in sorted(calls) if _names(tool_call, c)), tool_call)
    return run_diff(str(run_id), resolved, changes, read, unrecorded=unrecorded, **kwargs)


def _names(ref: str, call: str | None) -> bool:
    """Whether `ref` (an id, or 8+ leading characters) names tool call `call`."""
    return call is not None and (call == ref or (len(ref) >= 8 and call.startswith(ref)))

"""Each tool call's file changes in the terminal: the `FilesChanged` facts of the run (and its child runs) drawn
under the tool's line as `files: created a.txt, modified b.txt, deleted c.txt` as they are committed (before the
call's result). Write, Edit and MultiEdit show their diff already (`render.diff_lines`): this names what the other
calls changed, Bash's `sed -i`, `rm` and `mv` included. Paths come from the workspace: shown through `safe_text.visible`, at most
`MAX_NAMED` per call."""

from __future__ import annotations

from collections.abc import Sequence

from bearagent.cli.render import TerminalView
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import FileChange, FilesChangedV1, parse_run_event_payload
from bearagent.runtime.run_writer import Committed, Published

DIFFED = frozenset({"Write", "Edit", "MultiEdit"})
"""Tools whose line shows their change as a diff already (`render.diff_lines`): no `files:` line for them."""
MAX_NAMED = 12
"""How many paths one line names; the rest are counted (`bearagent events RUN --json` lists every one)."""


def describe(changes: Sequence[FileChange], unrecorded: int = 0) -> str:
    """`created a, modified b, deleted c` (at most `MAX_NAMED` paths, then `and N more`)."""
    words: list[str] = []
    for change in changes[:MAX_NAMED]:
        kind = "created" if change.before is None else "deleted" if change.after is None else "modified"
        words.append(f"{kind} {change.path}")
    more = len(changes) - len(words) + unrecorded
    return ", ".join(words) + (f" and {more} more" if more > 0 else "")


class FileChangeLines:
    """A run writer subscriber drawing the file changes of `root` and its child runs on `view`."""

    def __init__(self, view: TerminalView, root: RunId) -> None:
        self.view = view
        self.root = root
        self._runs: set[RunId] = {root}

    def __call__(self, item: Published) -> None:
        if not isinstance(item, Committed):
            return
        event = item.event
        if event.event_type == "ChildRunStarted" and item.run_id in self._runs:
            child = event.payload.get("child_run_id")
            if isinstance(child, str):
                self._runs.add(RunId(child))
            return
        if event.event_type != "FilesChanged" or item.run_id not in self._runs:
            return
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if (
            isinstance(payload, FilesChangedV1)
            and payload.tool_name not in DIFFED
            and (payload.changes or payload.unrecorded)
        ):
            self.view.file_changes(item.run_id, describe(payload.changes, payload.unrecorded))

"""Whether the model may have written files in a session yet (issue 28, item 3): the fact the hooks need to decide
where a trusted command hook runs (`hooks/after_writes.py`).

A trusted hook runs code it names (`scripts/post.sh`, `./node_modules/.bin/prettier`, a `.venv` tool, a formatter
that loads plugins named in a JSON file). Once a tool call that can write (Bash, in or out of the sandbox, Write,
Edit, MultiEdit, NotebookEdit, an MCP tool, a subagent's calls) has run in a session, any workspace file may be the
model's, so from then on the session's command hooks run in the sandbox. The gate marks it right before such a tool
executes (`tools/gate.py`): marking before, not after, covers a call that fails midway, a background command that
keeps writing and hooks that run while the call is in flight.

The record is per session (a subagent shares its parent's session, so its writes count for the parent's hooks too)
and per process. Across sessions and processes the gate also records each call's directories in the user's durable
record (`rewind.workspace_writes`), which confines a workspace's hooks and MCP servers until its next trust decision. At most `MAX_SESSIONS` sessions are remembered, the least recently used forgotten
first (a forgotten session's hooks run as configured until its next writing call).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

MAX_SESSIONS = 100_000
READ_ONLY_EFFECTS = frozenset({"read_only", "network"})
"""Tool side effects that write no workspace file (`ToolSpec.side_effect`); every other one counts as a write."""


@dataclass(frozen=True, slots=True)
class FirstWrite:
    """The first call of a session that could write: the tool's name and its call id."""

    tool: str
    tool_call_id: str

    def describe(self) -> str:
        return f"the model's {self.tool} call {self.tool_call_id}"


_lock = threading.Lock()
_sessions: OrderedDict[tuple[str, str], FirstWrite] = OrderedDict()


def _key(workspace_root: Path, session_id: object | None) -> tuple[str, str]:
    return (os.path.realpath(workspace_root), str(session_id) if session_id is not None else "")


def counts_as_write(side_effect: str) -> bool:
    """Whether a tool with this side effect may write files (unknown effects do)."""
    return side_effect not in READ_ONLY_EFFECTS


def mark(workspace_root: Path, session_id: object | None, tool: str, tool_call_id: object) -> None:
    """Record that a call that may write is about to run in this session (the first one is kept)."""
    key = _key(workspace_root, session_id)
    with _lock:
        if key in _sessions:
            _sessions.move_to_end(key)
            return
        _sessions[key] = FirstWrite(tool, str(tool_call_id))
        while len(_sessions) > MAX_SESSIONS:
            _sessions.popitem(last=False)


def first_write(workspace_root: Path, session_id: object | None) -> FirstWrite | None:
    """The session's first call that may have written, or None when none has run (in this process)."""
    key = _key(workspace_root, session_id)
    with _lock:
        found = _sessions.get(key)
        if found is not None:
            _sessions.move_to_end(key)
        return found

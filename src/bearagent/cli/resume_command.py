"""`/resume` in the interactive session: pick an earlier session of this workspace and continue it (Claude Code's
`/resume`).

`/resume` lists your sessions, most recently active first (at most `MAX_LISTED`), numbered, and asks which one:
a number, or Enter to keep the current session. `/resume ID` (or a unique prefix of the id, as `bearagent sessions
list` shows it) continues that one at once. Only the local user's sessions are listed (`caller` "local"), as
`--continue` picks among them. The session's agent becomes the session's agent again when it is still a primary
agent. Titles are workspace users' text: shown through `safe_text.visible`, cut to the terminal's width.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.domain.state import SessionRecord
    from bearagent.service.runner import WorkspaceRuntime

MAX_LISTED = 20
MAX_MATCHED = 1_000
"""How many sessions `/resume ID` looks through for the id or prefix."""


@dataclass(frozen=True, slots=True)
class Resumed:
    session: str
    agent: str | None


def _ago(record: SessionRecord) -> str:
    from datetime import UTC, datetime

    seconds = max(0, int((datetime.now(UTC) - record.updated_at).total_seconds()))
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _agent_of(runtime: WorkspaceRuntime, record: SessionRecord) -> str | None:
    name = record.active_agent_name or record.agent_name
    spec = runtime.loaded.agents.get(name) if name else None
    return name if spec is not None and spec.is_primary else None


def _line(index: int, record: SessionRecord, current: str | None, width: int) -> str:
    mark = "*" if str(record.session_id) == current else " "
    title = " ".join((record.title or "(no prompt yet)").split())
    agent = record.active_agent_name or record.agent_name or "-"
    line = visible(f"{mark}{index:>3}  {str(record.session_id)[:8]}  {_ago(record):>8}  {agent:<12} {title}")
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


def resume_command(
    arg: str,
    runtime: WorkspaceRuntime,
    console: Console,
    read: Callable[[str], str],
    *,
    current: str | None,
) -> Resumed | None:
    """Run `/resume [ID]`; the session chosen (with its agent), or None (nothing chosen, said why)."""
    if arg:
        found = [s for s in runtime.store.list_sessions(caller="local", limit=MAX_MATCHED) if _matches(s, arg)]
        if not found:
            console.print(Text(visible(f"no session {arg!r}; /resume lists them"), style="red"))
            return None
        if len(found) > 1:
            console.print(Text(visible(f"{arg!r} matches {len(found)} sessions; type more of the id"), style="red"))
            return None
        return _chosen(runtime, console, found[0])
    listed: Sequence[SessionRecord] = runtime.store.list_sessions(caller="local", limit=MAX_LISTED)
    if not listed:
        console.print("no sessions yet in this workspace", markup=False)
        return None
    width = console.width - 1
    for index, record in enumerate(listed, start=1):
        console.print(_line(index, record, current, width), markup=False)
    try:
        answer = read(f"resume which? [1-{len(listed)}, Enter keeps this session] ").strip()
    except (EOFError, KeyboardInterrupt):
        console.print()
        return None
    if not answer:
        return None
    if not answer.isdigit() or not 1 <= int(answer) <= len(listed):
        console.print(Text(visible(f"{answer!r} is not one of 1-{len(listed)}; nothing resumed"), style="red"))
        return None
    return _chosen(runtime, console, listed[int(answer) - 1])


def _matches(record: SessionRecord, arg: str) -> bool:
    return str(record.session_id).startswith(arg.strip().lower())


def _chosen(runtime: WorkspaceRuntime, console: Console, record: SessionRecord) -> Resumed:
    agent = _agent_of(runtime, record)
    title = " ".join((record.title or "").split())[:60]
    console.print(
        Text(visible(f"resumed session {record.session_id}" + (f" · {title}" if title else "")), style="magenta")
    )
    return Resumed(str(record.session_id), agent)

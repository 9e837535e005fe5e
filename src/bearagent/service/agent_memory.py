"""Claude Code's agent `memory:` (user | project | local): a persistent folder for one agent, kept across sessions.

`user` is `~/.claude/agent-memory/<agent>/`, `project` `<workspace>/.claude/agent-memory/<agent>/`, `local`
`<workspace>/.claude/agent-memory-local/<agent>/` (as in Claude Code's sub-agents docs). The folder is created when
the agent is planned, and the agent's prompt gets a section naming it, with the first 200 lines (at most 25 KB) of
its `MEMORY.md`, so the agent starts from what it wrote down before. Reading and writing the folder goes through the
agent's own tools and the permission gate (a `user` folder is outside the workspace: allow it with
`permissions.additionalDirectories`). A `MEMORY.md` that is a symlink, or not UTF-8, is not read.
"""

from __future__ import annotations

from pathlib import Path

from bearagent.domain.specs import AgentSpec

MAX_LINES = 200
MAX_BYTES = 25 * 1024


def memory_dir(agent: AgentSpec, root: Path, home: Path) -> Path | None:
    """The agent's memory folder, or None when it has no `memory:`."""
    if agent.memory == "user":
        return home / ".claude" / "agent-memory" / agent.name
    if agent.memory == "project":
        return root / ".claude" / "agent-memory" / agent.name
    if agent.memory == "local":
        return root / ".claude" / "agent-memory-local" / agent.name
    return None


def _head(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        return ""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES)
        text = data.decode("utf-8", errors="strict")
    except (OSError, UnicodeDecodeError):
        return ""
    return "\n".join(text.splitlines()[:MAX_LINES])


def memory_section(agent: AgentSpec, root: Path, home: Path) -> str:
    """The prompt section of the agent's memory (the folder is created if missing)."""
    folder = memory_dir(agent, root, home)
    assert folder is not None, "only for an agent with `memory:`"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"# Agent memory\n\nYour memory folder {folder} could not be created ({exc.strerror or exc})."
    head = _head(folder / "MEMORY.md")
    shown = f"Its MEMORY.md begins:\n\n{head}" if head.strip() else "Its MEMORY.md is empty or missing."
    return (
        f"# Agent memory ({agent.memory})\n\n"
        f"You have a persistent memory folder: {folder}\n"
        "Read it before you start; when you learn something worth keeping for next time (conventions, decisions, "
        "recurring problems), write it to MEMORY.md there (keep it short: only its first 200 lines are shown).\n\n"
        f"{shown}"
    )

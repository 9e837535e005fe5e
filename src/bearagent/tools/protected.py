"""The workspace's control files: the one list of paths an agent may not create, change or delete on its own.

These files decide what BearAgent runs and allows (config, agents, hooks, MCP servers, state) or what git runs
(`.git/config`, `.git/hooks`). A model that could rewrite them would widen its own permissions for the next run,
or corrupt the run's log. The file tools ask before touching them, in every permission mode (non-interactive: a
denial naming the rule to add; only an allow rule whose path names the file counts), and never write BearAgent's own
state files; the shell sandbox mounts them read-only. Paths are workspace-relative, with `/` separators, compared
case-insensitively (on macOS `.BearAgent/config.yaml` is the real config).
"""

from __future__ import annotations

PROTECTED_DIRS: tuple[str, ...] = (".bearagent", ".claude", ".agents", ".git")
"""Directories whose whole tree is protected from the file tools (`.agents/skills` is a skill source too)."""

PROTECTED_FILES: tuple[str, ...] = (".mcp.json", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md")
"""Single files protected from the file tools (AGENTS.md / CLAUDE.md / CLAUDE.local.md: the instructions every run
reads)."""

SHELL_READ_ONLY: tuple[str, ...] = (
    ".bearagent",
    ".claude",
    ".agents",
    ".mcp.json",
    "AGENTS.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
)
"""What the shell sandbox mounts read-only inside the otherwise writable workspace, besides git's own files (the
whole `.git`, nested repositories, submodule paths and what git config names: `bearagent.sandbox.git_paths`)."""


GIT_ENTRY = ".git"
"""At any depth (a nested repository, a submodule's `.git` file): a `.git` the model writes is a control file too."""

STATE_DIR = ".bearagent"
"""BearAgent's own state lives below it: the event store `state.db` (and its `-wal`, `-shm`, `-journal` files), the
session `locks/` and the hook `transcripts/`. No file tool writes them, whatever the rules say (`state_reason`):
they are BearAgent's, not the workspace's, and a model that rewrote them would corrupt the run's own log."""


def _parts(rel_path: str) -> list[str]:
    # casefold: on a case-insensitive filesystem (macOS) `.BearAgent/config.yaml` is the real config
    return [p.casefold() for p in rel_path.replace("\\", "/").split("/") if p not in ("", ".")]


def protected_reason(rel_path: str) -> str | None:
    """Why `rel_path` (workspace-relative) is a control file, or None when it is an ordinary file."""
    parts = _parts(rel_path)
    if not parts:
        return None
    first = parts[0]
    for name in PROTECTED_DIRS:
        if first == name.casefold():
            return f"{name}/ holds the workspace's control files"
    if len(parts) == 1:
        for name in PROTECTED_FILES:
            if first == name.casefold():
                return f"{name} is read by every run as configuration or instructions"
    if GIT_ENTRY in parts:
        return f"{GIT_ENTRY} is a git repository's directory or gitlink, whose config and hooks git runs"
    return None


def protected_top(rel_path: str) -> str | None:
    """The protected entry (`.bearagent`, `AGENTS.md`, …) that `rel_path` is, or lies inside; None if none."""
    parts = _parts(rel_path)
    if not parts:
        return None
    for name in PROTECTED_DIRS:
        if parts[0] == name.casefold():
            return name
    if len(parts) == 1:
        for name in PROTECTED_FILES:
            if parts[0] == name.casefold():
                return name
    return None


def state_reason(rel_path: str) -> str | None:
    """Why `rel_path` is BearAgent's own state (which no file tool may write), or None."""
    parts = _parts(rel_path)
    if len(parts) < 2 or parts[0] != STATE_DIR:
        return None
    second = parts[1]
    if second == "state.db" or second.startswith("state.db-"):
        return f"{STATE_DIR}/{second} is BearAgent's event store (the run log)"
    if second in ("locks", "transcripts"):
        return f"{STATE_DIR}/{second}/ holds BearAgent's session {'locks' if second == 'locks' else 'transcripts'}"
    return None

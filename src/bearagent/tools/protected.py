"""The workspace's control files: the one list of paths an agent may not create, change or delete on its own.

These files decide what BearAgent runs and allows (config, agents, hooks, MCP servers, state) or what git runs
(`.git/config`, `.git/hooks`). A model that could rewrite them would widen its own permissions for the next run,
or corrupt the run's log. The file tools ask before touching them (non-interactive: a denial naming the rule to add);
the shell sandbox mounts them read-only. Paths are workspace-relative, with `/` separators.
"""

from __future__ import annotations

PROTECTED_DIRS: tuple[str, ...] = (".bearagent", ".claude", ".git")
"""Directories whose whole tree is protected from the file tools."""

PROTECTED_FILES: tuple[str, ...] = (".mcp.json", "AGENTS.md", "CLAUDE.md")
"""Single files protected from the file tools (AGENTS.md / CLAUDE.md: the project instructions every run reads)."""

SHELL_READ_ONLY: tuple[str, ...] = (".bearagent", ".claude", ".mcp.json", ".git/config", ".git/hooks", "AGENTS.md", "CLAUDE.md")
"""What the shell sandbox mounts read-only inside the otherwise writable workspace. `.git` itself stays writable so
that `git commit` works; only the files that make git run code (`config`, `hooks/`) are read-only."""


def protected_reason(rel_path: str) -> str | None:
    """Why `rel_path` (workspace-relative) is a control file, or None when it is an ordinary file."""
    parts = [p for p in rel_path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return None
    first = parts[0]
    if first in PROTECTED_DIRS:
        return f"{first}/ holds the workspace's control files"
    if len(parts) == 1 and first in PROTECTED_FILES:
        return f"{first} is read by every run as configuration or instructions"
    return None

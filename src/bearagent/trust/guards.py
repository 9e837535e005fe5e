"""Fail closed: a file that carries guards and does not load stops the run; it is never skipped.

Loading is lenient everywhere else (a broken agent file is skipped with a diagnostic, the rest still loads), but a
skipped `config.yaml` takes its deny rules and hooks with it, and a skipped agent file that narrowed an agent lets a
wider one of the same name run. So a run refuses to start while any of these is broken:
- `config.yaml` (workspace or user), `.mcp.json` or `.claude/settings*.json` that is there and cannot be read or
  parsed, whatever it is: a symlink out of the workspace or to nothing, a directory, a FIFO, an unreadable or
  oversized file, invalid text;
- a bad value in a guarding section (`permissions`, `permission_mode`) or a misspelt guarding key (`permisions:`);
- an agent file that does not parse and declares hooks, permissions or tool lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError, ErrorInfo

FILE_FAILURES = frozenset(
    {
        "config.yaml_syntax",
        "config.yaml_too_large",
        "config.yaml_aliases",
        "config.json_syntax",
        "config.not_a_mapping",
        "config.not_utf8",
        "config.unreadable",
        "config.no_frontmatter",
        "workspace.path_refused",  # a symlink out of the workspace, a FIFO: its rules must not silently drop
        "workspace.file_too_large",
    }
)
GUARD_FILES = frozenset({"config.yaml", ".mcp.json", "settings.json", "settings.local.json"})
GUARD_SECTIONS = ("permissions", "permission_mode", "sandbox", "shell_env")
"""Sections whose bad values stop a run (a broken hook entry already does, with its own message: `check_hooks`)."""
GUARD_KEYS = (*GUARD_SECTIONS, "hooks", "mcp_servers")
_AGENT_GUARD_KEYS = re.compile(
    r"^[ \t]*[\"']?(hooks|permission_mode|permissionMode|tools|disallowed_tools|disallowedTools|policy)[\"']?[ \t]*:",
    re.MULTILINE,
)


def guard_failures(diagnostics: Iterable[Diagnostic], agent_dirs: Sequence[Path] = ()) -> list[Diagnostic]:
    """The diagnostics that must stop a run (see the module docstring)."""
    out: list[Diagnostic] = []
    agent_roots: list[Path] | None = None  # resolved when a diagnostic asks (most checks have none to ask)
    for d in diagnostics:
        name = Path(d.source).name if d.source else ""
        if name in GUARD_FILES:
            if (d.severity == "error" and (d.code in FILE_FAILURES or _in_guard_section(d.field))) or (
                d.code == "config.unknown_key" and _misspelt_guard(d)
            ):
                out.append(d)
            continue
        if not (d.severity == "error" and d.code in FILE_FAILURES):
            continue
        if agent_roots is None:
            agent_roots = [root.resolve() for root in agent_dirs]
        broken_agent = _is_agent_file(d.source, agent_roots)
        if broken_agent and _declares_guards(Path(d.source)):
            out.append(d)
    return out


def require_guards(diagnostics: Iterable[Diagnostic], agent_dirs: Sequence[Path] = ()) -> None:
    """Raise `BearAgentError(configuration.guard_file_invalid)` (exit code 2) naming the first broken file, its line
    and the fix, when any guarding file did not load."""
    failures = guard_failures(diagnostics, agent_dirs)
    if not failures:
        return
    first = failures[0]
    where = first.source + (f":{first.line}" if first.line is not None else "")
    more = f" (and {len(failures) - 1} more: `bearagent doctor` lists them)" if len(failures) > 1 else ""
    raise BearAgentError(
        ErrorInfo.of(
            "configuration",
            "guard_file_invalid",
            f"{where}: {first.message}{more}. This file carries permission rules, hooks or tool limits, so "
            "BearAgent will not run without it",
        ),
        hint=first.fix or "fix the file, then run again",
    )


def _in_guard_section(field: str | None) -> bool:
    if not field:
        return False
    head = field.split(".", 1)[0]
    return head in GUARD_SECTIONS


def _misspelt_guard(d: Diagnostic) -> bool:
    """An unknown key whose closest known key guards something (`permisions`, `permissions.denny`)."""
    if d.field and "." in d.field and d.field.split(".", 1)[0] == "permissions":
        return True
    return any(f"did you mean {key!r}" in d.message for key in GUARD_KEYS)


def _is_agent_file(source: str, roots: Sequence[Path]) -> bool:
    if not source.endswith(".md"):
        return False
    try:
        path = Path(source).resolve()
    except OSError:
        return False
    return any(path.is_relative_to(root) for root in roots)


def _declares_guards(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # unreadable: assume the worst
    frontmatter = text.split("\n---", 1)[0]  # up to the closing fence (all of it when the fence is missing)
    return _AGENT_GUARD_KEYS.search(frontmatter[:65_536]) is not None

"""Project instructions: `AGENTS.md` (else `CLAUDE.md`) at the workspace root, with Claude Code's `@path` imports;
and, as Claude Code reads them, the user's `~/.claude/CLAUDE.md` before it (the user's own file: read as is, at most
`MAX_USER_BYTES`, its imports not followed) and the workspace's `CLAUDE.local.md` after it (a workspace file, read
by the same rules as the project file).

`@docs/conventions.md` in the text imports that file (relative to the importing file), as Claude Code does; imported
files may import others, at most 5 hops deep. Each imported file is appended after the text that imports it, marked
with its path, once (a file imported twice, or a cycle, is included once). `@` inside code spans and fenced code
blocks is text, not an import.

Every workspace file is untrusted, so imports are path-safe: only files inside the workspace, resolved with the file
tools' path safety (no `..` out, no absolute or `~` paths, no symlink that leaves the workspace, regular files only;
`config.safe_read`). A refused import is an error diagnostic and never read; a missing one an info. At most
MAX_IMPORTS files and MAX_IMPORT_BYTES in all are imported (then a warning says what was left out).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bearagent.config.safe_read import read_workspace_text
from bearagent.domain.diagnostics import Diagnostic

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
LOCAL_FILE = "CLAUDE.local.md"
"""Claude Code's personal project memory (not committed): read after the project file."""
USER_FILE_SHOWN = "~/.claude/CLAUDE.md"
MAX_USER_BYTES = 64 * 1024
MAX_IMPORT_DEPTH = 5
MAX_IMPORTS = 50
MAX_IMPORT_BYTES = 256 * 1024

_IMPORT = re.compile(r"(?:(?<=\s)|^)@((?:\.{1,2}/|~/|/|[A-Za-z0-9_])[^\s`'\"<>()\[\]{}|;,]*)", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instructions file, its text with the imports appended, and the imported files (workspace-relative)."""

    path: Path
    text: str
    imports: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    """The memory files read, in order: `~/.claude/CLAUDE.md`, `AGENTS.md` or `CLAUDE.md`, `CLAUDE.local.md`."""


@dataclass
class _State:
    root: Path
    diagnostics: list[Diagnostic]
    seen: set[str] = field(default_factory=lambda: set[str]())
    order: list[tuple[str, str]] = field(default_factory=lambda: [])
    size: int = 0
    cut: bool = False


def load_instructions(
    root: Path, diagnostics: list[Diagnostic], *, env: Mapping[str, str] | None = None
) -> Instructions | None:
    """The memory files, as Claude Code reads them: the user's (`~/.claude/CLAUDE.md`, from `env`'s HOME; None:
    not read), the project's (`AGENTS.md`, else `CLAUDE.md`, with its imports) and the local one
    (`CLAUDE.local.md`, with its imports), in that order (see the module docstring); None when none is readable."""
    project = _workspace_file(root, INSTRUCTION_FILES, diagnostics)
    local = _workspace_file(root, (LOCAL_FILE,), diagnostics)
    user = _user_file(env, diagnostics) if env is not None else None
    if local is None and user is None:
        return project
    parts: list[str] = []
    sources: list[str] = []
    if user is not None:
        parts.append(f'<user-memory path="{USER_FILE_SHOWN}">\n{user[1].rstrip()}\n</user-memory>')
        sources.append(USER_FILE_SHOWN)
    if project is not None:
        parts.append(project.text.rstrip())
        sources.append(project.path.name)
    if local is not None:
        parts.append(f'<local-memory path="{LOCAL_FILE}">\n{local.text.rstrip()}\n</local-memory>')
        sources.append(LOCAL_FILE)
    first = project or local
    path = first.path if first is not None else user[0] if user is not None else root / INSTRUCTION_FILES[0]
    imports = (*(project.imports if project else ()), *(local.imports if local else ()))
    return Instructions(path, "\n\n".join(parts) + "\n", tuple(dict.fromkeys(imports)), tuple(sources))


def user_memory_path(env: Mapping[str, str]) -> Path | None:
    """`~/.claude/CLAUDE.md` of `env`'s HOME (None: no HOME)."""
    home = env.get("HOME", "").strip()
    return Path(home) / ".claude" / "CLAUDE.md" if home else None


def _user_file(env: Mapping[str, str], diagnostics: list[Diagnostic]) -> tuple[Path, str] | None:
    """The user's own memory file (trusted: their home, not the workspace), at most `MAX_USER_BYTES`; its
    `@imports` are not followed."""
    path = user_memory_path(env)
    if path is None or not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_USER_BYTES + 1)
        text = data[:MAX_USER_BYTES].decode("utf-8", "replace")
    except OSError as exc:
        diagnostics.append(
            Diagnostic(
                severity="warning",
                code="instructions.user_unreadable",
                message=f"{USER_FILE_SHOWN} was not read: {exc.strerror or exc}",
                source=str(path),
                fix="make it readable, or remove it",
            )
        )
        return None
    if len(data) > MAX_USER_BYTES:
        diagnostics.append(
            Diagnostic(
                severity="warning",
                code="instructions.user_cut",
                message=f"{USER_FILE_SHOWN} was cut at {MAX_USER_BYTES // 1024} KiB",
                source=str(path),
                fix="shorten it",
            )
        )
    return (path, text) if text.strip() else None


def _workspace_file(root: Path, names: tuple[str, ...], diagnostics: list[Diagnostic]) -> Instructions | None:
    """The first of `names` at the workspace root that is readable, with its imports."""
    for name in names:
        path = root / name
        text = read_workspace_text(root, path, diagnostics, what=name)
        if text is None:
            continue
        state = _State(root, diagnostics, seen={name})
        _expand(state, name, text, depth=1)
        if not state.order:
            return Instructions(path, text, (), (name,))
        blocks = [f'<imported path="{rel}">\n{body.rstrip()}\n</imported>' for rel, body in state.order]
        text = text.rstrip() + "\n\n" + "\n\n".join(blocks) + "\n"
        return Instructions(path, text, tuple(r for r, _ in state.order), (name,))
    return None


def import_refs(text: str) -> list[str]:
    """The `@path` references of Markdown `text`, outside code spans and fenced blocks, in order."""
    visible = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
    refs = [m.group(1).rstrip(".:!?") for m in _IMPORT.finditer(visible)]
    return [r for r in dict.fromkeys(refs) if r]


def _expand(state: _State, rel: str, text: str, *, depth: int) -> None:
    for ref in import_refs(text):
        if state.cut:
            return
        where = f"@{ref} (imported by {rel})"
        if ref.startswith(("~", "/")):
            state.diagnostics.append(
                _diag(
                    state,
                    "error",
                    "instructions.import_refused",
                    rel,
                    f"{where} was not read: imports must be paths inside the workspace",
                    "import a workspace file",
                )
            )
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), ref))
        if target.startswith("../") or target == "..":
            state.diagnostics.append(
                _diag(
                    state,
                    "error",
                    "instructions.import_refused",
                    rel,
                    f"{where} was not read: it leads outside the workspace",
                    "import a workspace file",
                )
            )
            continue
        if target in state.seen:
            continue
        path = state.root / target
        if not path.is_file() and not path.is_symlink():
            if "/" in ref or "." in ref:
                state.diagnostics.append(
                    _diag(
                        state,
                        "info",
                        "instructions.import_missing",
                        rel,
                        f"{where}: no such file; it is not imported",
                        "fix the path (relative to the importing file)",
                    )
                )
            continue
        if depth > MAX_IMPORT_DEPTH:
            state.diagnostics.append(
                _diag(
                    state,
                    "warning",
                    "instructions.import_too_deep",
                    rel,
                    f"{where} was not imported: imports nest at most {MAX_IMPORT_DEPTH} deep",
                    "import it from a file nearer the top",
                )
            )
            continue
        body = read_workspace_text(state.root, path, state.diagnostics, what=where)
        if body is None:
            continue
        size = len(body.encode("utf-8"))
        if len(state.order) >= MAX_IMPORTS or state.size + size > MAX_IMPORT_BYTES:
            state.cut = True
            state.diagnostics.append(
                _diag(
                    state,
                    "warning",
                    "instructions.imports_cut",
                    rel,
                    f"{where} and later imports were left out: at most "
                    f"{MAX_IMPORTS} files and {MAX_IMPORT_BYTES // 1024} KiB are imported",
                    "import less",
                )
            )
            return
        state.seen.add(target)
        state.size += size
        state.order.append((target, body))
        _expand(state, target, body, depth=depth + 1)


def _diag(state: _State, severity: str, code: str, rel: str, message: str, fix: str) -> Diagnostic:
    return Diagnostic(
        severity="error" if severity == "error" else ("warning" if severity == "warning" else "info"),
        code=code,
        message=message,
        source=str(state.root / rel),
        fix=fix,
    )

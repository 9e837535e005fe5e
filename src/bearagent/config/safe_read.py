"""Reading the files a workspace gives BearAgent (AGENTS.md, config.yaml, agents, skills, actions, `.mcp.json`)
with the file tools' path safety.

A workspace is a directory a cloned repository controls. Were BearAgent to follow `AGENTS.md -> ~/.ssh/id_rsa`,
the key would go into the model request. So a workspace file is resolved exactly as the file tools resolve a path
(`tools.paths.WorkspacePaths`: component by component with `O_NOFOLLOW`; symlinks that stay inside the workspace are
followed, those that lead outside are refused; only regular files are read, so a FIFO cannot hang loading). A
refused file is an error diagnostic naming the file and the fix, and is never read. Files from the user's config
dir, plugins and the built-ins are trusted and read as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

from bearagent.config.files import not_utf8_diagnostic, unreadable_diagnostic
from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError
from bearagent.tools.paths import PathRefused, WorkspacePaths

MAX_WORKSPACE_FILE_BYTES = 4 * 1024 * 1024
_CONTROL_DIRS = frozenset({".bearagent", ".claude", ".agents"})


def source_root(source: Source) -> Path | None:
    """The workspace root a workspace-level source (`.bearagent/agents`, `.claude/skills`, …) lies in; None for
    the trusted user, plugin and built-in sources. A workspace source elsewhere is confined to its own directory."""
    if source.level != "workspace" or source.directory is None:
        return None
    directory = source.directory
    if directory.parent.name in _CONTROL_DIRS:
        return directory.parent.parent
    return directory


def _relative(root: Path, path: Path) -> str | None:
    """`path` relative to `root`, or to `root` resolved (the resolution only when the first fails: loading a
    workspace checks every file it reads, thousands in a large `.claude/`)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        pass
    try:
        return path.relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return None


def refusal(root: Path, path: Path) -> str | None:
    """Why the workspace file `path` (below `root`) must not be read (a symlink out of the workspace, a FIFO, a
    device…), or None when it may be read or does not exist. A path outside `root` is not a workspace file."""
    rel = _relative(root, path)
    if rel is None:
        return None
    try:
        opened = WorkspacePaths(root).open_read(rel)
    except PathRefused as exc:
        return exc.info.message
    except (BearAgentError, OSError):
        return None  # missing or unreachable: the caller's own reading reports it
    os.close(opened.fd)
    return None


def refused_diagnostic(path: Path, why: str, *, what: str) -> Diagnostic:
    return Diagnostic(
        severity="error",
        code="workspace.path_refused",
        message=f"{what} was not read: {why}",
        source=str(path),
        fix="replace the symlink with a regular file inside the workspace; BearAgent never reads a file outside the "
        "workspace because a workspace file points there",
    )


def check_workspace_file(root: Path | None, path: Path, diagnostics: list[Diagnostic], *, what: str) -> bool:
    """True when `path` may be read (it is not a workspace file, or it resolves safely inside `root`); otherwise
    an error diagnostic is added and the caller must skip the file."""
    if root is None:
        return True
    why = refusal(root, path)
    if why is None:
        return True
    diagnostics.append(refused_diagnostic(path, why, what=what))
    return False


def read_workspace_text(root: Path, path: Path, diagnostics: list[Diagnostic], *, what: str) -> str | None:
    """The UTF-8 text of the workspace file `path`, read race-safely through the file tools' path resolution (the
    bytes read are those of the file that was checked). None when it is missing, refused or unreadable (refused
    and unreadable files add an error diagnostic)."""
    rel = _relative(root, path)
    if rel is None:
        raise ValueError(f"{path} is not inside the workspace {root}")
    try:
        opened = WorkspacePaths(root).open_read(rel)
    except PathRefused as exc:
        diagnostics.append(refused_diagnostic(path, exc.info.message, what=what))
        return None
    except (BearAgentError, FileNotFoundError, NotADirectoryError):
        return None  # missing
    except OSError as exc:
        diagnostics.append(unreadable_diagnostic(path, exc))
        return None
    try:
        if opened.st.st_size > MAX_WORKSPACE_FILE_BYTES:
            diagnostics.append(
                Diagnostic(
                    severity="error",
                    code="workspace.file_too_large",
                    message=f"{what} is {opened.st.st_size} bytes (the limit is {MAX_WORKSPACE_FILE_BYTES}); "
                    "it was not read",
                    source=str(path),
                    fix="shorten it",
                )
            )
            return None
        chunks: list[bytes] = []
        while chunk := os.read(opened.fd, 1 << 20):
            chunks.append(chunk)
    except OSError as exc:
        diagnostics.append(unreadable_diagnostic(path, exc))
        return None
    finally:
        os.close(opened.fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        diagnostics.append(not_utf8_diagnostic(path))
        return None


def stray_file(path: Path, diagnostics: list[Diagnostic], *, what: str) -> bool:
    """Whether something exists at `path` that is not a regular file (a dangling symlink, a directory, a FIFO, a
    socket): then an error diagnostic names it (a guard file that is there but does not load stops a run:
    `trust/guards.py`), and the caller reads nothing. False when nothing is there, or a regular file is."""
    if path.is_file() or not os.path.lexists(path):
        return False
    kind = "a symlink to nothing" if path.is_symlink() and not path.exists() else "not a regular file"
    diagnostics.append(
        Diagnostic(
            severity="error",
            code="config.unreadable",
            message=f"{what} is {kind}; it was not read",
            source=str(path),
            fix=f"replace {path} with a regular file (or remove it)",
        )
    )
    return True

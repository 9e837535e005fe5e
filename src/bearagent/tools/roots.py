"""The file tools' roots: the workspace and the additional directories (`permissions.additionalDirectories`).

`WorkspaceRoots` is `WorkspacePaths` (`tools/paths.py`) with extra roots. A path inside an additional directory,
written absolute, as `~/...`, or relative with `..` from the workspace, normalises to its absolute form and is opened
the same race-safe way as a workspace path: component by component with `O_NOFOLLOW` from a directory fd of *that*
root, with that root's control files (`.git/hooks`, `.claude`, ...) guarded against writes through symlinks. A
symlink inside an additional directory may not leave it, nor lead into the workspace: a workspace file is reached by
its workspace path, where the workspace's own guards (and the policy's control-file rule) apply. Every other path
is refused exactly as `WorkspacePaths` refuses it, with the additional directories named in the message.

The directories come with each tool call (`ToolContext.settings[ADDITIONAL_DIRECTORIES_SETTING]`, filled by the
runtime from the merged config); an additional directory inside the workspace adds nothing.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol, cast

from bearagent.domain.errors import ErrorInfo
from bearagent.tools.paths import OpenedFile, PathRefused, TargetDir, WorkspacePaths

ADDITIONAL_DIRECTORIES_SETTING = "additional_directories"
"""ToolContext.settings key: the absolute directories besides the workspace the file tools may use (filled by the
runtime from `permissions.additionalDirectories`: `sandbox.request.tool_settings`)."""


class _CallContext(Protocol):
    @property
    def workspace_root(self) -> Path: ...
    @property
    def settings(self) -> Mapping[str, object]: ...


def additional_directories(settings: Mapping[str, object]) -> tuple[str, ...]:
    """The absolute additional directories named in a tool call's settings."""
    raw = settings.get(ADDITIONAL_DIRECTORIES_SETTING)
    if not isinstance(raw, (list, tuple)):
        return ()
    return tuple(d for d in cast(Iterable[object], raw) if isinstance(d, str) and os.path.isabs(d))


class WorkspaceRoots(WorkspacePaths):
    """Safe path resolution below the workspace root and the additional directories (see the module docstring)."""

    def __init__(self, root: Path, extra_roots: Iterable[str | Path] = ()) -> None:
        super().__init__(root)
        real_root = str(self.root)
        spellings: dict[str, str] = {}  # how a path may name the root (as given, real) -> its real path
        for extra in extra_roots:
            real = os.path.realpath(extra)
            if _inside(real, real_root):
                continue  # inside the workspace: already reachable, with its guards
            for spelling in (os.path.normpath(str(extra)), real):
                spellings.setdefault(spelling, real)
        self._spellings = dict(sorted(spellings.items(), key=lambda item: -len(item[0])))
        self._subs: dict[str, WorkspacePaths] = {}

    @classmethod
    def for_context(cls, context: _CallContext) -> WorkspaceRoots:
        """The roots of one tool call: its workspace and the additional directories of its settings."""
        return cls(context.workspace_root, additional_directories(context.settings))

    @property
    def extra_roots(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._spellings.values()))

    # ----- lexical -----

    def normalise(self, user_path: str) -> str:
        """A workspace-relative path ('' is the root), or the absolute path of one inside an additional directory."""
        if self._spellings:
            candidate = self._absolute(user_path)
            if candidate is not None and self._strip_root(candidate) is None:
                found = self._in_extra(user_path, candidate)
                if found is not None:
                    return found
        try:
            return super().normalise(user_path)
        except PathRefused as exc:
            if not self._spellings or not (
                exc.info.code == "permission.outside_workspace" or user_path.startswith("~")
            ):
                raise
            shown = ", ".join(self.extra_roots)[:300]
            message = f"{exc.info.message} It is in none of the additional directories either: {shown}."
            raise PathRefused(
                ErrorInfo.of("permission", exc.info.code.split(".", 1)[-1], message, path=user_path[:200])
            ) from None

    def _absolute(self, user_path: str) -> str | None:
        """The absolute, normalised form of `~/x`, `/x` or a relative path (None when there is none)."""
        if "\x00" in user_path:
            return None
        path = user_path.replace("\\", "/")
        if path.startswith("~"):
            expanded = os.path.expanduser(path)
            return None if expanded.startswith("~") else posixpath.normpath(expanded)
        if posixpath.isabs(path):
            return posixpath.normpath(path)
        return posixpath.normpath(posixpath.join(str(self.root), path))

    def _in_extra(self, user_path: str, absolute: str) -> str | None:
        for spelling, real in self._spellings.items():
            if _inside(absolute, spelling):
                rel = absolute[len(spelling) :].lstrip("/")
                for part in rel.split("/") if rel else ():
                    self._check_component(user_path, part)
                return posixpath.join(real, rel) if rel else real
        return None

    # ----- race-safe resolution -----

    def _locate(self, absolute: str) -> tuple[WorkspacePaths, str]:
        for real in self.extra_roots:
            if _inside(absolute, real):
                sub = self._subs.get(real)
                if sub is None:
                    sub = self._subs[real] = WorkspacePaths(Path(real))
                return sub, absolute[len(real) :].lstrip("/")
        raise AssertionError(f"{absolute} is in no additional directory")  # normalise() only returns those

    def _checked(self, user_path: str, sub: WorkspacePaths, rel: str) -> str:
        """The absolute path of `rel` below `sub`'s root; refused when it lies in the workspace (a symlink led
        there)."""
        absolute = posixpath.join(str(sub.root), rel) if rel else str(sub.root)
        inside = self._strip_root(absolute)
        if inside is not None:
            raise PathRefused(
                ErrorInfo.of(
                    "permission",
                    "symlink_escape",
                    f"Refused path {user_path[:200]!r}: it leads into the workspace through a symlink in an "
                    f"additional directory. Use its path in the workspace: {inside or '.'}",
                    path=user_path[:200],
                )
            )
        return absolute

    def open_read(self, user_path: str) -> OpenedFile:
        lexical = self.normalise(user_path)
        if not posixpath.isabs(lexical):
            return super().open_read(lexical)
        sub, rel = self._locate(lexical)
        opened = sub.open_read(rel)
        try:
            return replace(opened, rel=self._checked(user_path, sub, opened.rel))
        except BaseException:
            os.close(opened.fd)
            raise

    def open_target(self, user_path: str, *, create_parents: bool) -> TargetDir:
        lexical = self.normalise(user_path)
        if not posixpath.isabs(lexical):
            return super().open_target(lexical, create_parents=create_parents)
        sub, rel = self._locate(lexical)
        target = sub.open_target(rel, create_parents=create_parents)
        try:
            return replace(target, rel=self._checked(user_path, sub, target.rel))
        except BaseException:
            os.close(target.dir_fd)
            raise

    def open_dir(self, user_path: str) -> tuple[int, str]:
        lexical = self.normalise(user_path)
        if not posixpath.isabs(lexical):
            return super().open_dir(lexical)
        sub, rel = self._locate(lexical)
        fd, resolved = sub.open_dir(rel)
        try:
            return fd, self._checked(user_path, sub, resolved)
        except BaseException:
            os.close(fd)
            raise

    def walk_root(self, start: str) -> tuple[WorkspacePaths, str]:
        """What a directory walk (Glob, Grep) from the normalised `start` goes through, and `start` relative to it:
        the workspace itself, or the additional directory's own paths (so the walk stays race-safe below that
        root). Raises as `open_dir` does for a start that is no directory or leads into the workspace."""
        if not posixpath.isabs(start):
            return self, start
        fd, _resolved = self.open_dir(start)
        os.close(fd)
        return self._locate(start)

    def root_of(self, path: str) -> tuple[str, str]:
        """`(root, path relative to it)` of a normalised path: the workspace root for a relative one."""
        if posixpath.isabs(path):
            for real in self.extra_roots:
                if _inside(path, real):
                    return real, path[len(real) :].lstrip("/")
        return str(self.root), path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")

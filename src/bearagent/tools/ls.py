"""`LS{path, ignore?}`: the tree of files and directories below a directory, bounded; race-safe (fd-relative, no
symlink followed), `.git` skipped, paths that permission rules hide from searches left out."""

from __future__ import annotations

import asyncio
import fnmatch
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.walk import Cancelled, cancellable, hidden_spec

if TYPE_CHECKING:
    import pathspec

MAX_ENTRIES = 1_000
MAX_DEPTH = 32
MAX_IGNORE_PATTERNS = 100
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

SPEC = ToolSpec(
    name="LS",
    description=(
        "List the files and directories below `path` (relative to the workspace root, or absolute inside it) as a "
        f"tree, directories first, up to {MAX_ENTRIES} entries. `ignore` is a list of glob patterns (matched against "
        "names and paths below `path`) to leave out. Skips .git; symlinks are shown, not followed. Prefer Glob and "
        "Grep when you know what you are looking for."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory to list ('.' is the workspace root)."},
                "ignore": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 500},
                    "maxItems": MAX_IGNORE_PATTERNS,
                    "description": "Glob patterns to leave out, e.g. ['node_modules', '*.pyc'].",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=60_000,
)


def _patterns(arguments: Mapping[str, JsonValue]) -> list[str]:
    raw = arguments.get("ignore")
    if not isinstance(raw, (list, tuple)):
        return []
    return [p.rstrip("/") for p in cast(Sequence[object], raw) if isinstance(p, str) and p.rstrip("/")]


@dataclass(slots=True)
class _Listing:
    ignore: list[str]
    hidden: pathspec.GitIgnoreSpec | None
    cancel: threading.Event
    lines: list[str] = field(default_factory=lambda: [])
    files: int = 0
    dirs: int = 0
    capped: bool = False

    def skipped(self, name: str, rel: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p) for p in self.ignore)

    def walk(self, fd: int, rel: str, root_rel: str, depth: int) -> None:
        if self.cancel.is_set():
            raise Cancelled
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        dirs: list[str] = []
        others: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            below = f"{rel}/{name}" if rel else name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = entry.is_symlink()
            except OSError:
                continue
            if (is_dir and name == ".git") or self.skipped(name, below) or self._hidden(root_rel, below, is_dir):
                continue
            if is_dir:
                dirs.append(name)
            else:
                others.append((name, "@" if is_link else ""))
        indent = "  " * (depth + 1)
        for name in dirs:
            if not self._add(f"{indent}- {name}/"):
                return
            self.dirs += 1
            if depth + 1 >= MAX_DEPTH:
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # vanished, swapped for a symlink, or unreadable
            try:
                self.walk(child, f"{rel}/{name}" if rel else name, root_rel, depth + 1)
            finally:
                os.close(child)
            if self.capped:
                return
        for name, mark in others:
            if not self._add(f"{indent}- {name}{mark}"):
                return
            self.files += 1

    def _add(self, line: str) -> bool:
        if len(self.lines) >= MAX_ENTRIES:
            self.capped = True
            return False
        self.lines.append(line)
        return True

    def _hidden(self, root_rel: str, below: str, is_dir: bool) -> bool:
        spec = self.hidden
        if spec is None:
            return False
        full = f"{root_rel}/{below}" if root_rel else below
        return spec.match_file(full + ("/" if is_dir else ""))


class LSTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {
            "path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "path")),
            "ignore": _patterns(arguments),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        with cancellable() as cancel:
            return await asyncio.to_thread(self._list, arguments, context, cancel)

    def _list(self, arguments: JsonMapping, context: ToolContext, cancel: threading.Event) -> ToolResult:
        roots = WorkspaceRoots.for_context(context)
        fd, resolved = roots.open_dir(str_arg(arguments, "path"))
        listing = _Listing(_patterns(arguments), hidden_spec(context.settings), cancel)
        try:
            _root, root_rel = roots.root_of(resolved)
            listing.walk(fd, "", root_rel, 0)
        except Cancelled:
            raise tool_error("cancelled", "ls", "LS was cancelled.") from None
        finally:
            os.close(fd)
        shown = resolved or "."
        content = "\n".join([f"- {shown}/", *listing.lines])
        if not listing.lines:
            content += "\n  (empty)"
        if listing.capped:
            content += (
                f"\n\n[listing stopped at {MAX_ENTRIES} entries. List a subdirectory, add `ignore` patterns, or use "
                "Glob.]"
            )
        return self.ok(
            context,
            content,
            {"path": shown, "files": listing.files, "directories": listing.dirs, "truncated": listing.capped},
            truncated=listing.capped,
        )

"""`Glob{pattern, path?}`: file paths matching a glob, newest first; skips .git, honours .gitignore."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.walk import (
    Cancelled,
    WorkspaceWalker,
    cancellable,
    check_glob,
    glob_to_regex,
    hidden_spec,
    name_suffixes,
)

MAX_RESULTS = 100
MAX_SCANNED_MATCHES = 200_000

SPEC = ToolSpec(
    name="Glob",
    description=(
        "Find files by glob pattern (e.g. '**/*.py', 'src/**/*.{ts,tsx}', '*.md'), relative to `path` (default: the "
        f"workspace root). Returns up to {MAX_RESULTS} paths, most recently modified first. Skips .git and files "
        "ignored by .gitignore; symlinks are not followed."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern relative to `path`."},
                "path": {"type": "string", "description": "Directory to search in (default: workspace root)."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=60_000,
)


class GlobTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        pattern = str_arg(arguments, "pattern").replace("\\", "/")
        check_glob(pattern, "pattern")
        return {
            "pattern": pattern,
            "path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "path")),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        with cancellable() as cancel:
            return await asyncio.to_thread(self._glob, arguments, context, cancel)

    def _glob(self, arguments: JsonMapping, context: ToolContext, cancel: threading.Event) -> ToolResult:
        pattern = str_arg(arguments, "pattern")
        start = str_arg(arguments, "path")
        regex = check_glob(pattern, "pattern")
        walk_paths, walk_start = WorkspaceRoots.for_context(context).walk_root(start)
        walker = WorkspaceWalker(walk_paths, walk_start, cancel=cancel, hidden=hidden_spec(context.settings))
        found: list[tuple[float, str]] = []
        scan_capped = False
        # `**/NAME-GLOB` (the common case) only needs the file name: skip building every relative path
        name_only = glob_to_regex(pattern[3:]) if pattern.startswith("**/") and "/" not in pattern[3:] else None
        suffixes = name_suffixes(pattern[3:]) if name_only is not None else None
        try:
            for batch in walker.batches():
                fd = batch.dir_fd
                for name in batch.names:
                    if suffixes is not None:
                        if not name.endswith(suffixes):
                            continue
                        rel = batch.rel(name)
                    elif name_only is not None:
                        if name_only.match(name) is None:
                            continue
                        rel = batch.rel(name)
                    else:
                        rel = batch.rel(name)
                        if regex.match(rel) is None:
                            continue
                    try:
                        mtime = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime
                    except OSError:
                        continue
                    found.append((mtime, rel))
                if len(found) >= MAX_SCANNED_MATCHES:
                    scan_capped = True
                    break
        except Cancelled:
            raise tool_error("cancelled", "glob", "Glob was cancelled.") from None
        found.sort(key=lambda item: (-item[0], item[1]))
        prefix = f"{start}/" if start else ""
        paths = [prefix + rel for _, rel in found[:MAX_RESULTS]]
        truncated = len(found) > MAX_RESULTS or scan_capped
        where = start or "the workspace root"
        if not paths:
            content = f"No files match {pattern!r} under {where}."
        else:
            content = "\n".join(paths)
            if truncated:
                content += (
                    f"\n\n[{len(found)}{'+' if scan_capped else ''} files match; showing the {MAX_RESULTS} most "
                    "recently modified. Use a narrower pattern or path.]"
                )
        return self.ok(
            context,
            content,
            {"pattern": pattern, "path": start, "filenames": paths, "num_files": len(found), "truncated": truncated},
            truncated=truncated,
        )

"""`Read{file_path, offset?, limit?}`: a page of lines of a UTF-8 text file, `cat -n` style."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import BinaryIO

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, int_arg, str_arg, tool_error
from bearagent.tools.roots import WorkspaceRoots

DEFAULT_LIMIT = 2_000
MAX_LINE_CHARS = 2_000
MAX_PAGE_CHARS = 90_000
BINARY_SNIFF_BYTES = 8_192

SPEC = ToolSpec(
    name="Read",
    description=(
        "Read a text file in the workspace. Returns numbered lines (cat -n style). `offset` is the 1-based first line, "
        f"`limit` the number of lines (default {DEFAULT_LIMIT}). Lines longer than {MAX_LINE_CHARS} characters are cut. "
        "The result says total_lines and next_offset when there is more to read. Binary files are refused."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Path relative to the workspace root (or absolute inside it).",
                },
                "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start from."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
            },
            "required": ["file_path"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=60_000,
    max_output_chars=100_000,
)


class ReadTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {
            "file_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "file_path")),
            "offset": int_arg(arguments, "offset", 1),
            "limit": min(int_arg(arguments, "limit", DEFAULT_LIMIT), 100_000),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._read, arguments, context)

    def _read(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        opened = WorkspaceRoots.for_context(context).open_read(str_arg(arguments, "file_path"))
        with os.fdopen(opened.fd, "rb") as fh:
            return self.page(fh, opened.rel, opened.st.st_size, arguments, context)

    def page(self, fh: BinaryIO, rel: str, size: int, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        """The page of `fh` (a text file's bytes, from the disk or from an editor's buffer) `arguments` ask for."""
        offset = int_arg(arguments, "offset", 1)
        limit = int_arg(arguments, "limit", DEFAULT_LIMIT)
        head = fh.read(BINARY_SNIFF_BYTES)
        if b"\x00" in head:
            raise tool_error(
                "tool",
                "binary_file",
                f"{rel!r} is a binary file ({size} bytes); Read only shows text. "
                "Use Bash (e.g. `file` or `xxd | head`) to inspect it.",
                path=rel,
            )
        fh.seek(0)
        out: list[str] = []
        page_lines: list[str] = []
        total = 0
        chars = 0
        cut_lines = 0
        page_full = False
        last_shown = offset - 1
        for raw in fh:
            total += 1
            if total < offset or page_full:
                continue
            if total >= offset + limit:
                page_full = True
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise tool_error(
                    "tool",
                    "not_utf8",
                    f"{rel!r} is not valid UTF-8 (line {total}, byte {exc.start} of that line); Read only reads "
                    "UTF-8 text. Use Bash with iconv to convert it, e.g. `iconv -f latin1 -t utf-8 FILE`.",
                    path=rel,
                    line=total,
                ) from None
            line = line.rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f"… [line cut: {len(line) - MAX_LINE_CHARS} more characters]"
                cut_lines += 1
            rendered = f"{total:>6}\t{line}"
            if chars + len(rendered) + 1 > MAX_PAGE_CHARS and out:
                page_full = True
                continue
            chars += len(rendered) + 1
            out.append(rendered)
            page_lines.append(line)
            last_shown = total
        if total == 0:
            return self.ok(
                context,
                f"(file {rel!r} is empty)",
                {
                    "path": rel,
                    "text": "",
                    "start_line": 1,
                    "end_line": 0,
                    "total_lines": 0,
                    "next_offset": None,
                    "truncated": False,
                },
            )
        if offset > total:
            raise tool_error(
                "validation",
                "offset_out_of_range",
                f"offset {offset} is past the end of {rel!r}, which has {total} lines. Use an offset from 1 to {total}.",
                path=rel,
            )
        truncated = last_shown < total
        next_offset = last_shown + 1 if truncated else None
        content = "\n".join(out)
        if truncated:
            content += (
                f"\n\n[showing lines {offset}-{last_shown} of {total}; call Read with offset={next_offset} to continue]"
            )
        data: dict[str, object] = {
            "path": rel,
            "text": "\n".join(page_lines) + "\n",
            "start_line": offset,
            "end_line": last_shown,
            "total_lines": total,
            "next_offset": next_offset,
            "truncated": truncated,
        }
        if cut_lines:
            data["lines_cut"] = cut_lines
        return self.ok(context, content, data, truncated=truncated)

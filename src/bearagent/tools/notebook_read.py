"""`NotebookRead{notebook_path, cell_id?}`: a Jupyter notebook's cells (source and outputs), or one cell; bounded."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import cast

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.fileio import MAX_EDIT_FILE_BYTES
from bearagent.tools.notebook import MAX_RENDER_CHARS, cell_id, cells, find_cell, parse_notebook, render_cell
from bearagent.tools.roots import WorkspaceRoots

SPEC = ToolSpec(
    name="NotebookRead",
    description=(
        "Read a Jupyter notebook (.ipynb) of the workspace: every cell with its id, type, source and outputs "
        "(images are named, not shown), or only the cell `cell_id`. Use the ids with NotebookEdit."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "notebook_path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Path of the .ipynb file, relative to the workspace root (or absolute inside it).",
                },
                "cell_id": {"type": "string", "minLength": 1, "description": "Read only this cell."},
            },
            "required": ["notebook_path"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=60_000,
    max_output_chars=100_000,
)


class NotebookReadTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        out: dict[str, object] = {
            "notebook_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "notebook_path"))
        }
        if isinstance(arguments.get("cell_id"), str):
            out["cell_id"] = arguments["cell_id"]
        return out

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._read, arguments, context)

    def _read(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        opened = WorkspaceRoots.for_context(context).open_read(str_arg(arguments, "notebook_path"))
        rel = opened.rel
        with os.fdopen(opened.fd, "rb") as fh:
            if opened.st.st_size > MAX_EDIT_FILE_BYTES:
                raise tool_error(
                    "tool",
                    "file_too_large",
                    f"{rel!r} is {opened.st.st_size} bytes; NotebookRead handles notebooks up to "
                    f"{MAX_EDIT_FILE_BYTES} bytes. Use Bash (e.g. `jq '.cells | length'`) to inspect it.",
                    path=rel,
                )
            notebook = parse_notebook(fh.read(MAX_EDIT_FILE_BYTES + 1), rel)
        all_cells = cells(notebook)
        wanted = str_arg(arguments, "cell_id")
        indices = [find_cell(notebook, wanted, rel)] if wanted else list(range(len(all_cells)))
        blocks: list[str] = []
        chars = 0
        truncated = False
        for i in indices:
            block = render_cell(all_cells[i], i)
            if chars + len(block) > MAX_RENDER_CHARS and blocks:
                truncated = True
                rest = [cell_id(all_cells[j], j) for j in indices[len(blocks) : len(blocks) + 5]]
                blocks.append(
                    f"[{len(indices) - len(blocks)} more cells not shown: read them one at a time with cell_id, "
                    f"e.g. {', '.join(rest)}]"
                )
                break
            chars += len(block) + 2
            blocks.append(block)
        content = "\n\n".join(blocks) if blocks else f"(notebook {rel!r} has no cells)"
        language = _language(notebook)
        return self.ok(
            context,
            content,
            {
                "path": rel,
                "total_cells": len(all_cells),
                "cells": [
                    {"id": cell_id(all_cells[i], i), "index": i, "cell_type": str(all_cells[i].get("cell_type"))}
                    for i in indices[:1000]
                ],
                "language": language,
                "truncated": truncated,
            },
            truncated=truncated,
        )


def _language(notebook: Mapping[str, object]) -> str | None:
    metadata = notebook.get("metadata")
    info = cast(Mapping[str, object], metadata).get("language_info") if isinstance(metadata, Mapping) else None
    name = cast(Mapping[str, object], info).get("name") if isinstance(info, Mapping) else None
    return name[:100] if isinstance(name, str) else None

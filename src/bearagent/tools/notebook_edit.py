"""`NotebookEdit{notebook_path, new_source, cell_id?, cell_type?, edit_mode?}`: replace, insert or delete one cell of
a Jupyter notebook; atomic; returns an Artifact. Claude Code's schema: `edit_mode` is `replace` (default), `insert`
(after `cell_id`, or first when no `cell_id`; needs `cell_type`) or `delete`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.fileio import read_existing
from bearagent.tools.notebook import cell_id, cells, dump, find_cell, new_cell, parse_notebook, set_source
from bearagent.tools.paths import TargetDir
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.write import write_text_file

SPEC = ToolSpec(
    name="NotebookEdit",
    description=(
        "Change one cell of a Jupyter notebook (.ipynb) in the workspace. edit_mode 'replace' (default) sets the "
        "source of cell `cell_id` (a code cell's outputs are cleared); 'insert' adds a new cell of `cell_type` after "
        "`cell_id` (or at the start without one); 'delete' removes cell `cell_id`. Get the ids from NotebookRead. "
        "The write is atomic."
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
                "cell_id": {"type": "string", "minLength": 1, "description": "The cell to change (or insert after)."},
                "new_source": {"type": "string", "description": "The new source of the cell."},
                "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Required to insert."},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "default": "replace"},
            },
            "required": ["notebook_path", "new_source"],
            "additionalProperties": False,
        }
    ),
    side_effect="write",
    version="1",
    timeout_ms=60_000,
    max_input_bytes=4 * 1_048_576,
)


class NotebookEditTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        mode = str_arg(arguments, "edit_mode", "replace")
        cell = str_arg(arguments, "cell_id")
        kind = str_arg(arguments, "cell_type")
        if mode in ("replace", "delete") and not cell:
            raise tool_error(
                "validation",
                "cell_id_required",
                f"edit_mode {mode!r} needs cell_id, the cell to {mode}. Get the ids with NotebookRead.",
                field="cell_id",
            )
        if mode == "insert" and not kind:
            raise tool_error(
                "validation",
                "cell_type_required",
                "edit_mode 'insert' needs cell_type ('code' or 'markdown') for the new cell.",
                field="cell_type",
            )
        out: dict[str, object] = {
            "notebook_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "notebook_path")),
            "new_source": str_arg(arguments, "new_source"),
            "edit_mode": mode,
        }
        if cell:
            out["cell_id"] = cell
        if kind:
            out["cell_type"] = kind
        return out

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._edit, arguments, context)

    def _edit(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        mode = str_arg(arguments, "edit_mode", "replace")
        wanted = str_arg(arguments, "cell_id")
        kind = str_arg(arguments, "cell_type") or None
        source = str_arg(arguments, "new_source")
        outcome: dict[str, object] = {}

        def render(target: TargetDir) -> bytes:
            notebook = parse_notebook(read_existing(target), target.rel)
            all_cells = cells(notebook)
            if mode == "insert":
                at = find_cell(notebook, wanted, target.rel) + 1 if wanted else 0
                cell = new_cell(notebook, kind or "code", source)
                all_cells.insert(at, cell)
                outcome.update(cell_id=cell_id(cell, at), index=at, cell_type=cell["cell_type"])
            elif mode == "delete":
                at = find_cell(notebook, wanted, target.rel)
                gone = all_cells.pop(at)
                outcome.update(cell_id=cell_id(gone, at), index=at, cell_type=gone.get("cell_type"))
            else:
                at = find_cell(notebook, wanted, target.rel)
                set_source(all_cells[at], source, kind)
                outcome.update(cell_id=cell_id(all_cells[at], at), index=at, cell_type=all_cells[at]["cell_type"])
            outcome["total_cells"] = len(all_cells)
            return dump(notebook)

        written = write_text_file(context, str_arg(arguments, "notebook_path"), create_parents=False, render=render)
        verb = {"insert": "Inserted", "delete": "Deleted", "replace": "Replaced"}[mode]
        return self.ok(
            context,
            f"{verb} {outcome['cell_type']} cell {outcome['cell_id']} (index {outcome['index']}) in {written.rel}; "
            f"the notebook has {outcome['total_cells']} cells.",
            {
                "path": written.rel,
                "edit_mode": mode,
                **outcome,
                "size_bytes": len(written.payload),
                "sha256": written.artifact.sha256,
            },
            artifacts=(written.artifact,),
        )

"""`MultiEdit{file_path, edits[{old_string, new_string, replace_all?}]}`: several exact replacements in one file,
applied in order, each to the result of the one before; atomic (all of them or none); returns an Artifact."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import cast

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.edit import decode_utf8, replace_exact
from bearagent.tools.fileio import read_existing
from bearagent.tools.paths import TargetDir
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.write import write_text_file

MAX_EDITS = 100

SPEC = ToolSpec(
    name="MultiEdit",
    description=(
        "Make several exact string replacements in one text file of the workspace. The edits apply in order, each "
        "to the result of the previous one; each `old_string` must occur exactly once unless its `replace_all` is "
        "true. Atomic: if any edit fails, the file is left unchanged. Prefer it to several Edit calls on one file."
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
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_EDITS,
                    "description": "The replacements, applied in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string", "minLength": 1, "description": "The exact text."},
                            "new_string": {"type": "string", "description": "The replacement text."},
                            "replace_all": {"type": "boolean", "default": False},
                        },
                        "required": ["old_string", "new_string"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["file_path", "edits"],
            "additionalProperties": False,
        }
    ),
    side_effect="write",
    version="1",
    timeout_ms=60_000,
    max_input_bytes=4 * 1_048_576,
)


def _edits(arguments: Mapping[str, JsonValue]) -> list[tuple[str, str, bool]]:
    raw = arguments.get("edits")
    out: list[tuple[str, str, bool]] = []
    for item in cast(Sequence[object], raw) if isinstance(raw, (list, tuple)) else ():
        if isinstance(item, Mapping):
            edit = cast(Mapping[str, JsonValue], item)
            out.append((str_arg(edit, "old_string"), str_arg(edit, "new_string"), edit.get("replace_all") is True))
    return out


class MultiEditTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        edits = _edits(arguments)
        for i, (old, new, _all) in enumerate(edits):
            if old == new:
                raise tool_error(
                    "validation",
                    "no_change",
                    f"edits[{i}]: old_string and new_string are identical, so the edit would change nothing. "
                    "Give the new text or drop the edit.",
                    field=f"edits/{i}",
                )
        return {
            "file_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "file_path")),
            "edits": [{"old_string": o, "new_string": n, "replace_all": a} for o, n, a in edits],
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._edit, arguments, context)

    def _edit(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        edits = _edits(arguments)
        counts: list[int] = []

        def render(target: TargetDir) -> bytes:
            text = decode_utf8(read_existing(target), target.rel, "MultiEdit")
            for i, (old, new, replace_all) in enumerate(edits):
                where = f"edits[{i}] (none of the {len(edits)} edits was applied): "
                text, count = replace_exact(text, old, new, replace_all=replace_all, rel=target.rel, where=where)
                counts.append(count)
            return text.encode("utf-8")

        written = write_text_file(context, str_arg(arguments, "file_path"), create_parents=False, render=render)
        size = len(written.payload)
        total = sum(counts)
        return self.ok(
            context,
            f"Edited {written.rel}: applied {len(edits)} edit{'s' if len(edits) != 1 else ''}, replaced {total} "
            f"occurrence{'s' if total != 1 else ''} ({size} bytes).",
            {
                "path": written.rel,
                "edits": len(edits),
                "replacements": counts,
                "size_bytes": size,
                "sha256": written.artifact.sha256,
            },
            artifacts=(written.artifact,),
        )

"""`Edit{file_path, old_string, new_string, replace_all?}`: exact string replacement, atomic; returns an Artifact."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.fileio import read_existing
from bearagent.tools.paths import TargetDir
from bearagent.tools.roots import WorkspaceRoots
from bearagent.tools.write import write_text_file

SPEC = ToolSpec(
    name="Edit",
    description=(
        "Replace an exact string in a text file of the workspace. `old_string` must occur exactly once unless "
        "`replace_all` is true; include enough surrounding lines to make it unique. Whitespace and indentation "
        "must match exactly. The edit is atomic."
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
                "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The replacement text."},
                "replace_all": {"type": "boolean", "default": False, "description": "Replace every occurrence."},
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": False,
        }
    ),
    side_effect="write",
    version="1",
    timeout_ms=60_000,
    max_input_bytes=4 * 1_048_576,
)


class EditTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        old, new = str_arg(arguments, "old_string"), str_arg(arguments, "new_string")
        if old == new:
            raise tool_error(
                "validation",
                "no_change",
                "old_string and new_string are identical, so the edit would change nothing. Give the new text.",
            )
        return {
            "file_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "file_path")),
            "old_string": old,
            "new_string": new,
            "replace_all": arguments.get("replace_all") is True,
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._edit, arguments, context)

    def _edit(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        old, new = str_arg(arguments, "old_string"), str_arg(arguments, "new_string")
        replace_all = arguments.get("replace_all") is True
        counts: list[int] = []

        def render(target: TargetDir) -> bytes:
            text = decode_utf8(read_existing(target), target.rel, "Edit")
            text, count = replace_exact(text, old, new, replace_all=replace_all, rel=target.rel)
            counts.append(count)
            return text.encode("utf-8")

        written = write_text_file(context, str_arg(arguments, "file_path"), create_parents=False, render=render)
        size = len(written.payload)
        replaced = counts[-1]
        return self.ok(
            context,
            f"Edited {written.rel}: replaced {replaced} occurrence{'s' if replaced != 1 else ''} ({size} bytes).",
            {"path": written.rel, "replacements": replaced, "size_bytes": size, "sha256": written.artifact.sha256},
            artifacts=(written.artifact,),
        )


def decode_utf8(raw: bytes, rel: str, tool: str) -> str:
    """The text of a file an editing tool changes; a tool error when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise tool_error(
            "tool",
            "not_utf8",
            f"{rel!r} is not valid UTF-8 text; {tool} only changes UTF-8 files. Use Bash to edit it.",
            path=rel,
        ) from None


def replace_exact(text: str, old: str, new: str, *, replace_all: bool, rel: str, where: str = "") -> tuple[str, int]:
    """Edit's one rule for a replacement (used by Edit and MultiEdit): `old` must occur, and exactly once unless
    `replace_all`. Returns the new text and how many occurrences were replaced; a tool error otherwise. `where`
    prefixes the messages (MultiEdit names the edit: "edits[2]: ")."""
    count = text.count(old)
    if count == 0:
        hint = (
            " (it does match if whitespace is ignored: check indentation and line endings)"
            if _loose(old) in _loose(text)
            else ""
        )
        raise tool_error(
            "tool",
            "edit_not_found",
            f"{where}old_string was not found in {rel!r}{hint}. Read the file and copy the exact text, "
            "including whitespace.",
            path=rel,
        )
    if count > 1 and not replace_all:
        raise tool_error(
            "tool",
            "edit_not_unique",
            f"{where}old_string occurs {count} times in {rel!r}. Add surrounding lines to make it unique, "
            "or set replace_all to true to replace every occurrence.",
            path=rel,
            occurrences=count,
        )
    if replace_all:
        return text.replace(old, new), count
    return text.replace(old, new, 1), 1


def _loose(text: str) -> str:
    return "".join(text.split())

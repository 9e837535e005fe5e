"""`Write{file_path, content}`: create or overwrite a UTF-8 text file atomically; returns an Artifact."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, text_artifact
from bearagent.tools.fileio import atomic_write
from bearagent.tools.paths import WorkspacePaths

SPEC = ToolSpec(
    name="Write",
    description=(
        "Create or overwrite a text file in the workspace (UTF-8). Parent directories are created. The write is "
        "atomic. Returns the path, size and sha256 of what was written, not the content. Prefer Edit for changes "
        "to an existing file."
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
                "content": {"type": "string", "description": "The complete new content of the file."},
            },
            "required": ["file_path", "content"],
            "additionalProperties": False,
        }
    ),
    side_effect="write",
    version="1",
    timeout_ms=60_000,
    max_input_bytes=4 * 1_048_576,
)


class WriteTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return {
            "file_path": WorkspacePaths(context.workspace_root).normalise(str_arg(arguments, "file_path")),
            "content": str_arg(arguments, "content"),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._write, arguments, context)

    def _write(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        payload = str_arg(arguments, "content").encode("utf-8", "surrogatepass")
        target = WorkspacePaths(context.workspace_root).open_target(
            str_arg(arguments, "file_path"), create_parents=True
        )
        try:
            created = atomic_write(target, payload)
        finally:
            os.close(target.dir_fd)
        artifact = text_artifact(context, target.rel, payload)
        verb = "Created" if created else "Overwrote"
        return self.ok(
            context,
            f"{verb} {target.rel} ({len(payload)} bytes, sha256 {artifact.sha256[:12]}…).",
            {"path": target.rel, "created": created, "size_bytes": len(payload), "sha256": artifact.sha256},
            artifacts=(artifact,),
        )

"""`Write{file_path, content}`: create or overwrite a UTF-8 text file atomically; returns an Artifact."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import Artifact, ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, text_artifact
from bearagent.tools.fileio import atomic_write
from bearagent.tools.paths import TargetDir
from bearagent.tools.roots import WorkspaceRoots

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
            "file_path": WorkspaceRoots.for_context(context).normalise(str_arg(arguments, "file_path")),
            "content": str_arg(arguments, "content"),
        }

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._write, arguments, context)

    def _write(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        payload = str_arg(arguments, "content").encode("utf-8", "surrogatepass")
        written = write_text_file(
            context, str_arg(arguments, "file_path"), create_parents=True, render=lambda _: payload
        )
        verb = "Created" if written.created else "Overwrote"
        return self.ok(
            context,
            f"{verb} {written.rel} ({len(payload)} bytes, sha256 {written.artifact.sha256[:12]}…).",
            {
                "path": written.rel,
                "created": written.created,
                "size_bytes": len(payload),
                "sha256": written.artifact.sha256,
            },
            artifacts=(written.artifact,),
        )


@dataclass(frozen=True, slots=True)
class Written:
    """What `write_text_file` wrote: the workspace-relative path, the bytes, whether the file is new, its Artifact."""

    rel: str
    payload: bytes
    created: bool
    artifact: Artifact


def write_text_file(
    context: ToolContext, file_path: str, *, create_parents: bool, render: Callable[[TargetDir], bytes]
) -> Written:
    """Replace `file_path` (a normalised workspace path) atomically with `render(target)`, the new content (render
    may read the current file through `target`, or raise a tool error to leave it untouched), and describe the
    result as a text Artifact. Used by Write and Edit."""
    target = WorkspaceRoots.for_context(context).open_target(file_path, create_parents=create_parents)
    try:
        payload = render(target)
        created = atomic_write(target, payload)
    finally:
        os.close(target.dir_fd)
    return Written(target.rel, payload, created, text_artifact(context, target.rel, payload))

"""The public tool kit: `BaseTool` validates and turns errors into failed results; `open_workspace_file` has the
native file tools' path safety."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bearagent.plugin import (
    BaseTool,
    BearAgentError,
    JsonMapping,
    ToolContext,
    ToolResult,
    ToolSpec,
    open_workspace_file,
    tool_error,
)


class Size(BaseTool):
    def __init__(self) -> None:
        super().__init__(
            ToolSpec(
                name="Size",
                description="The size of a workspace file.",
                input_schema={
                    "type": "object",
                    "properties": {"file_path": {"type": "string"}},
                    "required": ["file_path"],
                    "additionalProperties": False,
                },
            )
        )

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        path = str(arguments["file_path"])
        if path.endswith(".secret"):
            raise tool_error("permission", "refused", f"{path} is not for tools", path=path)
        with open_workspace_file(context, path) as opened:
            data = opened.file.read()
        return self.ok(context, f"{opened.path}: {len(data)} bytes", {"size_bytes": opened.size_bytes})


def call(tool: Size, context: ToolContext, arguments: JsonMapping) -> ToolResult:
    return asyncio.run(tool.execute(tool.prepare(arguments, context), context))


def test_a_base_tool_reads_a_workspace_file(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_bytes(b"hello")
    os.symlink("docs/a.md", tmp_path / "link.md")
    context = ToolContext(workspace_root=tmp_path)
    result = call(Size(), context, {"file_path": "docs/a.md"})
    assert result.status == "succeeded" and result.content == "docs/a.md: 5 bytes" and result.data == {"size_bytes": 5}
    assert call(Size(), context, {"file_path": "link.md"}).content == "docs/a.md: 5 bytes"  # a link inside is followed


def test_arguments_are_validated_against_the_schema_with_the_field_named(tmp_path: Path) -> None:
    context = ToolContext(workspace_root=tmp_path)
    with pytest.raises(BearAgentError) as caught:
        Size().prepare({"file_path": 3}, context)
    assert caught.value.info.code == "validation.invalid_arguments" and "file_path" in caught.value.info.message


def test_errors_raised_in_run_become_failed_results(tmp_path: Path) -> None:
    context = ToolContext(workspace_root=tmp_path)
    refused = call(Size(), context, {"file_path": "x.secret"})
    assert refused.status == "failed" and refused.error is not None and refused.error.code == "permission.refused"
    missing = call(Size(), context, {"file_path": "nope.md"})
    assert missing.status == "failed" and missing.error is not None and missing.error.code == "tool.not_found"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "out.md"])
def test_open_workspace_file_refuses_paths_out_of_the_workspace(tmp_path: Path, path: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", root / "out.md")
    with pytest.raises(BearAgentError) as caught:
        open_workspace_file(ToolContext(workspace_root=root), path)
    assert caught.value.info.category == "permission" and "Refused path" in caught.value.info.message

"""The tool kit for plugin authors: a base class that validates arguments against the tool's JSON Schema and turns
errors into failed results, and workspace file access with the file tools' path safety.

A plugin tool may implement the `Tool` protocol directly (`spec`, `prepare`, async `execute`); `BaseTool` is the
short way, and the one the native tools take.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool
from bearagent.tools.roots import WorkspaceRoots


class BaseTool(NativeTool):
    """Base of a tool: give `ToolSpec` to `__init__` and write `async run(arguments, context) -> ToolResult`.

    - `prepare` validates the arguments against `spec.input_schema` (JSON Schema 2020-12; the error names the
      field and goes back to the model as a failed call) and then calls `normalise(arguments, context)`, which
      may fill defaults or clamp limits and returns the arguments to run with.
    - `execute` calls `run`; a `BearAgentError` raised there (see `tool_error`) becomes a failed `ToolResult`
      carrying its `ErrorInfo`, so the model reads what went wrong.
    - `ok(context, content, data=None, *, artifacts=(), truncated=False)` and `failed(context, error, data=None)`
      build the results: `content` is what the model reads, `data` structured output kept in the run log.

    The gate around every tool call enforces the spec's limits (`timeout_ms`, `max_input_bytes`,
    `max_output_chars`), the permission rules for its `side_effect` class and the hooks.
    """


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A workspace file opened for reading (binary); close it, or use it in a `with` block."""

    path: str
    """Its workspace-relative POSIX path (after symlinks inside the workspace were followed)."""
    size_bytes: int
    file: BinaryIO

    def __enter__(self) -> WorkspaceFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.file.close()


def open_workspace_file(context: ToolContext, path: str) -> WorkspaceFile:
    """Open `path` (relative to the workspace root, or absolute inside it) for reading, with the path safety of
    the native file tools: `..` escapes, absolute paths outside the workspace, symlinks leading out of it, devices,
    FIFOs and look-alike characters are refused, and the file is opened race-safely (no check-then-open). Raises
    `BearAgentError` (`permission.path_refused`, `tool.not_found`, ...) whose message says why and what to use
    instead: raised inside `BaseTool.run`, it becomes the failed result the model reads."""
    opened = WorkspaceRoots.for_context(context).open_read(path)
    return WorkspaceFile(path=opened.rel, size_bytes=opened.st.st_size, file=os.fdopen(opened.fd, "rb"))

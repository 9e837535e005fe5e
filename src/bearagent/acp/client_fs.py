"""Read through the editor: when the client offers `fs/read_text_file`, the Read tool of an ACP session reads the
client's view of a file, so an unsaved buffer is what the agent sees. The path is checked as Read checks it (inside
the workspace's roots, a regular file, the permission rules at the gate); only the content comes from the client.
Any failure of the client (an error, no answer, more than `MAX_CLIENT_TEXT_CHARS`) falls back to the file on disk."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from bearagent.domain._base import JsonMapping
from bearagent.domain.tools import ToolResult
from bearagent.ports import ToolContext
from bearagent.tools.base import str_arg
from bearagent.tools.read import ReadTool
from bearagent.tools.roots import WorkspaceRoots

MAX_CLIENT_TEXT_CHARS = 20_000_000
CLIENT_READ_TIMEOUT_S = 30.0

ClientReader = Callable[[str, str], Awaitable[str]]
"""(session id, absolute path) -> the client's text of that file."""


class ClientRead(ReadTool):
    """Read, its content asked of the ACP client (see the module docstring)."""

    def __init__(self, read: ClientReader) -> None:
        super().__init__()
        self._client_read = read

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        if context.session_id is None:
            return await super().run(arguments, context)
        opened = await asyncio.to_thread(WorkspaceRoots.for_context(context).open_read, str_arg(arguments, "file_path"))
        os.close(opened.fd)  # checked as Read checks a path; the content is the client's
        rel = Path(opened.rel)
        full = rel if rel.is_absolute() else context.workspace_root / rel
        try:
            text = await asyncio.wait_for(self._client_read(str(context.session_id), str(full)), CLIENT_READ_TIMEOUT_S)
        except Exception:  # the client could not say: the file on disk
            return await super().run(arguments, context)
        if len(text) > MAX_CLIENT_TEXT_CHARS:
            return await super().run(arguments, context)
        data = text.encode("utf-8", errors="replace")
        return self.page(io.BytesIO(data), opened.rel, len(data), arguments, context)

"""Large tool results do not flood the context: a result over its cap is kept whole as an artifact beside the run's
state (`.bearagent/tool-results/<tool call>.txt`), and the result the log and the model get is its head, its tail
and where to page through the rest (the Read tool reads that file with `offset` and `limit`).

The file is written the way BearAgent writes its state (`runtime/state_files.py`: no symlink followed anywhere
under the workspace's `.bearagent/`, a new file only, 0600), so a repository cannot redirect it. When it cannot be
written the result is cut as before, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

from bearagent.domain.errors import BearAgentError
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.runtime.context import MAX_TOOL_RESULT_CHARS_FOR_MODEL
from bearagent.runtime.state_files import open_state_file
from bearagent.tools.base import text_artifact

SPILL_DIR_SETTING = "result_spill_dir"
"""Tool setting: the workspace's state directory (`<ws>/.bearagent`), where large results are kept."""
SPILL_SUBDIR = "tool-results"
_NOTE_ROOM = 400


def spill(result: ToolResult, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> ToolResult | None:
    """The result cut to head + tail with the whole kept in a file, or None when it cannot be kept (the caller then
    cuts it the old way)."""
    spill_dir = context.settings.get(SPILL_DIR_SETTING)
    if not isinstance(spill_dir, str) or not spill_dir:
        return None
    data_dir = Path(spill_dir)
    name = f"{request.tool_call_id}.txt"
    payload = result.content.encode("utf-8", errors="surrogatepass")
    try:
        fd = open_state_file(data_dir, (SPILL_SUBDIR, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except (OSError, BearAgentError):
        return None
    with os.fdopen(fd, "wb") as out:
        out.write(payload)
    rel = f"{data_dir.name}/{SPILL_SUBDIR}/{name}"
    keep = max(0, min(spec.max_output_chars, MAX_TOOL_RESULT_CHARS_FOR_MODEL) - _NOTE_ROOM)
    head, tail = result.content[: keep * 2 // 3], result.content[len(result.content) - keep // 3 :]
    omitted = len(result.content) - len(head) - len(tail)
    lines = result.content.count("\n") + 1
    note = (
        f"\n\n[... {omitted} characters omitted. The whole result ({len(result.content)} characters, {lines} lines) "
        f"is saved at {rel}: Read it with offset and limit to see the rest ...]\n\n"
    )
    return result.model_copy(
        update={
            "content": head + note + tail,
            "truncated": True,
            "artifacts": (*result.artifacts, text_artifact(context, rel, payload)),
        }
    )

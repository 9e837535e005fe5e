"""`BashOutput{bash_id, filter?}`: what a background shell (`Bash{run_in_background: true}`) printed since the last
read, its status and exit code; `filter` keeps only the lines a regex matches (the others are consumed too)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error

MAX_FILTER_CHARS = 500

SPEC = ToolSpec(
    name="BashOutput",
    description=(
        "Read the output a background shell (started by Bash with run_in_background: true) wrote since the last "
        "read, with its status (running, completed, killed) and exit code. `filter` is a regular expression: only "
        "matching lines are shown, the others are consumed."
    ),
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "bash_id": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The shell's ID."},
                "filter": {
                    "type": "string",
                    "maxLength": MAX_FILTER_CHARS,
                    "description": "Show only lines matching this regular expression.",
                },
            },
            "required": ["bash_id"],
            "additionalProperties": False,
        }
    ),
    side_effect="read_only",
    version="1",
    timeout_ms=10_000,
)


def _pattern(arguments: Mapping[str, JsonValue]) -> re.Pattern[str] | None:
    raw = str_arg(arguments, "filter")
    if not raw:
        return None
    try:
        return re.compile(raw)
    except re.error as exc:
        raise tool_error(
            "validation",
            "invalid_filter",
            f"filter {raw[:100]!r} is not a valid regular expression ({exc}). Fix it or leave it out.",
            field="filter",
        ) from None


class BashOutputTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        _pattern(arguments)
        return arguments

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        from bearagent.tools.background import find_shell, read_new, shell_owner
        from bearagent.tools.bash import MAX_STREAM_CHARS, Capture

        shell = find_shell(str_arg(arguments, "bash_id"), shell_owner(context), "BashOutput")
        status = shell.status
        if status != "running":  # let the readers take what the ended shell wrote last
            await asyncio.to_thread(shell.drain, 2.0)
        stdout, stderr, dropped = read_new(shell, _pattern(arguments))
        exit_code = shell.proc.returncode if status != "running" else None
        shown: list[str] = []
        cut_total = 0
        texts: dict[str, str] = {}
        for name, text in (("stdout", stdout), ("stderr", stderr)):
            capture = Capture(MAX_STREAM_CHARS)
            capture.feed(text.encode("utf-8"))
            texts[name], cut = capture.text()
            cut_total += cut
            if texts[name]:
                shown.append(f"<{name}>\n{texts[name].rstrip(chr(10))}\n</{name}>")
        head = f"<status>{status}</status>" + (f"\n<exit_code>{exit_code}</exit_code>" if exit_code is not None else "")
        if dropped:
            head += f"\n[{dropped} bytes scrolled out of the buffer before this read]"
        body = "\n".join(shown) if shown else "(no new output)"
        return self.ok(
            context,
            f"{head}\n{body}",
            {
                "bash_id": shell.shell_id,
                "status": status,
                "exit_code": exit_code,
                "stdout": texts["stdout"],
                "stderr": texts["stderr"],
                "dropped_bytes": dropped,
            },
            truncated=bool(cut_total or dropped),
        )

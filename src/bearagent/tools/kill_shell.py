"""`KillShell{shell_id}`: end a background shell (`Bash{run_in_background: true}`) and every process it started."""

from __future__ import annotations

import asyncio

from bearagent.domain._base import JsonMapping, frozen_json
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools.base import NativeTool, str_arg

SPEC = ToolSpec(
    name="KillShell",
    description="Stop a background shell started by Bash with run_in_background: true, and every process it started.",
    input_schema=frozen_json(
        {
            "type": "object",
            "properties": {
                "shell_id": {"type": "string", "minLength": 1, "maxLength": 100, "description": "The shell's ID."}
            },
            "required": ["shell_id"],
            "additionalProperties": False,
        }
    ),
    side_effect="execute",
    version="1",
    timeout_ms=30_000,
)


class KillShellTool(NativeTool):
    def __init__(self) -> None:
        super().__init__(SPEC)

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        from bearagent.tools.background import find_shell, shell_owner

        shell = find_shell(str_arg(arguments, "shell_id"), shell_owner(context), "KillShell")
        if shell.status != "running":
            return self.ok(
                context,
                f"Shell {shell.shell_id} had already ended ({shell.status}, exit code {shell.proc.returncode}).",
                {"shell_id": shell.shell_id, "status": shell.status, "exit_code": shell.proc.returncode},
            )
        await asyncio.to_thread(shell.stop)
        return self.ok(
            context,
            f"Killed shell {shell.shell_id} ({shell.command[:200]!r}) and every process it started.",
            {"shell_id": shell.shell_id, "status": "killed", "exit_code": shell.proc.returncode},
        )

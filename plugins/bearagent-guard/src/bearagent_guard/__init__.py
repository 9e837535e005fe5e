"""bearagent-guard: a `FileHash` tool and a PreToolUse guard against destructive shell commands."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping

from bearagent import hookimpl
from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.plugins.contributions import PythonHookHandler
from bearagent.ports import Tool, ToolContext
from bearagent.tools.base import NativeTool, str_arg, tool_error
from bearagent.tools.paths import WorkspacePaths

_ALGORITHMS = ("sha256", "sha1", "md5")

# (pattern, why) — matched against the whole Bash command string.
DESTRUCTIVE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*\s+)*(-[a-zA-Z]*f[a-zA-Z]*\s+)*(/|~|\$HOME|\*)(\s|$)"),
        "recursive delete of /, ~ or *",
    ),
    (re.compile(r"\brm\s+-[a-zA-Z]*(rf|fr)[a-zA-Z]*\s+(/|~|\$HOME|\*)(\s|$)"), "recursive delete of /, ~ or *"),
    (re.compile(r"\bgit\s+push\b.*(--force\b|-f\b)"), "force push rewrites shared history"),
    (re.compile(r"\bgit\s+reset\s+--hard\b"), "git reset --hard discards uncommitted work"),
    (
        re.compile(r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b"),
        "piping a download into a shell runs unreviewed code",
    ),
    (re.compile(r"\bmkfs(\.\w+)?\b"), "mkfs formats a filesystem"),
    (re.compile(r"\bdd\b.*\bof=/dev/"), "dd onto a device overwrites it"),
    (re.compile(r":\(\)\s*\{\s*:\|:&\s*\};:"), "fork bomb"),
)


def check_command(command: str) -> str | None:
    """Why `command` is refused, or None."""
    for pattern, why in DESTRUCTIVE:
        if pattern.search(command):
            return why
    return None


def guard_pre_tool_use(hook_input: Mapping[str, JsonValue]) -> Mapping[str, JsonValue] | None:
    """PreToolUse handler: deny destructive Bash commands; no opinion otherwise."""
    if hook_input.get("tool_name") != "Bash":
        return None
    tool_input = hook_input.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if not isinstance(command, str):
        return None
    why = check_command(command)
    if why is None:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"bearagent-guard refused this command: {why}. Use a safer, narrower command.",
        }
    }


class FileHashTool(NativeTool):
    """The hash of a workspace file (read-only)."""

    def __init__(self) -> None:
        super().__init__(
            ToolSpec(
                name="FileHash",
                description="Compute the sha256 (default), sha1 or md5 hex digest of a file in the workspace.",
                input_schema={
                    "type": "object",
                    "properties": {
                        "file_path": {"type": "string", "description": "path relative to the workspace root"},
                        "algorithm": {"type": "string", "enum": list(_ALGORITHMS)},
                    },
                    "required": ["file_path"],
                    "additionalProperties": False,
                },
                side_effect="read_only",
                timeout_ms=30_000,
            )
        )

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        algorithm = arguments.get("algorithm", "sha256")
        if algorithm not in _ALGORITHMS:
            raise tool_error("validation", "invalid_arguments", f"algorithm must be one of {', '.join(_ALGORITHMS)}")
        opened = WorkspacePaths(context.workspace_root).open_read(str_arg(arguments, "file_path"))
        digest = hashlib.new(str(algorithm))
        size = 0
        try:
            while chunk := os.read(opened.fd, 1 << 20):
                digest.update(chunk)
                size += len(chunk)
        finally:
            os.close(opened.fd)
        hexdigest = digest.hexdigest()
        return self.ok(
            context,
            f"{algorithm} {hexdigest}  {opened.rel}",
            {"algorithm": algorithm, "hexdigest": hexdigest, "path": opened.rel, "size_bytes": size},
        )


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(FileHashTool())


@hookimpl
def register_hook_handlers(register: Callable[[PythonHookHandler], None]) -> None:
    register(
        PythonHookHandler(
            event="PreToolUse",
            matcher="Bash",
            callback=guard_pre_tool_use,
            name="destructive-shell-guard",
            capabilities=frozenset({"block"}),
            on_failure="block",
            timeout_s=5.0,
        )
    )

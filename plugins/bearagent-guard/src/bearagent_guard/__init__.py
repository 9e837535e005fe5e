"""bearagent-guard: a `FileHash` tool and a PreToolUse guard against destructive shell commands."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from bearagent.plugin import (
    BaseTool,
    JsonMapping,
    JsonValue,
    PythonHookHandler,
    RegisterHookHandler,
    RegisterTool,
    ToolContext,
    ToolResult,
    ToolSpec,
    hookimpl,
    open_workspace_file,
    tool_error,
)

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


class FileHashTool(BaseTool):
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
        path = arguments.get("file_path")
        if not isinstance(path, str):
            raise tool_error("validation", "invalid_arguments", "file_path must be a path relative to the workspace")
        digest = hashlib.new(str(algorithm))
        size = 0
        with open_workspace_file(context, path) as opened:  # the file tools' path safety
            while chunk := opened.file.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        hexdigest = digest.hexdigest()
        return self.ok(
            context,
            f"{algorithm} {hexdigest}  {opened.path}",
            {"algorithm": algorithm, "hexdigest": hexdigest, "path": opened.path, "size_bytes": size},
        )


@hookimpl
def register_tools(register: RegisterTool) -> None:
    register(FileHashTool())


@hookimpl
def register_hook_handlers(register: RegisterHookHandler) -> None:
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

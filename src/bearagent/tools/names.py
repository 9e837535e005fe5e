"""The native tools' names, in the order they are listed: one list, read by the registry (which loads without
importing a tool module) and by the built-in tool set (`builtin.py`)."""

from __future__ import annotations

NATIVE_TOOL_NAMES: tuple[str, ...] = (
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "LS",
    "Glob",
    "Grep",
    "NotebookRead",
    "NotebookEdit",
    "Bash",
    "BashOutput",
    "KillShell",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
)

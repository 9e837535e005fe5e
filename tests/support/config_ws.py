"""Helpers to build workspaces on disk for the config/registry/CLI tests."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

from bearagent.domain._base import JsonMapping
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ToolContext
from bearagent.workspace import LoadedWorkspace, load_workspace


def write(root: Path, rel: str, text: str, *, executable: bool = False) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    if executable:
        path.chmod(0o755)
    return path


def agent_file(description: str = "Does things.", body: str = "You are helpful.", **fields: str) -> str:
    lines = ["---", f"description: {description}"]
    lines.extend(f"{key}: {value}" for key, value in fields.items())
    lines.extend(["---", body, ""])
    return "\n".join(lines)


def skill_file(name: str, description: str = "A skill.", body: str = "Steps.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
    }
    env.update(extra)
    return env


def load(
    root: Path, home: Path, *, plugins: PluginHost | None = None, env: Mapping[str, str] | None = None
) -> LoadedWorkspace:
    """Load `root` as the workspace with an isolated user dir (`home/bearagent`) and no installed plugins."""
    return load_workspace(root, env=env or isolated_env(home), plugins=plugins or PluginHost())


def codes(diags: list[Diagnostic] | tuple[Diagnostic, ...]) -> list[str]:
    return [d.code for d in diags]


def only(diags: list[Diagnostic] | tuple[Diagnostic, ...], code: str) -> Diagnostic:
    found = [d for d in diags if d.code == code]
    assert len(found) == 1, f"expected one {code}, got {[d.render() for d in diags]}"
    return found[0]


class EchoTool:
    """A minimal `Tool` for plugin tests: returns its `text` argument."""

    def __init__(self, name: str = "Echo") -> None:
        self._spec = ToolSpec(
            name=name,
            description="Echo the text back.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        return arguments

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        from bearagent.domain.ids import ToolCallId

        return ToolResult(
            tool_call_id=context.tool_call_id or context.ids.new(ToolCallId),
            tool_name=self._spec.name,
            status="succeeded",
            content=str(arguments.get("text", "")),
        )

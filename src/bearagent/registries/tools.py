"""NativeToolRegistry: the native tools plus tools contributed by plugins. Exact lookup by name only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bearagent.domain.diagnostics import Diagnostic
from bearagent.ports import Tool
from bearagent.tools.names import NATIVE_TOOL_NAMES as NATIVE_TOOL_NAMES

RUNTIME_TOOL_NAMES = ("Skill", "Task", "SwitchAgent")


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    tool: Tool
    origin: str  # "native" or "plugin:<name>"

    @property
    def name(self) -> str:
        return self.tool.spec.name

    @property
    def is_native(self) -> bool:
        return self.origin == "native"


class NativeToolRegistry:
    def __init__(
        self,
        native: Iterable[Tool],
        plugin_tools: Iterable[tuple[str, Tool]] = (),
        diagnostics: Sequence[Diagnostic] = (),
    ) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        diags = list(diagnostics)
        for tool in native:
            self._tools[tool.spec.name] = RegisteredTool(tool, "native")
        for plugin, tool in plugin_tools:
            name = tool.spec.name
            existing = self._tools.get(name)
            if existing is not None or name in RUNTIME_TOOL_NAMES:
                other = existing.origin if existing else "the runtime"
                diags.append(
                    Diagnostic(
                        severity="error",
                        code="tool.name_collision",
                        message=f"plugin {plugin!r} registers tool {name!r}, which {other} already provides; the plugin's tool was not registered",
                        source=f"plugin:{plugin}",
                        subject=name,
                        fix=f"rename the tool in plugin {plugin!r}, or uninstall one of them",
                    )
                )
                continue
            self._tools[name] = RegisteredTool(tool, f"plugin:{plugin}")
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diags)

    def get(self, name: str) -> Tool | None:
        found = self._tools.get(name)
        return found.tool if found else None

    def entry(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def entries(self) -> list[RegisteredTool]:
        return [self._tools[n] for n in self.names()]

    def native_names(self) -> list[str]:
        return [n for n in self.names() if self._tools[n].is_native]

"""Plugin-contributed Python hooks -> matcher groups the dispatcher runs like any configured hook.

A plugin registers `bearagent.plugins.contributions.PythonHookHandler(event, callback, name, matcher, capabilities,
on_failure, timeout_s, plugin)`. `python_hook_groups` turns each into a one-handler `HookMatcherSpec` of type
`python` named `<plugin>:<name>` plus the name -> callable mapping `HookDispatcher(python_handlers=...)` takes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, Protocol

from bearagent.domain.specs import HookCapability, HookEventName, HookHandlerSpec, HookMatcherSpec

if TYPE_CHECKING:
    from bearagent.hooks.runners import PythonHookFunction


class PluginHook(Protocol):
    @property
    def event(self) -> HookEventName: ...
    @property
    def callback(self) -> PythonHookFunction: ...
    @property
    def name(self) -> str: ...
    @property
    def matcher(self) -> str | None: ...
    @property
    def capabilities(self) -> frozenset[HookCapability]: ...
    @property
    def on_failure(self) -> Literal["allow", "block"]: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def plugin(self) -> str: ...


def python_hook_groups(
    handlers: Iterable[PluginHook],
) -> tuple[list[HookMatcherSpec], dict[str, PythonHookFunction]]:
    groups: list[HookMatcherSpec] = []
    functions: dict[str, PythonHookFunction] = {}
    for handler in handlers:
        key = f"{handler.plugin}:{handler.name}" if handler.plugin else handler.name
        functions[key] = handler.callback
        spec = HookHandlerSpec(
            type="python",
            handler=key,
            timeout_s=handler.timeout_s,
            on_failure=handler.on_failure,
            capabilities=handler.capabilities,
        )
        groups.append(
            HookMatcherSpec(
                event=handler.event,
                matcher=handler.matcher,
                hooks=(spec,),
                source=f"plugin:{handler.plugin}" if handler.plugin else "plugin",
                level="platform",
            )
        )
    return groups, functions

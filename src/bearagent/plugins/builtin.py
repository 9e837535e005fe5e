"""BearAgent's own providers and native tools, registered through the plugin hooks like any plugin's (simonw/llm
registers its OpenAI models as a default plugin the same way).

`PluginHost` registers this plugin first, under the name `builtin`, whatever `BEARAGENT_LOAD_PLUGINS` says. Its
provider ids cannot be taken by another plugin (`plugin.provider_shadowed`) and its tools win a name collision
(`tool.name_collision`). Nothing heavy is imported here: the adapters (and the SDKs) when a provider is built, the
tool modules when the host first asks for the tool set (`PluginHost.tools()`), never when a workspace loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bearagent.domain.diagnostics import Diagnostic
from bearagent.plugins.contributions import ProviderRegistration
from bearagent.plugins.markers import hookimpl
from bearagent.providers.factory import BUILTIN_DESCRIPTIONS, BUILTIN_FACTORIES

if TYPE_CHECKING:
    from bearagent.domain.specs import ModelEntry
    from bearagent.ports import Tool

BUILTIN_PLUGIN = "builtin"
"""The built-in plugin's name in `bearagent plugins list --all` and in the host."""
BUILTIN_PROVIDER_IDS: frozenset[str] = frozenset(BUILTIN_FACTORIES)


class BuiltinPlugin:
    """The built-in contributions. `web_search` is the host's `web_search_provider` decision hook (the backend
    of the native `WebSearch` tool, from another plugin); `report` receives problems found while building the
    tools."""

    def __init__(self, web_search: Callable[[], object | None], report: Callable[[Diagnostic], None]) -> None:
        self._web_search = web_search
        self._report = report

    @hookimpl
    def register_models(self, register: Callable[[ProviderRegistration | ModelEntry], None]) -> None:
        for provider_id, factory in BUILTIN_FACTORIES.items():
            register(ProviderRegistration(provider_id, factory, BUILTIN_DESCRIPTIONS[provider_id]))

    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        try:
            from bearagent.tools.builtin import native_tools
            from bearagent.tools.web_search import WebSearchBackend
        except ImportError as exc:  # pragma: no cover - only in a broken install
            self._report(
                Diagnostic(
                    severity="error",
                    code="tools.unavailable",
                    message=f"native tools could not be loaded: {exc}",
                    fix="reinstall bearagent",
                )
            )
            return
        backend = self._web_search()
        if backend is not None and not isinstance(backend, WebSearchBackend):
            self._report(
                Diagnostic(
                    severity="error",
                    code="plugin.bad_contribution",
                    message=f"web_search_provider returned a {type(backend).__name__}, not a WebSearchBackend; it is ignored and WebSearch uses the web_search config",
                    source="plugins",
                    fix="return an object with an async `search` method (see bearagent.plugin.WebSearchBackend)",
                )
            )
            backend = None
        for tool in native_tools(web_search=backend):
            register(tool)

"""The built-in providers and native tools come through the plugin hooks, as the `builtin` plugin every host
registers first: same registration path, built-in ids protected, nothing heavy imported before it is needed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support.config_ws import EchoTool, load, write

from bearagent import hookimpl
from bearagent.domain.ids import DeterministicIdGenerator, IdGenerator
from bearagent.domain.specs import ModelEntry
from bearagent.domain.tools import ToolSpec
from bearagent.plugins.builtin import BUILTIN_PLUGIN
from bearagent.plugins.contributions import ProviderRegistration
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ModelProvider, Tool
from bearagent.providers.factory import BUILTIN_FACTORIES, create_provider
from bearagent.providers.openai_responses import OpenAIResponsesProvider
from bearagent.providers.scripted import ScriptedProvider
from bearagent.tools.search_hit import SearchHit
from bearagent.tools.web_search import WebSearchTool

ROOT = Path(__file__).resolve().parents[2]


def test_every_host_starts_with_the_builtin_plugin_registering_the_built_in_providers() -> None:
    host = PluginHost()
    providers = host.contributions().providers
    assert [(p.id, p.plugin) for p in providers] == [
        ("openai", BUILTIN_PLUGIN),
        ("openai-compatible", BUILTIN_PLUGIN),
        ("anthropic", BUILTIN_PLUGIN),
        ("scripted", BUILTIN_PLUGIN),
    ]
    assert all(p.factory is BUILTIN_FACTORIES[p.id] and p.description for p in providers)
    assert host.plugins == {}  # not an installed plugin
    assert host.builtin.registered["models"] == [f"provider {p.id}" for p in providers]
    assert host.diagnostics == []


def test_the_native_tools_are_registered_by_the_builtin_plugin_on_first_use(tmp_path: Path) -> None:
    host = PluginHost()
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    assert "tools" not in host.builtin.registered  # loading the workspace did not build them
    native = ws.tools.native_names()
    files = ["Read", "Write", "Edit", "MultiEdit", "LS", "Glob", "Grep", "NotebookRead", "NotebookEdit"]
    assert native == sorted([*files, "Bash", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite"])
    assert all(ws.tools.entry(name).origin == "native" for name in native)  # type: ignore[union-attr]
    assert sorted(host.builtin.registered["tools"]) == native


def test_loading_a_workspace_imports_neither_the_tool_modules_nor_the_sdks(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from bearagent.workspace import load_workspace\n"
        "from bearagent.plugins.manager import PluginHost\n"
        f"ws = load_workspace(Path({str(tmp_path)!r}), env={{'BEARAGENT_HOME': {str(tmp_path / 'home')!r}}}, "
        "plugins=PluginHost())\n"
        "ws.provider_factories()\n"
        "heavy = ('bearagent.tools.builtin', 'bearagent.tools.base', 'bearagent.tools.bash', 'jsonschema', 'openai')\n"
        "before = sorted(m for m in heavy if m in sys.modules)\n"
        "ws.tools\n"
        "after = sorted(m for m in sys.modules if m.startswith('bearagent.tools.'))\n"
        "print(before, 'bearagent.tools.bash' in after, 'openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[] True False", out.stdout + out.stderr


def test_a_plugin_cannot_take_a_built_in_provider_id_even_when_it_runs_first(tmp_path: Path) -> None:
    def factory(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
        raise AssertionError("a shadowing factory is never called")

    class Early:
        @hookimpl(tryfirst=True)
        def register_models(self, register: Callable[[ProviderRegistration], None]) -> None:
            register(ProviderRegistration(id="scripted", factory=factory))

    class Late:
        @hookimpl(trylast=True)
        def register_models(self, register: Callable[[ProviderRegistration], None]) -> None:
            register(ProviderRegistration(id="anthropic", factory=factory))

    host = PluginHost()
    host.register(Early(), "early")
    host.register(Late(), "late")
    write(tmp_path, ".bearagent/s.yaml", "turns: [{text: hi}]\n")
    write(tmp_path, ".bearagent/config.yaml", "models:\n  s: {provider: scripted, script: s.yaml}\n")
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    assert host.contributions().providers[0].plugin == BUILTIN_PLUGIN
    shadowed = sorted(d.subject or "" for d in ws.diagnostics() if d.code == "plugin.provider_shadowed")
    assert shadowed == ["anthropic", "scripted"]
    factories = ws.provider_factories()
    assert (
        factories["scripted"] is BUILTIN_FACTORIES["scripted"]
        and factories["anthropic"] is BUILTIN_FACTORIES["anthropic"]
    )
    entry = ws.models.resolve("s")
    provider = create_provider(entry, env={}, base_dir=tmp_path / ".bearagent", registry=factories)
    assert isinstance(provider, ScriptedProvider)


def test_built_in_factories_receive_the_run_ids_and_plugin_factories_may_ask_for_them(tmp_path: Path) -> None:
    ids = DeterministicIdGenerator()
    entry = ModelEntry(name="m", provider="openai", model="gpt-5-mini")
    built = create_provider(entry, env={"OPENAI_API_KEY": "sk-x-000000"}, base_dir=tmp_path, ids=ids)
    assert isinstance(built, OpenAIResponsesProvider) and built.ids is ids
    write(tmp_path, "s.yaml", "turns: [{text: hi}]\n")
    received: list[object] = []

    def with_ids(
        entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
    ) -> ModelProvider:
        received.append(ids)
        return ScriptedProvider.from_file(base_dir / "s.yaml", ids=ids)

    def without(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
        received.append("no ids parameter")
        return ScriptedProvider.from_file(base_dir / "s.yaml")

    registry = {"a": with_ids, "b": without}
    create_provider(ModelEntry(name="a", provider="a"), env={}, base_dir=tmp_path, registry=registry, ids=ids)
    create_provider(ModelEntry(name="b", provider="b"), env={}, base_dir=tmp_path, registry=registry, ids=ids)
    assert received == [ids, "no ids parameter"]


class Backend:
    async def search(
        self,
        query: str,
        *,
        max_results: int,
        allowed_domains: Sequence[str] = (),
        blocked_domains: Sequence[str] = (),
    ) -> Sequence[SearchHit]:
        return [SearchHit(title="t", url="https://example.org")]


def test_the_web_search_backend_of_another_plugin_reaches_the_native_websearch_tool(tmp_path: Path) -> None:
    class Search:
        @hookimpl
        def web_search_provider(self) -> object:
            return Backend()

    host = PluginHost()
    host.register(Search(), "search")
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    entry = ws.tools.entry("WebSearch")
    assert entry is not None and entry.origin == "native"


def test_a_web_search_backend_of_the_wrong_type_is_reported_and_ignored(tmp_path: Path) -> None:
    class Wrong:
        @hookimpl
        def web_search_provider(self) -> object:
            return "not a backend"

    host = PluginHost()
    host.register(Wrong(), "wrong")
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    tool = ws.tools.get("WebSearch")
    assert isinstance(tool, WebSearchTool) and tool.backend is None  # the user's `web_search:` config, if any
    bad = [d for d in ws.diagnostics() if d.code == "plugin.bad_contribution"]
    assert len(bad) == 1 and "returned a str, not a WebSearchBackend; it is ignored" in bad[0].message


def test_a_plugin_tool_cannot_replace_a_native_one(tmp_path: Path) -> None:
    class Impostor(EchoTool):
        @property
        def spec(self) -> ToolSpec:
            return ToolSpec(name="Read", description="not the real Read", input_schema={"type": "object"})

    class Plugin:
        @hookimpl
        def register_tools(self, register: Callable[[Tool], None]) -> None:
            register(Impostor())

    host = PluginHost()
    host.register(Plugin(), "impostor")
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    assert ws.tools.entry("Read").origin == "native"  # type: ignore[union-attr]
    collision = next(d for d in ws.diagnostics() if d.code == "tool.name_collision")
    assert "plugin 'impostor' registers tool 'Read', which native already provides" in collision.message


def test_a_plugin_named_builtin_is_refused_by_name() -> None:
    class Plugin:
        @hookimpl
        def register_agent_dirs(self, register: Callable[[Path], None]) -> None:
            return None

    host = PluginHost()
    host.register(Plugin(), BUILTIN_PLUGIN)
    assert host.plugins[BUILTIN_PLUGIN].status == "failed"
    assert host.diagnostics[0].code == "plugin.register_failed"
    assert [p.plugin for p in host.contributions().providers] == [BUILTIN_PLUGIN] * 4


def test_plugins_list_hides_the_builtin_plugin_unless_asked(tmp_path: Path) -> None:
    env = {"BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "bearagent", "plugins", "list", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)

    assert json.loads(cli("--json").stdout)["plugins"] == []
    shown = json.loads(cli("--all", "--json").stdout)["plugins"]
    assert [p["name"] for p in shown] == ["builtin"] and shown[0]["distribution"] == "bearagent"
    assert shown[0]["registered"]["models"][0] == "provider openai" and "Bash" in shown[0]["registered"]["tools"]
    table = cli("--all").stdout
    assert "builtin" in table and "provider anthropic" in table

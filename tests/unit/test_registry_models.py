"""ModelRegistry: levels, refs, providers, secrets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from tests.support.config_ws import load, only, write

from bearagent import hookimpl
from bearagent.domain.errors import BearAgentError
from bearagent.domain.models import MAX_CALL_TIMEOUT_MS
from bearagent.domain.specs import ModelEntry, call_timeout_ms
from bearagent.plugins.contributions import ProviderRegistration
from bearagent.plugins.manager import PluginHost
from bearagent.ports import ModelProvider
from bearagent.providers.factory import BUILTIN_FACTORIES, provider_settings


def _two_levels(tmp_path: Path) -> Path:
    write(
        tmp_path,
        "home/bearagent/config.yaml",
        "models:\n  gpt: {provider: openai, model: user-model}\n  claude: {provider: anthropic, model: c}\n",
    )
    write(tmp_path, "ws/.bearagent/config.yaml", "models:\n  gpt: {provider: openai, model: ws-model, api: chat}\n")
    return tmp_path / "ws"


def test_workspace_and_platform_refs_and_bare_name_workspace_first(tmp_path: Path) -> None:
    ws = load(_two_levels(tmp_path), tmp_path / "home")
    assert ws.models.resolve("workspace/gpt").model == "ws-model"
    assert ws.models.resolve("platform/gpt").model == "user-model"
    assert ws.models.resolve("gpt").model == "ws-model"
    assert ws.models.resolve("claude").ref == "platform/claude"
    assert ws.models.refs() == ["workspace/gpt", "platform/claude", "platform/gpt"]


def test_unknown_ref_lists_close_matches(tmp_path: Path) -> None:
    ws = load(_two_levels(tmp_path), tmp_path / "home")
    with pytest.raises(BearAgentError) as info:
        ws.models.resolve("gtp", where="agent 'x': model")
    message = info.value.info.message
    assert "agent 'x': model: unknown model 'gtp'" in message and "workspace/gpt" in message
    assert info.value.info.category == "configuration" and info.value.hint and "platform/claude" in info.value.hint


def test_unknown_provider_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "models:\n  x: {provider: opnai, model: m}\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.models.diagnostics, "model.unknown_provider")
    assert "did you mean 'openai'" in d.message and d.line == 2 and ws.models.get("x") is None


def test_plugin_provider_ids_are_valid_and_plugin_entries_are_platform(tmp_path: Path) -> None:
    def factory(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
        raise NotImplementedError("not called in this test")

    class Plugin:
        @hookimpl
        def register_models(self, register: Callable[[ProviderRegistration | ModelEntry], None]) -> None:
            register(ProviderRegistration(id="echo", factory=factory))
            register(ProviderRegistration(id="openai", factory=factory))
            register(ModelEntry(name="echo-small", provider="echo", model="e"))

    host = PluginHost()
    host.register(Plugin(), "echoer")
    write(tmp_path, ".bearagent/config.yaml", "models:\n  mine: {provider: echo, model: m}\n")
    ws = load(tmp_path, tmp_path / "home", plugins=host)
    assert ws.models.resolve("mine").provider == "echo"
    assert ws.models.resolve("echo-small").ref == "platform/echo-small"
    assert "echo" in ws.models.providers
    factories = ws.provider_factories()  # the built-in plugin's providers, then the plugin's; its "openai" is not
    assert list(factories) == ["openai", "openai-compatible", "anthropic", "scripted", "echo"]
    assert factories["echo"] is factory and factories["openai"] is BUILTIN_FACTORIES["openai"]
    shadow = only(ws.diagnostics(), "plugin.provider_shadowed")
    assert "'openai', which is built in" in shadow.message


def test_secret_in_config_is_refused_without_echoing_it(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "models:\n  x: {provider: openai, api_key: sk-very-secret}\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.models.diagnostics, "model.secret_in_config")
    assert "sk-very-secret" not in d.render() and "api_key_env" in (d.fix or "")


def test_scripted_needs_script_and_path_is_relative_to_config(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/scripts/s.yaml", "turns: []\n")
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "models:\n  s: {provider: scripted, script: scripts/s.yaml}\n  t: {provider: scripted}\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert ws.models.resolve("s").script == str(tmp_path / ".bearagent/scripts/s.yaml")
    assert "scripted model needs `script" in only(ws.models.diagnostics, "model.missing_script").message


def test_invalid_api_and_unknown_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "models:\n  a: {provider: anthropic, api: responses}\n  b: {provider: openai, base_ulr: x}\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert "messages" in (only(ws.models.diagnostics, "model.invalid_api").fix or "")
    assert "did you mean 'base_url'" in only(ws.models.diagnostics, "config.unknown_key").message


def test_stream_false_is_a_known_model_key(tmp_path: Path) -> None:
    write(
        tmp_path / "ws",
        ".bearagent/config.yaml",
        "models:\n  local: {provider: openai-compatible, base_url: 'http://127.0.0.1:8080/v1', model: m, stream: false}\n",
    )
    loaded = load(tmp_path / "ws", tmp_path / "home")
    entry = loaded.models.resolve("local")
    assert entry.stream is False
    assert not [d for d in loaded.diagnostics() if d.code == "config.unknown_key"]


def test_stream_timeouts_are_model_keys_and_reach_the_provider_settings(tmp_path: Path) -> None:
    write(
        tmp_path / "ws",
        ".bearagent/config.yaml",
        "models:\n"
        "  slow: {provider: openai, model: m, timeout_s: 300, stream_idle_timeout_s: 45, max_stream_s: 1800}\n"
        "  plain: {provider: openai, model: m}\n",
    )
    loaded = load(tmp_path / "ws", tmp_path / "home")
    slow, plain = loaded.models.resolve("slow"), loaded.models.resolve("plain")
    assert (slow.timeout_s, slow.stream_idle_timeout_s, slow.max_stream_s) == (300, 45, 1800)
    assert (plain.timeout_s, plain.stream_idle_timeout_s, plain.max_stream_s) == (120, None, None)
    assert not [d for d in loaded.diagnostics() if d.code.startswith(("config.", "model."))]
    settings = provider_settings(slow, {"OPENAI_API_KEY": "k"}, label="OpenAI", default_base_url="https://x/v1")
    assert (settings.timeout_s, settings.idle_timeout_s, settings.max_stream_s) == (300, 45, 1800)
    default = provider_settings(plain, {"OPENAI_API_KEY": "k"}, label="OpenAI", default_base_url="https://x/v1")
    assert default.idle_timeout_s == 120 and default.max_stream_s is None  # the idle limit defaults to timeout_s
    # the call's deadline is the cap on a whole answer, never timeout_s (which only bounds the first event)
    assert call_timeout_ms(slow) == 1_800_000 and call_timeout_ms(plain) == MAX_CALL_TIMEOUT_MS


@pytest.mark.parametrize(
    ("value", "problem"),
    [("0", "greater than 0"), ("-5", "greater than 0"), ("'soon'", "valid number"), ("7200", "less than or equal")],
)
def test_a_bad_stream_timeout_is_an_error_naming_the_key_and_the_entry_is_skipped(
    tmp_path: Path, value: str, problem: str
) -> None:
    for key in ("stream_idle_timeout_s", "max_stream_s"):
        write(
            tmp_path / key, ".bearagent/config.yaml", f"models:\n  m: {{provider: openai, model: m, {key}: {value}}}\n"
        )
        loaded = load(tmp_path / key, tmp_path / "home")
        d = only(loaded.models.diagnostics, "model.invalid")
        assert f"models.m.{key}" in d.message and problem in d.message and d.severity == "error"
        assert loaded.models.get("m") is None


def test_a_cap_shorter_than_a_wait_is_a_warning(tmp_path: Path) -> None:
    write(
        tmp_path / "ws",
        ".bearagent/config.yaml",
        "models:\n  m: {provider: openai, model: m, timeout_s: 120, max_stream_s: 60}\n",
    )
    loaded = load(tmp_path / "ws", tmp_path / "home")
    d = only(loaded.models.diagnostics, "model.max_stream_too_short")
    assert d.severity == "warning" and "max_stream_s (60s) is shorter than timeout_s (120s)" in d.message
    assert d.fix is not None and loaded.models.resolve("m").max_stream_s == 60

"""create_provider: adapter choice, key resolution, clear configuration errors, plugin registry."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import ModelEntry
from bearagent.ports import ModelProvider
from bearagent.providers.anthropic_messages import AnthropicMessagesProvider
from bearagent.providers.factory import KEYLESS_PLACEHOLDER, ProviderConstructor, create_provider
from bearagent.providers.openai_chat import OpenAIChatProvider
from bearagent.providers.openai_responses import OpenAIResponsesProvider
from bearagent.providers.scripted import ScriptedProvider

ENV = {"OPENAI_API_KEY": "sk-test-openai-000", "ANTHROPIC_API_KEY": "sk-ant-test-000", "MY_KEY": "k-mine-000"}


def entry(**fields: object) -> ModelEntry:
    data: dict[str, object] = {"name": "m", "provider": "openai", "model": "gpt-5-mini", "source": "config.yaml"}
    data.update(fields)
    return ModelEntry.model_validate(data)


def test_openai_defaults_to_responses_and_chat_is_selectable(tmp_path: Path) -> None:
    provider = create_provider(entry(), env=ENV, base_dir=tmp_path)
    assert isinstance(provider, OpenAIResponsesProvider)
    assert provider.settings.api_key == "sk-test-openai-000"
    assert provider.settings.base_url == "https://api.openai.com/v1"
    assert provider.store is False
    chat = create_provider(entry(api="chat"), env=ENV, base_dir=tmp_path)
    assert isinstance(chat, OpenAIChatProvider) and chat.max_tokens_field == "max_completion_tokens"


def test_openai_compatible_uses_chat_and_may_run_without_a_key(tmp_path: Path) -> None:
    provider = create_provider(
        entry(provider="openai-compatible", base_url="http://gpu-box:8000/v1/", model="qwen"), env={}, base_dir=tmp_path
    )
    assert isinstance(provider, OpenAIChatProvider)
    assert provider.settings.api_key == KEYLESS_PLACEHOLDER
    assert provider.settings.base_url == "http://gpu-box:8000/v1"
    assert provider.max_tokens_field == "max_tokens"


def test_anthropic_and_its_key(tmp_path: Path) -> None:
    provider = create_provider(entry(provider="anthropic", model="claude-x", timeout_s=7), env=ENV, base_dir=tmp_path)
    assert isinstance(provider, AnthropicMessagesProvider)
    assert provider.settings.api_key == "sk-ant-test-000"
    assert provider.settings.timeout_s == 7
    assert provider.settings.base_url == "https://api.anthropic.com"


def test_api_key_env_names_another_variable(tmp_path: Path) -> None:
    provider = create_provider(entry(api_key_env="MY_KEY"), env=ENV, base_dir=tmp_path)
    assert isinstance(provider, OpenAIResponsesProvider)
    assert provider.settings.api_key == "k-mine-000" and provider.settings.api_key_env == "MY_KEY"


def test_a_missing_key_names_the_variable_the_entry_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(BearAgentError) as caught:
        create_provider(entry(provider="anthropic", model="claude-x"), env={}, base_dir=tmp_path)
    message = str(caught.value)
    assert "ANTHROPIC_API_KEY" in message and "workspace/m" in message and "export ANTHROPIC_API_KEY" in message
    assert caught.value.info.code == "configuration.missing_api_key"
    with pytest.raises(BearAgentError, match="MY_KEY"):
        create_provider(
            entry(provider="openai-compatible", base_url="http://gpu-box/v1", api_key_env="MY_KEY"),
            env={},
            base_dir=tmp_path,
        )


def test_a_local_base_url_runs_without_a_key(tmp_path: Path) -> None:
    provider = create_provider(entry(base_url="http://127.0.0.1:8080/v1", api="chat"), env={}, base_dir=tmp_path)
    assert isinstance(provider, OpenAIChatProvider) and provider.settings.api_key == KEYLESS_PLACEHOLDER


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"provider": "openai", "api": "messages"}, "Valid provider/api pairs: openai: responses/chat"),
        ({"provider": "anthropic", "api": "chat"}, "does not speak api 'chat'"),
        ({"provider": "mistral"}, "unknown provider 'mistral'. Known providers: anthropic, openai"),
        ({"provider": "openai-compatible"}, "`base_url:` is required"),
        ({"model": None}, "`model:` is required"),
        ({"provider": "scripted", "model": None}, "needs `script:"),
    ],
)
def test_configuration_errors_are_clear(tmp_path: Path, fields: dict[str, object], needle: str) -> None:
    with pytest.raises(BearAgentError) as caught:
        create_provider(entry(**fields), env=ENV, base_dir=tmp_path)
    assert needle in str(caught.value)
    assert "model entry workspace/m (config.yaml)" in str(caught.value)
    assert caught.value.info.category == "configuration"


def test_scripted_resolves_its_script_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.yaml").write_text("turns: [{text: hi}]\n", encoding="utf-8")
    provider = create_provider(
        entry(provider="scripted", model=None, script="scripts/s.yaml"), env={}, base_dir=tmp_path
    )
    assert isinstance(provider, ScriptedProvider) and provider.turns_left == 1


def test_plugins_register_providers_but_cannot_replace_built_ins(tmp_path: Path) -> None:
    made: list[str] = []

    def build(entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider:
        made.append(entry.name)
        return ScriptedProvider.from_file(base_dir / "s.yaml")

    (tmp_path / "s.yaml").write_text("turns: [{text: hi}]\n", encoding="utf-8")
    registry: dict[str, ProviderConstructor] = {"echo": build}
    provider = create_provider(entry(provider="echo"), env={}, base_dir=tmp_path, registry=registry)
    assert isinstance(provider, ScriptedProvider) and made == ["m"]
    with pytest.raises(BearAgentError, match="built in and cannot be replaced"):
        create_provider(entry(), env=ENV, base_dir=tmp_path, registry={"openai": build})
    with pytest.raises(BearAgentError, match="Known providers: anthropic, echo, openai"):
        create_provider(entry(provider="nope"), env={}, base_dir=tmp_path, registry=registry)


def test_importing_the_factory_does_not_import_the_sdks() -> None:
    code = (
        "import sys, bearagent.providers.factory, bearagent.providers.scripted, bearagent.domain.pricing\n"
        "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

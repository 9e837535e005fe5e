"""Build a `ModelProvider` from a `ModelEntry`: pick the adapter, resolve the key from the environment.

| provider            | api                    | adapter                                   |
|---------------------|------------------------|-------------------------------------------|
| `openai`            | `responses` (default)  | OpenAI Responses API                      |
| `openai`            | `chat`                 | OpenAI Chat Completions                   |
| `openai-compatible` | `chat` (default)       | Chat Completions at `base_url` (required) |
| `openai-compatible` | `responses`            | Responses API at `base_url` (required)    |
| `anthropic`         | `messages` (default)   | Anthropic Messages API                    |
| `scripted`          | -                      | replays `script:` (relative to base_dir)  |

Keys: `api_key_env` names the variable (default `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`). A missing key is an
error, except (a) when `base_url` points at this machine (localhost, 127.x, ::1) and (b) for `openai-compatible`
entries without `api_key_env`: those run without a key (a placeholder is sent, which local servers ignore).
Adapter modules (and the SDKs) are imported only here, when a provider is built.

Each built-in provider is a factory (`build_openai`, ...) with the shape every plugin provider has
(`ProviderConstructor`); the built-in plugin registers them through `register_models`, and `create_provider` looks
the entry's provider id up in what was registered.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import urlparse

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import IdGenerator
from bearagent.domain.specs import ModelEntry

if TYPE_CHECKING:
    from bearagent.ports import ModelProvider
    from bearagent.providers._base import ProviderSettings

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
KEYLESS_PLACEHOLDER = "no-key-configured"
VALID_PAIRS: dict[str, tuple[str | None, ...]] = {
    "openai": ("responses", "chat"),
    "openai-compatible": ("chat", "responses"),
    "anthropic": ("messages",),
    "scripted": (None,),
}


class ProviderConstructor(Protocol):
    """What a plugin registers for its provider id: build a provider for one model entry."""

    def __call__(self, entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path) -> ModelProvider: ...


def _config_error(entry: ModelEntry, specific: str, message: str) -> BearAgentError:
    where = f"model entry {entry.ref}" + (f" ({entry.source})" if entry.source else "")
    return BearAgentError(ErrorInfo.of("configuration", specific, f"{where}: {message}", entry=entry.ref))


def _pairs_text() -> str:
    parts: list[str] = []
    for provider, apis in VALID_PAIRS.items():
        shown = "/".join(api for api in apis if api) or "(no api)"
        parts.append(f"{provider}: {shown}")
    return "; ".join(parts)


def is_local_url(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.") or host.endswith(".localhost")


def _resolve_key(
    entry: ModelEntry, env: Mapping[str, str], base_url: str, default_var: str | None
) -> tuple[str, str | None]:
    """(key value, variable name). The placeholder when this entry may run without a key: its base URL is on this
    machine, or neither the entry nor the provider names a key variable."""
    var = entry.api_key_env or default_var
    if var is not None:
        value = env.get(var, "").strip()
        if value:
            return value, var
    if var is None or is_local_url(base_url):
        return KEYLESS_PLACEHOLDER, var
    raise _config_error(
        entry,
        "missing_api_key",
        f"the environment variable {var} is not set (or empty), so there is no API key for provider "
        f"{entry.provider!r}. Set it (`export {var}=...`) before running bearagent, or name another variable with "
        "`api_key_env:` in the entry. The key itself never goes into config files.",
    )


def provider_settings(
    entry: ModelEntry,
    env: Mapping[str, str],
    *,
    label: str,
    default_base_url: str | None = None,
    default_key_env: str | None = None,
) -> ProviderSettings:
    """The settings of one model entry, resolved the way the built-in providers resolve theirs.

    `model:` is required; the base URL is the entry's `base_url`, else `default_base_url` (one of them is
    required), without a trailing `/`. The key is read from the variable the entry names (`api_key_env`), else
    `default_key_env`: a missing key is a configuration error naming the variable and the fix, except when the
    base URL is on this machine or no variable is named at all (then `KEYLESS_PLACEHOLDER` is sent). `label` names
    the provider in error messages ("Acme", "the Acme server"). Raises `BearAgentError` (category
    `configuration`) naming the entry."""
    from bearagent.providers._base import ProviderSettings

    if not entry.model:
        raise _config_error(entry, "missing_model", f"`model:` is required for provider {entry.provider!r}.")
    raw_url = entry.base_url or default_base_url
    if not raw_url:
        raise _config_error(
            entry, "missing_base_url", f"`base_url:` is required for provider {entry.provider!r} (the API's URL)."
        )
    base_url = raw_url.rstrip("/")
    key, key_env = _resolve_key(entry, env, base_url, default_key_env)
    return ProviderSettings(
        entry_ref=entry.ref,
        model=entry.model,
        base_url=base_url,
        api_key=key,
        api_key_env=key_env,
        timeout_s=entry.timeout_s,
        max_output_tokens=entry.max_output_tokens,
        temperature=entry.temperature,
        headers=dict(entry.headers),
        stream=entry.stream,
        provider_label=label,
        stream_idle_timeout_s=entry.stream_idle_timeout_s,
        max_stream_s=entry.max_stream_s,
    )


def _api(entry: ModelEntry) -> str | None:
    """The entry's protocol (`api:`), checked against what its built-in provider speaks; the first is the default."""
    apis = VALID_PAIRS[entry.provider]
    api = entry.api if entry.api is not None else apis[0]
    if api not in apis:
        raise _config_error(
            entry,
            "unknown_api",
            f"provider {entry.provider!r} does not speak api {entry.api!r}. Valid provider/api pairs: {_pairs_text()}.",
        )
    return api


def build_openai(
    entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
) -> ModelProvider:
    """`provider: openai`: the Responses API (default, `store: false`) or Chat Completions (`api: chat`)."""
    api = _api(entry)
    settings = provider_settings(
        entry, env, label="OpenAI", default_base_url=OPENAI_BASE_URL, default_key_env="OPENAI_API_KEY"
    )
    if api == "chat":
        from bearagent.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(settings, ids=ids, max_tokens_field="max_completion_tokens")
    from bearagent.providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(settings, ids=ids, store=False)


def build_openai_compatible(
    entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
) -> ModelProvider:
    """`provider: openai-compatible`: Chat Completions (default) or the Responses API at the entry's `base_url`."""
    api = _api(entry)
    if not entry.model:
        raise _config_error(entry, "missing_model", f"`model:` is required for provider {entry.provider!r}.")
    if not entry.base_url:
        raise _config_error(
            entry,
            "missing_base_url",
            "`base_url:` is required for provider 'openai-compatible' (e.g. http://127.0.0.1:8080/v1 for llama.cpp, "
            "http://127.0.0.1:11434/v1 for Ollama, http://127.0.0.1:8000/v1 for vLLM).",
        )
    settings = provider_settings(entry, env, label="the OpenAI-compatible server")
    if api == "chat":
        from bearagent.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(settings, ids=ids, max_tokens_field="max_tokens")
    from bearagent.providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(settings, ids=ids, store=None)


def build_anthropic(
    entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
) -> ModelProvider:
    """`provider: anthropic`: the Messages API."""
    _api(entry)
    settings = provider_settings(
        entry, env, label="Anthropic", default_base_url=ANTHROPIC_BASE_URL, default_key_env="ANTHROPIC_API_KEY"
    )
    from bearagent.providers.anthropic_messages import AnthropicMessagesProvider

    return AnthropicMessagesProvider(settings, ids=ids)


def build_scripted(
    entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
) -> ModelProvider:
    """`provider: scripted`: replays `script:` (relative to `base_dir`, the config file's directory)."""
    _api(entry)
    if not entry.script:
        raise _config_error(
            entry,
            "missing_script",
            "a scripted entry needs `script: path/to/script.yaml` (relative to the config file's directory).",
        )
    from bearagent.providers.scripted import ScriptedProvider

    path = Path(entry.script)
    if not path.is_absolute():
        path = base_dir / path
    return ScriptedProvider.from_file(path, entry_ref=entry.ref, ids=ids)


BUILTIN_FACTORIES: Mapping[str, ProviderConstructor] = {
    "openai": build_openai,
    "openai-compatible": build_openai_compatible,
    "anthropic": build_anthropic,
    "scripted": build_scripted,
}
"""The built-in providers. The built-in plugin (`bearagent.plugins.builtin`) registers them through
`register_models`; `create_provider` keeps them when a registry tries to replace one."""
BUILTIN_DESCRIPTIONS: Mapping[str, str] = {
    "openai": "OpenAI: Responses API (default) or Chat Completions (api: chat)",
    "openai-compatible": "an OpenAI-compatible server at base_url (llama.cpp, vLLM, Ollama...): chat or responses",
    "anthropic": "Anthropic: Messages API",
    "scripted": "replays a YAML script of model turns (tests, demos, offline)",
}


def create_provider(
    entry: ModelEntry,
    *,
    env: Mapping[str, str],
    base_dir: Path,
    registry: Mapping[str, ProviderConstructor] | None = None,
    ids: IdGenerator | None = None,
) -> ModelProvider:
    """The provider for `entry`, built by the factory registered for its `provider:` id. `registry` is what the
    plugins registered through `register_models` (the built-in plugin's providers and third-party ones); None =
    the built-in providers only. A built-in id cannot be replaced. The factory receives `ids` when it declares an
    `ids` parameter. Raises `BearAgentError` (category `configuration`) naming the entry and the fix."""
    provider = entry.provider
    table: dict[str, ProviderConstructor] = dict(BUILTIN_FACTORIES)
    for provider_id, factory in (registry or {}).items():
        builtin = BUILTIN_FACTORIES.get(provider_id)
        if builtin is None:
            table[provider_id] = factory
        elif factory is not builtin and provider_id == provider:
            raise _config_error(
                entry,
                "provider_shadowed",
                f"a plugin registers provider id {provider!r}, which is built in and cannot be replaced. "
                "Ask the plugin author to use another id.",
            )
    factory = table.get(provider)
    if factory is None:
        raise _config_error(
            entry,
            "unknown_provider",
            f"unknown provider {provider!r}. Known providers: {', '.join(sorted(table))}. Fix `provider:` or install "
            "the plugin that provides it.",
        )
    if ids is not None and _takes_ids(factory):
        return cast(_ProviderConstructorWithIds, factory)(entry, env=env, base_dir=base_dir, ids=ids)
    return factory(entry, env=env, base_dir=base_dir)


class _ProviderConstructorWithIds(Protocol):
    def __call__(
        self, entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None
    ) -> ModelProvider: ...


def _takes_ids(factory: object) -> bool:
    try:
        return "ids" in inspect.signature(cast(Callable[..., object], factory)).parameters
    except (TypeError, ValueError):  # a callable without a signature (a C function)
        return False

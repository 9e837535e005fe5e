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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import IdGenerator
from bearagent.domain.specs import ModelEntry
from bearagent.ports import ModelProvider

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
KEYLESS_PLACEHOLDER = "no-key-configured"
VALID_PAIRS: dict[str, tuple[str | None, ...]] = {
    "openai": ("responses", "chat"),
    "openai-compatible": ("chat", "responses"),
    "anthropic": ("messages",),
    "scripted": (None,),
}
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


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


def _resolve_key(entry: ModelEntry, env: Mapping[str, str], base_url: str) -> tuple[str, str | None]:
    """(key value, variable name). The placeholder when this entry may run without a key."""
    var = entry.api_key_env or DEFAULT_KEY_ENV.get(entry.provider)
    if var is not None:
        value = env.get(var, "").strip()
        if value:
            return value, var
    keyless_ok = is_local_url(base_url) or (entry.provider == "openai-compatible" and entry.api_key_env is None)
    if keyless_ok:
        return KEYLESS_PLACEHOLDER, var
    assert var is not None
    raise _config_error(
        entry,
        "missing_api_key",
        f"the environment variable {var} is not set (or empty), so there is no API key for provider "
        f"{entry.provider!r}. Set it (`export {var}=...`) before running bearagent, or name another variable with "
        "`api_key_env:` in the entry. The key itself never goes into config files.",
    )


def create_provider(
    entry: ModelEntry,
    *,
    env: Mapping[str, str],
    base_dir: Path,
    registry: Mapping[str, ProviderConstructor] | None = None,
    ids: IdGenerator | None = None,
) -> ModelProvider:
    """The provider for `entry`. Plugin providers come from `registry` (provider id -> constructor); built-in ids
    cannot be replaced. Raises `BearAgentError` (category `configuration`) naming the entry and the fix."""
    provider = entry.provider
    if provider not in VALID_PAIRS:
        if registry is not None and provider in registry:
            return registry[provider](entry, env=env, base_dir=base_dir)
        known: list[str] = sorted([*VALID_PAIRS, *(registry or {})])
        raise _config_error(
            entry,
            "unknown_provider",
            f"unknown provider {provider!r}. Known providers: {', '.join(known)}. Fix `provider:` or install the "
            "plugin that provides it.",
        )
    if registry is not None and provider in registry:
        raise _config_error(
            entry,
            "provider_shadowed",
            f"a plugin registers provider id {provider!r}, which is built in and cannot be replaced. "
            "Ask the plugin author to use another id.",
        )
    api = entry.api if entry.api is not None else VALID_PAIRS[provider][0]
    if api not in VALID_PAIRS[provider]:
        raise _config_error(
            entry,
            "unknown_api",
            f"provider {provider!r} does not speak api {entry.api!r}. Valid provider/api pairs: {_pairs_text()}.",
        )
    if provider == "scripted":
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
    if not entry.model:
        raise _config_error(entry, "missing_model", f"`model:` is required for provider {provider!r}.")
    if provider == "openai-compatible" and not entry.base_url:
        raise _config_error(
            entry,
            "missing_base_url",
            "`base_url:` is required for provider 'openai-compatible' (e.g. http://127.0.0.1:8080/v1 for llama.cpp, "
            "http://127.0.0.1:11434/v1 for Ollama, http://127.0.0.1:8000/v1 for vLLM).",
        )
    default_url = ANTHROPIC_BASE_URL if provider == "anthropic" else OPENAI_BASE_URL
    base_url = (entry.base_url or default_url).rstrip("/")
    key, key_env = _resolve_key(entry, env, base_url)

    from bearagent.providers._base import ProviderSettings

    label = {"openai": "OpenAI", "openai-compatible": "the OpenAI-compatible server", "anthropic": "Anthropic"}[
        provider
    ]
    settings = ProviderSettings(
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
    )
    if provider == "anthropic":
        from bearagent.providers.anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider(settings, ids=ids)
    if api == "chat":
        from bearagent.providers.openai_chat import OpenAIChatProvider

        field = "max_completion_tokens" if provider == "openai" else "max_tokens"
        return OpenAIChatProvider(settings, ids=ids, max_tokens_field=field)
    from bearagent.providers.openai_responses import OpenAIResponsesProvider

    return OpenAIResponsesProvider(settings, ids=ids, store=False if provider == "openai" else None)

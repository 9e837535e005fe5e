"""The built-in model catalog: zero-config from a provider key in the environment, and Claude Code's model names.

- **Zero-config**: with no model entry anywhere and `ANTHROPIC_API_KEY` (else `OPENAI_API_KEY`) set, the workspace
  gets one user-level entry for that provider's default model at its official endpoint, or at
  `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` when set (the user's own environment is trusted, as those SDKs trust it).
  An info diagnostic (`model.from_environment`) announces it in one line. Nothing in the workspace chose it, so it
  needs no trust.
- **Claude Code's names**: `sonnet`, `opus`, `haiku` and the full ids of the catalog (`claude-sonnet-4-5`, ...) in an
  agent or command file become entries of the provider in use (the default model's), from CATALOG below, unless an
  entry of that name exists (so `models: {sonnet: ...}` in a config.yaml overrides a row). They keep the default
  entry's endpoint, key variable and level, so they widen nothing the default did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import ModelEntry


@dataclass(frozen=True, slots=True)
class ProviderCatalog:
    """One conventional provider: where its key and endpoint come from, its default model and the Claude names."""

    provider: str
    key_env: str
    base_url_env: str
    default: str
    claude_names: Mapping[str, str]
    models: tuple[str, ...]
    api: str | None = None
    entry_name: str = "default"


CATALOG: Mapping[str, ProviderCatalog] = {
    "anthropic": ProviderCatalog(
        provider="anthropic",
        key_env="ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        default="claude-sonnet-4-5",
        claude_names={"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5"},
        models=("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-sonnet-4-0"),
        entry_name="claude",
    ),
    "openai": ProviderCatalog(
        provider="openai",
        key_env="OPENAI_API_KEY",
        base_url_env="OPENAI_BASE_URL",
        default="gpt-5",
        claude_names={"sonnet": "gpt-5", "opus": "gpt-5", "haiku": "gpt-5-mini"},
        models=("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1"),
        api="responses",
        entry_name="gpt",
    ),
}
"""The documented table (docs/providers.md, "Zero-config and Claude Code's model names"). Order: the first provider
whose key is set is the zero-config one."""


def environment_entry(env: Mapping[str, str]) -> tuple[ModelEntry, Diagnostic] | None:
    """The zero-config entry for the first conventional provider whose key is set, and its one-line announcement."""
    for cat in CATALOG.values():
        if not env.get(cat.key_env, "").strip():
            continue
        base_url = env.get(cat.base_url_env, "").strip() or None
        entry = ModelEntry(
            name=cat.entry_name,
            level="platform",
            provider=cat.provider,
            api=cat.api,
            model=cat.default,
            base_url=base_url,
            api_key_env=cat.key_env,
            source=f"env:{cat.key_env}",
        )
        where = f"{base_url} ({cat.base_url_env})" if base_url else "its official endpoint"
        notice = Diagnostic(
            severity="info",
            code="model.from_environment",
            message=f"no model is configured and {cat.key_env} is set: using {cat.provider} {cat.default} at {where}",
            source=f"env:{cat.key_env}",
            subject=cat.entry_name,
            fix="to choose another, add a `models:` entry and `default_model:` to config.yaml (`bearagent init`)",
        )
        return entry, notice
    return None


def claude_name_entries(default: ModelEntry, taken: set[str]) -> list[ModelEntry]:
    """Entries for Claude Code's names and the catalog's ids, derived from `default` (the model in use), except the
    names in `taken` (a configured entry of that name wins)."""
    cat = CATALOG.get(default.provider)
    if cat is None or (default.provider == "openai" and default.base_url and "api.openai.com" not in default.base_url):
        return []  # a provider without a row, or a server whose model names are its own
    names: dict[str, str] = {**{m: m for m in cat.models}, **cat.claude_names}
    return [
        default.model_copy(update={"name": name, "model": model})
        for name, model in names.items()
        if name not in taken and name != default.name
    ]


def catalog_models(provider: str) -> tuple[str, ...]:
    """The catalog's model ids of `provider` (what `models list` and `/model` offer besides the entries)."""
    cat = CATALOG.get(provider)
    return cat.models if cat is not None else ()

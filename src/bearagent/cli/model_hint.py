"""When no model is configured but a provider key is in the environment: say so, and give the exact config lines
that use it (the key itself is never written anywhere: the entry names the variable)."""

from __future__ import annotations

import os
from collections.abc import Mapping

# variable -> (entry name, the entry as one YAML flow mapping)
KEY_ENTRIES: tuple[tuple[str, str, str], ...] = (
    ("ANTHROPIC_API_KEY", "claude", "{provider: anthropic, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}"),
    ("OPENAI_API_KEY", "gpt", "{provider: openai, api: responses, model: gpt-5-mini, api_key_env: OPENAI_API_KEY}"),
)


def key_config_lines(env: Mapping[str, str] | None = None) -> list[str] | None:
    """`ANTHROPIC_API_KEY is set: ...` and the config.yaml lines for the first provider key that is set, else None."""
    environ = os.environ if env is None else env
    for variable, name, entry in KEY_ENTRIES:
        if environ.get(variable, "").strip():
            return [
                f"{variable} is set in the environment; to use it, add to .bearagent/config.yaml "
                "(the entry under an existing `models:` if the file has one):",
                f"  default_model: {name}",
                "  models:",
                f"    {name}: {entry}",
            ]
    return None


def no_model_fix(code: str | None, fallback: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The fix for an error: for `configuration.no_model` with a provider key set, the config lines; else
    `fallback`."""
    if code is None or code.rsplit(".", 1)[-1] != "no_model":
        return fallback
    lines = key_config_lines(env)
    return "\n".join(lines) if lines is not None else fallback

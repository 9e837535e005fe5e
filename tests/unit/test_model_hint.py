"""No model configured, a provider key in the environment: the exact config lines are offered."""

from __future__ import annotations

from bearagent.cli.model_hint import key_config_lines, no_model_fix


def test_the_config_lines_name_the_variable_never_the_key() -> None:
    lines = key_config_lines({"OPENAI_API_KEY": "sk-secret"})
    assert lines is not None
    assert lines[0].startswith("OPENAI_API_KEY is set in the environment")
    assert "  default_model: gpt" in lines
    assert "    gpt: {provider: openai, api: responses, model: gpt-5-mini, api_key_env: OPENAI_API_KEY}" in lines
    assert "sk-secret" not in "\n".join(lines)
    anthropic = key_config_lines({"ANTHROPIC_API_KEY": "x", "OPENAI_API_KEY": "y"})
    assert anthropic is not None and "  default_model: claude" in anthropic


def test_nothing_to_offer_without_a_key_or_for_other_errors() -> None:
    assert key_config_lines({"OPENAI_API_KEY": "  "}) is None
    assert no_model_fix("configuration.no_model", "set default_model", {}) == "set default_model"
    assert no_model_fix("configuration.unknown_agent", "other", {"OPENAI_API_KEY": "k"}) == "other"
    fix = no_model_fix("configuration.no_model", "set default_model", {"OPENAI_API_KEY": "k"})
    assert fix is not None and "default_model: gpt" in fix

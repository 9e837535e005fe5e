"""config.yaml parsing, workspace discovery, user dir, precedence of settings, project instructions."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.config_ws import agent_file, codes, load, only, write

from bearagent.config.files import did_you_mean, split_frontmatter
from bearagent.config.workspace import discover_workspace, user_config_dir
from bearagent.domain.errors import BearAgentError


def test_discovery_walks_up_to_the_nearest_bearagent_dir(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".bearagent").mkdir(parents=True)
    deep = tmp_path / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert discover_workspace(deep) == (tmp_path / "proj").resolve()


def test_discovery_falls_back_to_cwd_and_override_wins(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert discover_workspace(plain) == plain.resolve()
    other = tmp_path / "other"
    other.mkdir()
    assert discover_workspace(plain, other) == other.resolve()


def test_user_config_dir_rules(tmp_path: Path) -> None:
    assert user_config_dir({"BEARAGENT_HOME": str(tmp_path / "h")}) == tmp_path / "h"
    assert user_config_dir({"XDG_CONFIG_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "bearagent"
    assert user_config_dir({"HOME": str(tmp_path)}) == tmp_path / ".config" / "bearagent"


def test_unknown_top_level_key_is_a_warning_with_did_you_mean_and_line(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "kind: project\ndefault_agnet: plan\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.diagnostics(), "config.unknown_key")
    assert d.severity == "warning"
    assert "'default_agnet'" in d.message and "did you mean 'default_agent'" in d.message
    assert d.line == 2 and d.source.endswith("config.yaml")
    assert d.fix == "rename it to 'default_agent'"


def test_unknown_nested_budget_key_is_named(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "budgets:\n  max_tool_call: 3\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.diagnostics(), "config.unknown_key")
    assert "budgets.max_tool_call" in d.message and "max_tool_calls" in d.message


def test_broken_yaml_names_file_and_line_and_everything_else_still_loads(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "kind: project\nmodels:\n  x: [unclosed\n")
    write(tmp_path, ".bearagent/agents/ok.md", agent_file("Fine agent."))
    write(tmp_path, ".bearagent/agents/broken.md", "---\ndescription: fine\ntools: [Read\n---\nbody\n")
    ws = load(tmp_path, tmp_path / "home")
    errors = [d for d in ws.diagnostics() if d.code == "config.yaml_syntax"]
    assert {Path(d.source).name for d in errors} == {"config.yaml", "broken.md"}
    broken = next(d for d in errors if d.source.endswith("broken.md"))
    assert broken.line is not None and 2 <= broken.line <= 4
    assert broken.fix and "YAML" in broken.fix
    assert ws.agents.get("ok") is not None and ws.agents.get("broken") is None


def test_duplicate_yaml_key_is_an_error_not_last_wins(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "models:\n  gpt: {provider: openai}\n  gpt: {provider: anthropic}\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.diagnostics(), "config.yaml_syntax")
    assert "duplicate key 'gpt'" in d.message and d.line == 3


def test_bad_field_value_is_an_error_and_the_default_is_used(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "kind: server\ncompat: maybe\nbudgets: {max_tool_calls: -1}\n")
    ws = load(tmp_path, tmp_path / "home")
    invalid = [d for d in ws.diagnostics() if d.code == "config.invalid_value"]
    assert {d.field for d in invalid} == {"kind", "compat", "budgets.max_tool_calls"}
    kind = next(d for d in invalid if d.field == "kind")
    assert kind.line == 1 and "project or chat" in kind.message
    assert ws.config.kind == "project" and ws.config.compat is True
    assert ws.config.budgets.max_tool_calls == 200


def test_workspace_settings_override_user_settings_key_by_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(
        home,
        "bearagent/config.yaml",
        "default_agent: plan\nbudgets: {max_tool_calls: 7, max_tokens: 99}\npermissions: {deny: ['Bash(rm *)']}\n",
    )
    write(tmp_path / "ws", ".bearagent/config.yaml", "budgets: {max_tool_calls: 5}\npermissions: {allow: [Read]}\n")
    ws = load(tmp_path / "ws", home)
    assert ws.config.default_agent == "plan"
    assert ws.config.budgets.max_tool_calls == 5 and ws.config.budgets.max_tokens == 99  # lowered key by key
    assert ws.config.permissions.deny == ("Bash(rm *)",) and ws.config.permissions.allow == ("Read",)


def test_model_base_url_is_expanded_at_point_of_use(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "models:\n  gpt: {provider: openai, model: m, base_url: '${MY_BASE:-http://127.0.0.1:9/v1}', api_key_env: K}\n"
        "  other: {provider: openai, model: m, base_url: '${NEEDED_VAR}'}\ndefault_model: gpt\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    gpt = ws.models.resolve("gpt")
    assert gpt.base_url == "${MY_BASE:-http://127.0.0.1:9/v1}"  # stored raw
    assert ws.models.for_use(gpt, {}).base_url == "http://127.0.0.1:9/v1"
    assert ws.models.for_use(gpt, {"MY_BASE": "http://x"}).base_url == "http://x"
    with pytest.raises(BearAgentError) as info:
        ws.models.for_use(ws.models.resolve("other"), {})
    assert "NEEDED_VAR" in info.value.info.message and "models.other.base_url" in info.value.info.message
    assert info.value.hint and "export NEEDED_VAR" in info.value.hint


def test_project_instructions_agents_md_then_claude_md(tmp_path: Path) -> None:
    write(tmp_path, "CLAUDE.md", "claude rules")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.instructions is not None and ws.instructions.text.strip() == "claude rules"
    write(tmp_path, "AGENTS.md", "agents rules")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.instructions is not None and ws.instructions.path.name == "AGENTS.md"


def test_unknown_default_agent_and_model_are_errors(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "default_agent: buidl\ndefault_model: nope\n")
    ws = load(tmp_path, tmp_path / "home")
    assert "config.unknown_default_agent" in codes(ws.diagnostics())
    d = only(ws.diagnostics(), "config.unknown_default_model")
    assert d.line == 2


def test_did_you_mean_handles_case_and_separators() -> None:
    assert did_you_mean("preToolUse", ["PreToolUse", "PostToolUse"]) == "PreToolUse"
    assert did_you_mean("disallowedtools", ["disallowed_tools"]) == "disallowed_tools"
    assert did_you_mean("zzz", ["kind"]) is None


def test_split_frontmatter() -> None:
    assert split_frontmatter("---\na: 1\n---\nbody\n") == ("a: 1", "body\n", 4)
    assert split_frontmatter("no frontmatter") is None
    assert split_frontmatter("---\na: 1\n") is None

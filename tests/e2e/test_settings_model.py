"""Claude Code's `model` and `availableModels` in `.claude/settings*.json`, in real runs: `model` picks the default
model (an entry's name, or the `model:` of an entry), below config.yaml's `default_model`; `availableModels` limits
what `--model` may pick; an unknown `model` warns and the default stays."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md

from bearagent.cli import main

CONFIG = """
default_agent: main
models:
  fast: {provider: scripted, script: fast.yaml}
  smart: {provider: scripted, script: smart.yaml, model: claude-smart-9}
"""


def _ws(tmp_path: Path, settings: dict[str, object], config: str = CONFIG) -> Path:
    root = tmp_path / "ws"
    write(root, ".bearagent/config.yaml", config)
    write(root, ".bearagent/fast.yaml", 'turns:\n  - text: "from fast"\n')
    write(root, ".bearagent/smart.yaml", 'turns:\n  - text: "from smart"\n')
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary"))
    write(root, ".claude/settings.json", json.dumps(settings, indent=2))  # one key a line
    return root


def _run(root: Path, home: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["run", "-w", str(root), "--json", *args, "hello"], env=isolated_env(home), prog_name="bearagent"
    )


def _final(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["final"]


def test_settings_model_picks_the_default_by_entry_name_or_by_the_entrys_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _final(_run(_ws(tmp_path / "a", {"model": "smart"}), home)) == "from smart"
    assert _final(_run(_ws(tmp_path / "b", {"model": "claude-smart-9"}), home)) == "from smart"
    outranked = _ws(tmp_path / "c", {"model": "smart"}, CONFIG + "default_model: fast\n")
    assert _final(_run(outranked, home)) == "from fast"  # config.yaml's default_model outranks the settings


def test_an_unknown_settings_model_warns_and_the_default_stays(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"model": "opus"})
    loaded = load(root, tmp_path / "home")
    (warning,) = [d for d in loaded.diagnostics() if d.code == "config.unknown_settings_model"]
    assert "'opus'" in warning.message and "fast" in (warning.fix or "") and warning.field == "model"
    assert warning.source.endswith("settings.json") and warning.line == 2  # the line of "model"
    assert loaded.config.default_model is None


def test_an_unknown_fallback_model_warns_that_runs_have_none(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"fallbackModel": "opus"})
    loaded = load(root, tmp_path / "home")
    (warning,) = [d for d in loaded.diagnostics() if d.code == "config.unknown_settings_model"]
    assert warning.message.startswith("fallbackModel 'opus' in settings") and "no fallback model" in warning.message
    assert warning.field == "fallbackModel" and "fast" in (warning.fix or "")
    assert warning.source.endswith("settings.json") and warning.line == 2


def test_available_models_limit_what_model_may_pick(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _ws(tmp_path, {"model": "fast", "availableModels": ["fast", "claude-smart-9"]})
    assert _final(_run(root, home, "-m", "smart")) == "from smart"  # allowed by the entry's model name
    root = _ws(tmp_path / "narrow", {"model": "fast", "availableModels": ["fast"]})
    refused = _run(root, home, "-m", "smart")
    assert refused.exit_code != 0
    assert "model 'smart' is not one of the availableModels of" in refused.output and "fast" in refused.output
    assert _final(_run(root, home, "-m", "fast")) == "from fast"

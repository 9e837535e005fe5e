"""Claude Code's `outputStyle`: the built-in styles and `.claude/output-styles/*.md` files are added to the top-level
primary agent's system prompt (what a real run sends), chosen by the highest settings file; an unknown name warns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.plugins.manager import PluginHost

TERSE = """---
name: Terse
description: Short answers only.
keep-coding-instructions: true
---
Answer in at most three sentences. Never restate the question.
"""


def _ws(tmp_path: Path, settings: dict[str, str], local: dict[str, str] | None = None) -> Path:
    agents = {"main": agent_md("Main.", mode="primary"), "helper": agent_md("Helps.", mode="subagent")}
    root = scripted_workspace(tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents=agents, config=CONFIG)
    write(root, ".claude/settings.json", json.dumps(settings))
    if local is not None:
        write(root, ".claude/settings.local.json", json.dumps(local))
    write(root, ".claude/output-styles/terse.md", TERSE)
    return root


def _prompts(root: Path, home: Path) -> tuple[str, str]:
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("hello")
        assert result.status == "succeeded", result.error
        main = asyncio.run(runtime_of(ws).plans.plan("main", session_key="probe"))
        helper = asyncio.run(runtime_of(ws).plans.plan("helper", session_key="probe", depth=1))
    return main.system_prompt, helper.system_prompt


def test_a_built_in_style_is_added_to_the_primary_agents_prompt_only(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"outputStyle": "Explanatory"})
    main, helper = _prompts(root, tmp_path / "home")
    assert "# Output style: Explanatory" in main and "★ Insight" in main
    assert main.index("You are a test agent.") < main.index("# Output style")  # the agent's own prompt stays first
    assert "# Output style" not in helper  # a subagent answers its parent, not the user


def test_a_custom_style_file_from_the_local_settings_wins(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"outputStyle": "learning"}, {"outputStyle": "terse"})
    main, _ = _prompts(root, tmp_path / "home")
    assert "# Output style: Terse\n\nAnswer in at most three sentences." in main
    assert "TODO(human)" not in main


def test_default_adds_nothing_and_an_unknown_style_warns(tmp_path: Path) -> None:
    root = _ws(tmp_path, {"outputStyle": "default"})
    main, _ = _prompts(root, tmp_path / "home")
    assert "# Output style" not in main
    root = _ws(tmp_path / "other", {"outputStyle": "Pirate"})
    loaded = load(root, tmp_path / "home")
    (warning,) = [d for d in loaded.diagnostics() if d.code == "config.unknown_output_style"]
    assert "'Pirate'" in warning.message and "Explanatory" in (warning.fix or "") and "Terse" in (warning.fix or "")
    assert loaded.output_style is None

"""Claude Code's agent `skills:` preloads the skills' instructions into the agent's context (an agent file from
`.claude/agents/`); BearAgent's own agent files keep reading `skills:` as the `Skill` tool's allowlist only."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.plugins.manager import PluginHost

CLAUDE_AGENT = """---
name: reviewer
description: Reviews code.
tools: Read, Skill
skills: [house-style]
---
You review code.
"""
STYLE = "---\nname: house-style\ndescription: Our style.\n---\nTabs, never spaces. Names in British English.\n"
OTHER = "---\nname: other\ndescription: Something else.\n---\nUnrelated instructions.\n"


def test_a_claude_code_agent_starts_with_its_skills_loaded(tmp_path: Path) -> None:
    agents = {
        "main": agent_md("Main.", mode="primary"),
        "bear": agent_md("Bear.", mode="subagent", tools="[Read, Skill]", skills="[house-style]"),
    }
    root = scripted_workspace(tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents=agents, config=CONFIG)
    write(root, ".claude/agents/reviewer.md", CLAUDE_AGENT)
    write(root, ".claude/skills/house-style/SKILL.md", STYLE)
    write(root, ".claude/skills/other/SKILL.md", OTHER)

    async def prompts() -> tuple[str, str]:
        async with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=PluginHost()) as ws:
            reviewer = await runtime_of(ws).plans.plan("reviewer", session_key="probe", depth=1)
            bear = await runtime_of(ws).plans.plan("bear", session_key="probe", depth=1)
            return reviewer.system_prompt, bear.system_prompt

    reviewer, bear = asyncio.run(prompts())
    assert "# Skill: house-style (preloaded)\n\nTabs, never spaces." in reviewer
    assert "Unrelated instructions." not in reviewer  # only the skills it names
    assert "Tabs, never spaces." not in bear and "<name>house-style</name>" in bear  # allowlist only

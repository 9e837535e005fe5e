"""Claude Code's agent `memory:` frontmatter: `project`, `local` and `user` memory folders (created when the agent is
planned, where Claude Code's docs put them), and the first 200 lines of the folder's MEMORY.md in the agent's prompt,
so what the agent wrote down in one session opens the next."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.plugins.manager import PluginHost


def _claude_agent(name: str, memory: str) -> str:
    return f"---\nname: {name}\ndescription: Remembers.\ntools: Read, Write\nmemory: {memory}\n---\nYou review code.\n"


def test_memory_folders_are_created_and_memory_md_opens_the_prompt(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary"), "plain": agent_md("Plain.", mode="subagent")}
    root = scripted_workspace(tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents=agents, config=CONFIG)
    write(root, ".claude/agents/reviewer.md", _claude_agent("reviewer", "project"))
    write(root, ".claude/agents/scratch.md", _claude_agent("scratch", "local"))
    write(root, ".claude/agents/mentor.md", _claude_agent("mentor", "user"))
    home = tmp_path / "home"
    lines = "".join(f"- lesson {i}\n" for i in range(1, 251))
    write(root, ".claude/agent-memory/reviewer/MEMORY.md", "# Reviewer notes\n" + lines)
    assert not [d for d in load(root, home).diagnostics(include_tools=False) if "memory" in d.message]

    async def prompts() -> dict[str, str]:
        async with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
            plans = runtime_of(ws).plans
            names = ("reviewer", "scratch", "mentor", "plain")
            return {n: (await plans.plan(n, session_key="probe", depth=1)).system_prompt for n in names}

    got = asyncio.run(prompts())
    reviewer = got["reviewer"]
    assert (
        f"# Agent memory (project)\n\nYou have a persistent memory folder: {root / '.claude/agent-memory/reviewer'}"
        in reviewer
    )
    assert "# Reviewer notes\n- lesson 1\n" in reviewer and reviewer.endswith("- lesson 199")
    assert "- lesson 200" not in reviewer  # the first 200 lines only
    assert (root / ".claude" / "agent-memory-local" / "scratch").is_dir()
    assert "Its MEMORY.md is empty or missing." in got["scratch"]
    assert (home / ".claude" / "agent-memory" / "mentor").is_dir()
    assert str(home / ".claude" / "agent-memory" / "mentor") in got["mentor"]
    assert "Agent memory" not in got["plain"]

    # what the agent wrote down in one session opens its prompt in the next
    write(root, ".claude/agent-memory-local/scratch/MEMORY.md", "Always run the linter first.\n")
    assert "Its MEMORY.md begins:\n\nAlways run the linter first." in asyncio.run(prompts())["scratch"]

"""Workspaces for end-to-end runtime tests: a scripted model, agents and a script, all real files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bearagent.api import Workspace, open_workspace
from bearagent.plugins.manager import PluginHost
from tests.support.config_ws import isolated_env, write

CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
"""


def scripted_workspace(root: Path, script: str, *, agents: dict[str, str] | None = None, config: str = CONFIG) -> Path:
    write(root, ".bearagent/config.yaml", config)
    write(root, ".bearagent/script.yaml", script)
    for name, text in (agents or {}).items():
        write(root, f".bearagent/agents/{name}.md", text)
    return root


def agent_md(description: str, body: str = "You are a test agent.", **fields: str) -> str:
    head = "\n".join(f"{k}: {v}" for k, v in fields.items())
    return f"---\ndescription: {description}\n{head}\n---\n{textwrap.dedent(body).strip()}\n"


SCOUT_AGENTS = {
    "main": agent_md("Main agent.", mode="primary", tools="[Read, Task]", subagents="[scout]"),
    "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
}
"""A primary agent that may delegate to the subagent `scout`, which may Read."""
SCOUT_SCRIPT = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "read the notes", description: look}}]
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "scout: the notes say hello"
  - text: "All done."
"""
"""The main agent asks the scout, the scout reads notes.md and answers, the main agent ends."""


def scout_workspace(root: Path) -> Path:
    """A workspace where SCOUT_SCRIPT plays over SCOUT_AGENTS, with notes.md to read."""
    scripted_workspace(root, SCOUT_SCRIPT, agents=SCOUT_AGENTS)
    write(root, "notes.md", "hello notes\n")
    return root


def open_ws(root: Path, home: Path) -> Workspace:
    return open_workspace(root, env=isolated_env(home), plugins=PluginHost())

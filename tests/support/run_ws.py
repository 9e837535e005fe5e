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


def open_ws(root: Path, home: Path) -> Workspace:
    return open_workspace(root, env=isolated_env(home), plugins=PluginHost())

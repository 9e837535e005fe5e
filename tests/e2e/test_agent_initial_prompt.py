"""Claude Code's agent `initialPrompt`: the first prompt of a session the agent starts as the main agent carries it
first (`bearagent run -a NAME`, the session, the APIs); later prompts of the same session do not."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.cli import main
from bearagent.domain._base import thaw_json_mapping

AGENT = """---
name: onboarder
description: Onboards people.
mode: primary
initialPrompt: Read README.md first, then answer.
---
You onboard people.
"""


def test_the_initial_prompt_leads_the_first_prompt_of_a_session_only(tmp_path: Path) -> None:
    script = 'turns:\n  - text: "One."\n  - text: "Two."\n'
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary")}, config=CONFIG
    )
    write(root, ".claude/agents/onboarder.md", AGENT)
    home = tmp_path / "home"
    env = isolated_env(home)
    first = CliRunner().invoke(main, ["run", "-w", str(root), "-a", "onboarder", "--json", "what is this?"], env=env)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, ["run", "-w", str(root), "--continue", "--json", "and then?"], env=env)
    assert again.exit_code == 0, again.output
    with open_ws(root, home) as ws:
        goals: list[str] = []
        for run in sorted(ws.runs(), key=lambda r: r.created_at):
            created = next(e for e in ws.events(str(run.run_id)) if e.event_type == "RunCreated")
            goals.append(str(thaw_json_mapping(created.payload)["goal"]))
        agents = {a.name: a for a in runtime_of(ws).loaded.agents.all()}
    assert goals == ["Read README.md first, then answer.\n\nwhat is this?", "and then?"]
    assert agents["onboarder"].initial_prompt == "Read README.md first, then answer."
    assert json.loads(first.output)["agent"] == "onboarder"

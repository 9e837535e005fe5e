"""A continued session runs with the agent its own sealed record names, not the one a session row says (issue 28,
item 2: shipped logs are input, not authority).

A session row (`sessions.active_agent_name`) is not sealed: a cloned repository's `.bearagent/state.db`, or anyone
who can write the store, can name a more capable agent there (more tools, another permission mode, another model).
`bearagent run -c` (and `--session ID`) without `--agent` takes the agent from the newest run of the session whose
`RunCreated` carries this user's seal, else the configured default agent; the row is never the authority.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.service.run_types import RunOptions

SCRIPT = """
turns:
  - text: "One."
  - text: "Two."
  - text: "Three."
"""
AGENTS = {
    "main": agent_md("Main.", mode="primary", tools="[Read]"),
    "power": agent_md("More capable.", mode="primary", tools="[Read, Write, Bash]"),
}


def _run(root: Path, home: Path, options: RunOptions) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        async with open_ws(root, home) as ws:
            result = await runtime_of(ws).run("go on", options)
            assert result.session_id is not None
            return result.agent, str(result.session_id)

    return asyncio.run(go())


def _plant_agent(root: Path, session_id: str, agent: str) -> None:
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        changed = conn.execute(
            "UPDATE sessions SET active_agent_name = ?, agent_name = ? WHERE session_id = ?", (agent, agent, session_id)
        )
        assert changed.rowcount == 1


def test_a_session_row_naming_another_agent_is_not_obeyed(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    home = tmp_path / "alice"
    agent, session = _run(ws, home, RunOptions())
    assert agent == "main"
    _plant_agent(ws, session, "power")
    agent, continued = _run(ws, home, RunOptions(session="continue"))
    assert continued == session
    assert agent == "main", "the row's agent was obeyed"
    agent, _ = _run(ws, home, RunOptions(session=session))
    assert agent == "main"


def test_a_session_planted_with_another_users_key_runs_the_default_agent(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    _, session = _run(ws, tmp_path / "mallory", RunOptions(agent="power"))  # the attacker's machine and key
    agent, continued = _run(ws, tmp_path / "alice", RunOptions(session=session))
    assert continued == session
    assert agent == "main", "a session recorded with another key chose the agent"


def test_the_users_own_agent_choice_carries_on(tmp_path: Path) -> None:
    ws = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    home = tmp_path / "alice"
    agent, session = _run(ws, home, RunOptions(agent="power"))
    assert agent == "power"
    agent, continued = _run(ws, home, RunOptions(session="continue"))
    assert (agent, continued) == ("power", session), "a session the user started with an agent keeps it"

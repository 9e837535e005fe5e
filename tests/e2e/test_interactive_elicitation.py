"""An MCP server's question answered by the person at the interactive session (a real pseudo-terminal, a real stdio
MCP server that elicits: tests/support/mcp_servers/asker.py) when no Elicitation hook answers: the form's fields
are asked one by one, a bad value is asked again, the server gets the typed answer; a "no" declines."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pexpect
from tests.support.config_ws import write
from tests.support.mcp_helpers import server_in_workspace
from tests.support.pty_session import interactive_session, session_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

SCRIPT = """
turns:
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: staging}}]
  - text: "Deployed staging."
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: prod}}]
  - text: "Prod was declined."
"""


def test_a_person_answers_a_servers_question_in_the_terminal(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary", tools="[]", mcp="[asker]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents, config=CONFIG)
    write(
        root,
        ".mcp.json",
        json.dumps(
            {"mcpServers": {"asker": {"command": sys.executable, "args": [str(server_in_workspace(root, "asker.py"))]}}}
        ),
    )
    home = tmp_path / "home"
    env = session_env(home / "bearagent", HOME=str(home))
    # trusted: its .mcp.json server is on the trust surface
    with interactive_session(root, env, timeout=60, trust=True) as child:
        child.sendline("deploy staging")
        child.expect("MCP server asker asks: Really deploy to staging\\?")
        child.expect("answer it\\? \\[y\\]es")
        child.sendline("y")
        child.expect("proceed \\(y/n\\): ")
        child.sendline("maybe")
        child.expect("expected y or n")
        child.sendline("y")
        child.expect("reason \\(string, optional\\): ")
        child.sendline("tests are green")
        child.expect("Deployed staging.")
        child.expect("main>")
        child.sendline("deploy prod")
        child.expect("Really deploy to prod\\?")
        child.expect("answer it\\? ")
        child.sendline("n")
        child.expect("Prod was declined.")
        child.expect("main>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    # the tool results as the log keeps them (the state database exists now: read-only)
    with sqlite3.connect(f"file:{root / '.bearagent' / 'state.db'}?mode=ro", uri=True) as db:
        rows = [
            str(r[0])
            for r in db.execute("SELECT payload FROM events WHERE event_type = 'ToolCallCompleted' ORDER BY seq_no")
        ]
    assert len(rows) == 2
    assert "deploy staging: accept proceed=True reason=tests are green" in rows[0]
    assert "deploy prod: decline" in rows[1] and "BearAgent declined" not in rows[1]  # a person said no: no note

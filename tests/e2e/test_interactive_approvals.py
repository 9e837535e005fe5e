"""Approvals in the interactive session (a real pseudo-terminal): asked in the terminal and recorded as facts, and
"always" remembered on the session record so the next prompt of the session is not asked again."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pexpect
from tests.support.pty_session import interactive_session, session_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "one\\n"}}]
  - text: "Written once."
  - text: "Writing again."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "two\\n"}}]
  - text: "Written twice."
"""


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A workspace whose Write asks (permission mode default), and the environment of a session on it."""
    root = scripted_workspace(
        tmp_path / "ws",
        SCRIPT,
        agents={"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")},
        config=CONFIG + "permission_mode: default\n",
    )
    home = tmp_path / "home"
    return root, session_env(home / "bearagent", HOME=str(home))


def test_always_in_the_terminal_is_a_fact_and_lives_on_the_session(tmp_path: Path) -> None:
    root, env = _workspace(tmp_path)
    with interactive_session(root, env) as child:
        child.sendline("write it")
        child.expect("needs approval")
        child.expect(r"\[a\]lways this session")
        child.sendline("a")
        child.expect("Written once.")
        child.expect("main>")
        child.sendline("write it again")
        index = child.expect(["needs approval", "Written twice."])
        assert index == 1, "an 'always' answer of the session is not asked again"
        child.expect("main>")
        child.sendline("/permissions")
        child.expect(r"allowed this session: Edit\(/out.txt\)")
        child.expect("main>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    assert (root / "out.txt").read_text() == "two\n"
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        rows = conn.execute("SELECT event_type, payload FROM events ORDER BY seq_no").fetchall()
        (rules,) = conn.execute("SELECT allowed_rules FROM sessions").fetchone()
    (entry,) = json.loads(rules)
    assert entry.endswith(" Edit(/out.txt)"), "stored sealed: `<seal> <rule>`"
    facts = [(t, json.loads(p)) for t, p in rows]
    asked = [p for t, p in facts if t == "ApprovalRequested"]
    answered = [p for t, p in facts if t == "ApprovalResolved"]
    assert len(asked) == 1 and asked[0]["attached"] is True and asked[0]["tool_name"] == "Write"
    assert len(answered) == 1 and answered[0]["decision"] == "allow_always"
    assert answered[0]["approval_id"] == asked[0]["approval_id"]
    resumed = [p for t, p in facts if t == "RunResumed"]
    assert [p["reason"] for p in resumed] == ["approval"]


def test_an_answer_from_another_terminal_wins_over_a_later_one_here(tmp_path: Path) -> None:
    import subprocess

    root, env = _workspace(tmp_path)
    with interactive_session(root, env) as child:
        child.sendline("write it")
        child.expect(r"\[a\]lways this session")
        listed = subprocess.run(
            [sys.executable, "-m", "bearagent", "approvals", "list", "-w", str(root), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        (row,) = json.loads(listed.stdout)
        other = subprocess.run(
            [sys.executable, "-m", "bearagent", "approvals", "answer", row["run_id"], row["approval_id"], "allow"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=root,
        )
        assert other.returncode == 0, other.stderr
        assert "still attached" in other.stderr
        child.sendline("n")  # too late: the answer from the other terminal is the one on record
        child.expect("answered by cli:")
        child.expect("Written once.")
        child.expect("main>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    assert (root / "out.txt").read_text() == "one\n"

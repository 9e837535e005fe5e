"""`/diff` in the interactive session, in a real pseudo-terminal: the last prompt's file changes (a Write and a Bash
`sed -i`) drawn as diffs, an earlier prompt's by its number, a prompt that changed nothing said so, a bad number
named with the range."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pexpect
import pytest
from tests.support.pty_session import interactive_session, session_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace


def _call(name: str, arguments: dict[str, str]) -> str:
    return f"  - tool_calls: [{json.dumps({'name': name, 'arguments': arguments})}]\n"


SCRIPT = (
    "turns:\n"
    + "  - text: nothing to change\n"
    + _call("Write", {"file_path": "notes.txt", "content": "alpha\nbeta\n"})
    + _call("Bash", {"command": "sed -i s/beta/gamma/ notes.txt"})
    + "  - text: edited\n"
)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="a Bash call's changes are captured in the sandbox")
def test_diff_shows_a_prompts_changes_bash_included(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws",
        SCRIPT,
        agents={"main": agent_md("Main.", mode="primary", tools="[Write, Bash]")},
        config=CONFIG + "permissions:\n  allow: [Write, Bash]\n",
    )
    with interactive_session(root, session_env(tmp_path / "home"), timeout=60, trust=True) as child:
        child.sendline("/diff")
        child.expect("the session has no prompts yet")
        child.sendline("look around")
        child.expect("nothing to change")
        child.expect("main>")
        child.sendline("write the notes")
        child.expect("edited")
        child.expect("main>")
        child.sendline("/diff")
        child.expect("prompt 2 \\(write the notes\\)")
        child.expect("created notes.txt")
        child.expect("\\+alpha")
        child.expect("modified notes.txt")
        child.expect("-beta")
        child.expect("\\+gamma")
        child.expect("main>")
        child.sendline("/diff 1")
        child.expect("prompt 1 \\(look around\\) changed no files")
        child.expect("main>")
        child.sendline("/diff 7")
        child.expect("/diff takes a prompt number from 1 to 2")
        child.expect("main>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    assert (root / "notes.txt").read_text() == "alpha\ngamma\n"

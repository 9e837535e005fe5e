"""`/rewind` in the interactive session, in a real pseudo-terminal: the prompts are listed by number, the user picks
one (and one of its tool calls, or the whole prompt) and what to put back, sees what would change and confirms; the files go back, the conversation's rewind is a
fact in the log, and the next prompt goes on from before the picked one."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
from tests.support.pty_session import interactive_session, session_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.runtime.session_history import Timeline
from bearagent.store.sqlite import SqliteEventStore


def _write(text: str, path: str = "notes.txt") -> str:
    call = {"name": "Write", "arguments": {"file_path": path, "content": text}}
    return f"  - tool_calls: [{json.dumps(call)}]\n"


SCRIPT = (
    "turns:\n"
    + _write("version one\n")
    + "  - text: wrote version one\n"
    + _write("version two\n")
    + _write("extra\n", "extra.txt")
    + "  - text: wrote version two\n"
    + "  - text: going on from before the second call\n"
    + "  - text: going on from before prompt two\n"
)


def test_rewind_in_the_session_puts_files_and_conversation_back(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws",
        SCRIPT,
        agents={"main": agent_md("Main.", mode="primary", tools="[Read, Write]")},
        config=CONFIG + "permissions:\n  allow: [Write]\n",
    )
    notes = root / "notes.txt"
    # trusted: it allows Write without asking
    with interactive_session(root, session_env(tmp_path / "home"), trust=True) as child:
        child.sendline("/rewind")
        child.expect("nothing to rewind: the session has no prompts yet")
        child.expect("main>")
        child.sendline("PROMPT-ONE write the first version")
        child.expect("wrote version one")
        child.expect("main>")
        child.sendline("PROMPT-TWO write the second version")
        child.expect("wrote version two")
        child.expect("main>")
        assert notes.read_text() == "version two\n" and (root / "extra.txt").read_text() == "extra\n"

        child.sendline("/rewind")
        child.expect("rewind to before which prompt")
        child.expect("1. PROMPT-ONE write the first version")
        child.expect("2. PROMPT-TWO write the second version")
        child.expect("prompt number")
        child.sendline("9")
        child.expect("no prompt 9: type a number from 1 to 2")
        child.expect("main>")
        assert notes.read_text() == "version two\n"

        # before one tool call of prompt two: the second Write (extra.txt) is undone, the first one kept
        child.sendline("/rewind")
        child.expect("prompt number")
        child.sendline("2")
        child.expect("before which tool call of prompt 2")
        child.expect("1. Write notes.txt")
        child.expect("2. Write extra.txt")
        child.expect("tool call number")
        child.sendline("3")
        child.expect("no tool call 3: type a number from 1 to 2")
        child.expect("main>")
        child.sendline("/rewind")
        child.expect("prompt number")
        child.sendline("2")
        child.expect("tool call number")
        child.sendline("2")
        child.expect("restore")
        child.sendline("")  # both
        child.expect("will delete extra.txt")
        child.expect("will rewind the conversation to before tool call 2 of prompt 2")
        child.expect("rewind\\? \\[y/N\\]")
        child.sendline("y")
        child.expect("rewound: 1 file\\(s\\) put back; the conversation goes on from before tool call 2 of prompt 2")
        child.expect("main>")
        assert notes.read_text() == "version two\n" and not (root / "extra.txt").exists()

        child.sendline("go on")
        child.expect("going on from before the second call")
        child.expect("main>")

        # before the whole prompt two (Enter at the tool call question)
        child.sendline("/rewind")
        child.expect("prompt number")
        child.sendline("2")
        child.expect("tool call number")
        child.sendline("")
        child.expect("restore")
        child.sendline("")  # both
        child.expect("will restore notes.txt")
        child.expect("will rewind the conversation to before prompt 2")
        child.expect("rewind\\? \\[y/N\\]")
        child.sendline("y")
        child.expect("rewound: 1 file\\(s\\) put back; the conversation goes on from before prompt 2")
        child.expect("main>")
        assert notes.read_text() == "version one\n"

        child.sendline("and now?")
        child.expect("going on from before prompt two")
        child.expect("main>")
        child.sendline("/help")
        child.expect("/rewind")
        child.sendline("/exit")
        child.expect(pexpect.EOF)

    store = SqliteEventStore(root / ".bearagent" / "state.db")
    try:
        runs = sorted(store.list_runs(limit=10), key=lambda r: r.created_at)
        assert [r.goal for r in runs] == [
            "PROMPT-ONE write the first version",
            "PROMPT-TWO write the second version",
            "go on",
            "and now?",
        ]
        second = list(store.read_events(runs[1].run_id))
        assert [e.event_type for e in second][-3:] == ["FilesRewound", "ConversationRewound", "FilesRewound"]
        to_call = next(e for e in second if e.event_type == "ConversationRewound").payload["to_tool_call_id"]
        assert to_call == [e for e in second if e.event_type == "ToolCallRequested"][1].payload["tool_call_id"]
        timeline = Timeline([(r.run_id, store.read_events(r.run_id)) for r in runs])
        go_on = " ".join(m.text for m in timeline.before(runs[2].run_id) or [])
        assert "PROMPT-TWO" in go_on and "wrote version two" not in go_on  # cut before its second call
        # what the fourth prompt was given: the first exchange only, then its own
        third_prior = timeline.before(runs[3].run_id)
        assert third_prior is not None
        texts = [m.text for m in third_prior]
        assert texts[0] == "PROMPT-ONE write the first version" and "PROMPT-TWO" not in " ".join(texts)
        assert texts[-1] == "wrote version one"
    finally:
        store.close()

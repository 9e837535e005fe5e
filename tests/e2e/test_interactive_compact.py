"""`/compact [focus]` in the interactive session, in a real pseudo-terminal: the session's earlier turns become a
summary now (a run of its own, written by the scripted summary model), the focus reaches the summariser, and the
next prompt goes on from the compacted history."""

from __future__ import annotations

from pathlib import Path

import pexpect
from tests.support.config_ws import write
from tests.support.pty_session import interactive_session, session_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.domain.run_events import ContextCompactedV1, parse_run_event_payload
from bearagent.runtime.compaction import is_summary
from bearagent.runtime.history import history_from_events
from bearagent.store.sqlite import SqliteEventStore

CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
  summariser: {provider: scripted, script: summary.yaml}
compaction: {model: summariser, keep_recent_turns: 1}
"""
SCRIPT = """
turns:
  - text: "Noted the code."
  - text: "Noted the weather."
  - text: "The code is 7-4-1-9."
"""
SUMMARY = 'turns: [{text: "Summary: the user gave the launch code 7-4-1-9, then talked about the weather."}]\n'


def test_compact_in_the_session_compacts_now_and_the_next_prompt_goes_on_from_the_summary(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[]")}, config=CONFIG
    )
    write(root, ".bearagent/summary.yaml", SUMMARY)
    with interactive_session(root, session_env(tmp_path / "home")) as child:
        child.sendline("/compact")
        child.expect("nothing to compact: the session has no runs yet")
        child.expect("main>")
        child.sendline("FIRST-TURN: the launch code is 7-4-1-9")
        child.expect("Noted the code.")
        child.expect("main>")
        child.sendline("it rains today")
        child.expect("Noted the weather.")
        child.expect("main>")
        child.sendline("/compact the launch code")
        child.expect("compacted 3 earlier messages into a summary")
        child.expect("main>")
        child.sendline("what is the code?")
        child.expect("The code is 7-4-1-9.")
        child.expect("main>")
        child.sendline("/help")
        child.expect("/compact \\[FOCUS\\]")
        child.sendline("/exit")
        child.expect(pexpect.EOF)

    store = SqliteEventStore(root / ".bearagent" / "state.db")
    try:
        runs = list(reversed(store.list_runs(limit=10)))
        assert [r.status for r in runs] == ["succeeded"] * 4
        assert len({r.session_id for r in runs}) == 1
        logs = [store.read_events(r.run_id) for r in runs]
    finally:
        store.close()
    compaction_run = logs[2]
    assert compaction_run[0].payload["trigger_ref"] == "compact" and compaction_run[0].payload["goal"] == ""
    (compacted,) = [
        p
        for e in compaction_run
        if isinstance(p := parse_run_event_payload(e.event_type, e.schema_version, e.payload), ContextCompactedV1)
    ]
    assert compacted.trigger == "manual" and compacted.focus == "the launch code"
    assert compacted.model_ref == "workspace/summariser"
    history = history_from_events(logs)
    assert is_summary(history[0]) and "7-4-1-9" in history[0].text
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert not any("FIRST-TURN" in m.text for m in history)

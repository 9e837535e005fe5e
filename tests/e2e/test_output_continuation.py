"""An answer cut by the output limit is continued (`model_turns.max_output_continuations`) instead of failing the
run; the continuation is a fact, so the history rebuilt from the log is what the model was sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.runtime.continuation import join_continuation
from bearagent.runtime.history import history_from_events

CUT = "{category: max_output_tokens, message: 'the answer reached max_output_tokens'}"
SCRIPT = f"""
turns:
  - text: "The first half of the answer, "
    error: {CUT}
  - text: "the second half, "
    error: {CUT}
  - text: "and the end."
"""
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}


def test_a_cut_answer_is_continued_to_the_whole_answer(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=AGENTS)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("answer")
        assert result.status == "succeeded", result.error
        assert result.final == "The first half of the answer, the second half, and the end."
        assert result.usage.model_iterations == 3
        events = ws.events(str(result.run_id))
    completed = [e.payload["stop_reason"] for e in events if e.event_type == "ModelCallCompleted"]
    assert completed == ["max_output_tokens", "max_output_tokens", "end_turn"]
    injected = [e.payload["kind"] for e in events if e.event_type == "MessageInjected"]
    assert injected == ["continuation", "continuation"]
    history = history_from_events([events])
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_with_continuations_off_the_cut_fails_the_run_keeping_the_partial_text(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents=AGENTS, config=CONFIG + "model_turns: {max_output_continuations: 0}\n"
    )
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("answer")
        assert result.status == "failed" and result.error is not None
        assert result.error.category == "max_output_tokens"
        events = ws.events(str(result.run_id))
    failed = [e.payload for e in events if e.event_type == "RunFailed"]
    assert failed[0]["partial_text"] == "The first half of the answer, "


def test_a_bad_continuation_count_is_a_diagnostic_naming_the_key(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents=AGENTS, config=CONFIG + "model_turns: {max_output_continuations: 99}\n"
    )
    with open_ws(root, tmp_path / "home") as ws:
        problems = [d for d in runtime_of(ws).loaded.diagnostics() if d.field == "model_turns.max_output_continuations"]
    assert problems and "between 0 and 20, got 99" in problems[0].message


RESTARTED = f"""
turns:
  - text: "The children walked to school"
    error: {CUT}
  - text: "Once upon a time they walked back. And then"
    error: {CUT}
  - text: "walked back. And then they went home."
"""


def test_continued_parts_are_joined_cleanly_through_bearagent_run(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", RESTARTED, agents=AGENTS)
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", "run", "--json", "tell a story"],
        cwd=root,
        env={**isolated_env(tmp_path / "home"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout)["final"]
    # a new sentence after a cut word gets a space; a repeated tail ("walked back. And then") is kept once
    assert final == "The children walked to school Once upon a time they walked back. And then they went home."


def test_the_seam_rules() -> None:
    assert join_continuation("scho", "ol is out") == "school is out"  # a word continued: as it is
    assert join_continuation("the end", ". Next") == "the end. Next"
    assert join_continuation("It ended.", "Then") == "It ended. Then"
    assert join_continuation("a list:\n", "- b") == "a list:\n- b"
    assert join_continuation("```python\nclass Get", "User: ...") == "```python\nclass GetUser: ..."
    assert join_continuation("```python\nuserName = get", "Name()") == "```python\nuserName = getName()"  # code
    assert join_continuation("one two three four five", "three four five six") == "one two three four five six"
    assert join_continuation("short tail", "tail again") == "short tailtail again"  # under 12: not an overlap

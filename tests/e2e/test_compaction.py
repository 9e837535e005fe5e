"""Compaction of a long session (issue 21): a scripted session with a small `context_window` compacts twice and still
answers from what the first turn said; the summary model is scripted too. Each compaction is a fact of the log
(`ModelCallRequested` v3 with purpose `compaction`, closed by `ContextCompacted`), so the history rebuilt from the
log is the compacted one, and the requests the model is sent after it hold the summary, not the old turns."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.api import Workspace, runtime_of
from bearagent.cli import main
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.models import ModelRequest
from bearagent.domain.run_events import (
    ContextCompactedV1,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    ModelCallRequestedV3,
    ModelCallRequestedV4,
    RunEventPayload,
    parse_run_event_payload,
)
from bearagent.providers.scripted import ScriptedProvider
from bearagent.runtime.compaction import SUMMARY_OPENING, is_summary
from bearagent.runtime.context_size import raw_estimate
from bearagent.runtime.history import history_from_events
from bearagent.runtime.log_check import read_log
from bearagent.service.compacting import compact_session
from bearagent.service.replay import RunReplay

FACT = "The launch code is 7-4-1-9."
FIRST_MARKER = "FIRST-TURN-ONLY"
PADDING = "The weather report goes on about clouds and wind and rain. " * 70  # ~4,100 chars, ~1,200 tokens raw
SUMMARY_1 = f"Summary one: the user said {FACT} They sent two long weather reports."
SUMMARY_2 = f"Summary two: the user's launch code is 7-4-1-9 ({SUMMARY_1[:12]}...); more weather reports followed."
CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml, context_window: 6000}
  summariser: {provider: scripted, script: summary.yaml}
compaction: {model: summariser, keep_recent_turns: 1, threshold: 0.5}
"""
SCRIPT = """
turns:
  - text: "Noted."
  - text: "Noted, more weather."
  - text: "Noted, still weather."
  - text: "Noted, weather again."
  - text: "The launch code is 7-4-1-9."
"""
SUMMARIES = f"""
turns:
  - text: "{SUMMARY_1}"
  - text: "{SUMMARY_2}"
"""
P = TypeVar("P", bound=RunEventPayload)
AGENTS = {"main": agent_md("Main.", mode="primary", tools="[]")}


def _provider(ws: Workspace, name: str, session: str) -> ScriptedProvider:
    loaded = runtime_of(ws).loaded
    entry = loaded.models.for_use(loaded.models.resolve(name), loaded.env)
    provider = runtime_of(ws).resources.provider(entry, session)
    assert isinstance(provider, ScriptedProvider)
    return provider


def _facts(events: Sequence[Event], kind: type[P]) -> list[P]:
    """The payloads of `events` of one type, typed."""
    out: list[P] = []
    for event in events:
        payload = parse_run_event_payload(event.event_type, event.schema_version, event.payload)
        if isinstance(payload, kind):
            out.append(payload)
    return out


def _text(request: ModelRequest) -> str:
    return "\n".join(m.text for m in request.messages if m.role != "tool")


def _workspace(tmp_path: Path, config: str = CONFIG, script: str = SCRIPT) -> Path:
    root = scripted_workspace(tmp_path / "ws", script, agents=AGENTS, config=config)
    write(root, ".bearagent/summary.yaml", SUMMARIES)
    return root


def test_a_long_session_compacts_twice_and_still_answers_from_the_first_turn(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    prompts = [
        f"{FIRST_MARKER}: remember this. {FACT}\n{PADDING}",
        f"Second report.\n{PADDING}",
        f"Third report.\n{PADDING}",
        f"Fourth report.\n{PADDING}",
        f"Fifth report.\n{PADDING}\nWhat is the launch code?",
    ]
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(prompts[0])
        assert first.status == "succeeded", first.error
        session = str(first.session_id)
        results = [first] + [ws.run_sync(p, session=session) for p in prompts[1:]]
        assert [r.status for r in results] == ["succeeded"] * 5, [r.error for r in results]
        assert results[-1].final == "The launch code is 7-4-1-9."
        main = _provider(ws, "scripted", session)
        summariser = _provider(ws, "summariser", session)
        logs = [ws.events(str(r.run_id)) for r in results]

    compactions = [(i, c) for i, log in enumerate(logs) for c in _facts(log, ContextCompactedV1)]
    assert [i for i, _ in compactions] == [2, 4]  # the third and the fifth prompt crossed 0.5 × 6,000 tokens
    assert [c.summary for _, c in compactions] == [SUMMARY_1, SUMMARY_2]
    assert all(c.trigger == "threshold" and c.model_ref == "workspace/summariser" for _, c in compactions)
    assert all(c.tokens_after < c.tokens_before for _, c in compactions)
    # the first compaction replaced prompts 1-2 and their answers; the second, the first summary and prompt 3-4's
    assert [c.replaced_messages for _, c in compactions] == [4, 5]

    # the summary calls are activities of the runs: a model iteration each, their tokens counted
    requested = _facts(logs[2], ModelCallRequestedV3)
    assert [r.purpose for r in requested] == ["compaction", "turn"]
    assert requested[0].model_ref == "workspace/summariser"
    # v4: each call names its model entry's provider (the summariser's from the compaction plan, the turn's)
    assert all(isinstance(r, ModelCallRequestedV4) and r.provider == "scripted" for r in requested)
    assert requested[1].context_window == 6000 and requested[1].context_window_source == "config"
    assert requested[1].estimated_input_tokens > 0 and requested[1].estimator
    assert results[2].usage.model_iterations == 2
    spent = [c.usage.input_tokens for c in _facts(logs[2], ContextCompactedV1)]
    spent += [c.usage.input_tokens for c in _facts(logs[2], ModelCallCompletedV2)]
    assert len(spent) == 2 and results[2].usage.input_tokens == sum(spent)

    # what the summariser read: the second time, the first summary (the chain goes on), never tool structures
    assert len(summariser.requests) == 2
    assert FIRST_MARKER in _text(summariser.requests[0]) and FACT in _text(summariser.requests[0])
    assert SUMMARY_1 in _text(summariser.requests[1]) and FIRST_MARKER not in _text(summariser.requests[1])
    assert not summariser.requests[0].tools

    # what the model was sent: after the first compaction the summary, not the first turns; after the second, the
    # second summary only, and the question is answered from it
    after_first, after_second = main.requests[2], main.requests[4]
    assert SUMMARY_1 in _text(after_first) and FIRST_MARKER not in _text(after_first)
    assert "Second report." not in _text(after_first) and "Third report." in _text(after_first)
    assert SUMMARY_2 in _text(after_second) and "7-4-1-9" in _text(after_second)
    assert SUMMARY_1 not in _text(after_second) and FIRST_MARKER not in _text(after_second)
    assert [m.role for m in after_second.messages] == ["system", "user", "user"]
    assert is_summary(after_second.messages[1]) and after_second.messages[1].text.startswith(SUMMARY_OPENING)

    # the session's history rebuilt from the log is the compacted one; the full events stay in the log
    history = history_from_events(logs)
    assert [m.role for m in history] == ["user", "user", "assistant"]
    assert SUMMARY_2 in history[0].text and history[2].text == "The launch code is 7-4-1-9."
    assert any(FIRST_MARKER in str(e.payload.get("goal", "")) for e in logs[0])


def test_a_budget_stops_a_compaction_before_its_call_is_made(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(f"One.\n{PADDING}")
        session = str(first.session_id)
        ws.run_sync(f"Two.\n{PADDING}", session=session)
        stopped = ws.run_sync(f"Three.\n{PADDING}", session=session, budgets={"max_model_iterations": 0})
        events = ws.events(str(stopped.run_id))
        summariser = _provider(ws, "summariser", session)
    assert stopped.status == "failed" and stopped.error is not None
    assert stopped.error.code == "budget.max_model_iterations"
    assert not [e for e in events if e.event_type in ("ModelCallRequested", "ContextCompacted")]
    assert not summariser.requests  # the summary model was never called


def test_a_resumed_run_goes_on_from_the_compacted_history(tmp_path: Path) -> None:
    """A run interrupted after its compaction (here: waiting for an approval) is resumed from its log: the cursor's
    conversation is the compacted one, and so is the request the model gets after the resume."""
    config = CONFIG.replace("default_model: scripted", "default_model: scripted\npermissions: {ask: [Write]}")
    script = """
turns:
  - text: "Noted."
  - text: "Noted, more weather."
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "7-4-1-9"}}]
  - text: "Wrote the launch code."
"""
    root = _workspace(tmp_path, config=config, script=script)
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Write]"))
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(f"{FIRST_MARKER}. {FACT}\n{PADDING}")
        session = str(first.session_id)
        ws.run_sync(f"Two.\n{PADDING}", session=session)

        waiting = asyncio.run(ws.run(f"Three: write the code.\n{PADDING}", session=session, wait_approvals=True))
        assert waiting.status == "waiting", waiting.error
        run_id = str(waiting.run_id)
        approval = next(e for e in ws.events(run_id) if e.event_type == "ApprovalRequested")
        answered = asyncio.run(ws.answer_approval(run_id, str(approval.payload["approval_id"]), "allow_once"))
        assert answered is not None
        assert answered.status == "succeeded", answered.error
        main = _provider(ws, "scripted", session)
        events = ws.events(run_id)
    assert [e.event_type for e in events].count("ContextCompacted") == 1
    resumed_request = main.requests[-1]
    assert SUMMARY_1 in _text(resumed_request) and FIRST_MARKER not in _text(resumed_request)
    assert (root / "out.txt").read_text() == "7-4-1-9"


def test_compact_compacts_the_session_now_with_the_focus_given_to_the_summariser(tmp_path: Path) -> None:
    config = CONFIG.replace("threshold: 0.5", "threshold: 1.0")
    root = _workspace(tmp_path, config=config)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(f"{FIRST_MARKER}. {FACT}\n{PADDING}")
        session = str(first.session_id)
        ws.run_sync("Short second prompt.", session=session)

        result = asyncio.run(ws.compact(session, focus="the launch code"))
        assert result.status == "succeeded", result.error
        assert result.final.startswith("compacted 3 earlier messages into a summary")
        summariser = _provider(ws, "summariser", session)
        assert "Focus it on: the launch code" in _text(summariser.requests[0])
        after = ws.run_sync("And now?", session=session)
        main = _provider(ws, "scripted", session)
        events = ws.events(str(result.run_id))
    (compacted,) = _facts(events, ContextCompactedV1)
    assert compacted.trigger == "manual" and compacted.focus == "the launch code"
    assert after.status == "succeeded"
    last = _text(main.requests[-1])
    assert SUMMARY_1 in last and FIRST_MARKER not in last and "Short second prompt." not in last


def test_each_estimate_is_corrected_by_the_input_tokens_the_provider_reported_for_the_previous_call(
    tmp_path: Path,
) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
    usage: {input_tokens: 1000, output_tokens: 10}
  - text: "Read it."
"""
    root = _workspace(tmp_path, script=script)
    write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary", tools="[Read]"))
    write(root, "notes.md", "some notes\n" * 50)
    with open_ws(root, tmp_path / "home") as ws:
        result = ws.run_sync("read notes.md")
        assert result.status == "succeeded", result.error
        requests = list(_provider(ws, "scripted", str(result.session_id)).requests)
        requested = _facts(ws.events(str(result.run_id)), ModelCallRequestedV3)
    first, second = (raw_estimate(r.messages, r.tools) for r in requests)
    assert requested[0].estimated_input_tokens == first and "×" not in requested[0].estimator
    factor = 1000 / first
    assert requested[1].estimated_input_tokens == int(second * factor + 0.5)
    assert requested[1].estimator.endswith(f"×{factor:.2f}")


def test_compacting_a_session_with_nothing_to_compact_says_why_and_records_no_run(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync("Short.")
        session = str(first.session_id)
        ws.run_sync("Also short.", session=session)
        assert asyncio.run(compact_session(runtime_of(ws), session)).status == "succeeded"
        with pytest.raises(BearAgentError) as caught:
            asyncio.run(compact_session(runtime_of(ws), session))
        assert len(ws.runs()) == 3  # the two prompts and the one compaction: a refused one records nothing
    assert caught.value.info.code == "invalid_request.nothing_to_compact"
    assert caught.value.info.message == "nothing to compact: the session is already a summary and its most recent turn"
    assert caught.value.hint is not None and "once the conversation has grown" in caught.value.hint


def test_bearagent_run_continue_compacts_and_says_so(tmp_path: Path) -> None:

    root = _workspace(tmp_path)
    runner = CliRunner()
    env = isolated_env(tmp_path / "home")
    outputs: list[str] = []
    for i, prompt in enumerate((f"{FIRST_MARKER}. {FACT}\n{PADDING}", f"Two.\n{PADDING}", f"Three.\n{PADDING}")):
        args = ["run", "-w", str(root), *(["--continue"] if i else []), prompt]
        result = runner.invoke(main, args, env=env, prog_name="bearagent")
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert "compacting earlier turns" not in outputs[1]
    assert "compacting earlier turns" in outputs[2] and "compacted 4 earlier messages into a summary" in outputs[2]


def test_a_compacted_run_is_a_valid_log_and_replays_without_a_summary_call(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(f"{FIRST_MARKER}. {FACT}\n{PADDING}")
        session = str(first.session_id)
        ws.run_sync(f"Two.\n{PADDING}", session=session)
        third = ws.run_sync(f"Three.\n{PADDING}", session=session)
        events = list(ws.events(str(third.run_id)))
        replayed = asyncio.run(ws.replay(str(third.run_id)))
    check, steps = read_log(str(third.run_id), events)
    assert check.valid and check.problems == ()
    assert steps.compactions == 1 and len(steps.turns) == 1  # the summary call is not a turn
    assert steps.turns[0].text == "Noted, still weather." and steps.turns[0].failed_attempts == ()
    assert isinstance(replayed, RunReplay) and replayed.ok and replayed.mismatches == 0


def test_a_summary_model_that_answers_nothing_fails_the_run_and_says_what_to_change(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    write(root, ".bearagent/summary.yaml", 'turns: [{text: "   "}]\n')  # only blanks
    with open_ws(root, tmp_path / "home") as ws:
        first = ws.run_sync(f"One.\n{PADDING}")
        session = str(first.session_id)
        ws.run_sync(f"Two.\n{PADDING}", session=session)
        failed = ws.run_sync(f"Three.\n{PADDING}", session=session)
        events = ws.events(str(failed.run_id))
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "invalid_request.empty_summary"
    assert "workspace/summariser answered with no summary text" in failed.error.message
    assert "set `compaction.model` to a model that follows instructions" in failed.error.message
    assert not _facts(events, ContextCompactedV1)  # nothing was compacted: the history stays whole
    assert [f.error.code for f in _facts(events, ModelCallFailedV2)] == ["invalid_request.empty_summary"]


def test_a_compact_killed_during_its_summary_call_is_ended_by_resume_not_asked_again(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    write(root, ".bearagent/summary.yaml", 'turns: [{text: "Too late.", delay_ms: 30000}, {text: "Never asked."}]\n')
    home = tmp_path / "home"
    with open_ws(root, home) as ws:
        first = ws.run_sync(f"{FIRST_MARKER}. {FACT}")
        ws.run_sync("Two.", session=str(first.session_id))
    code = f"import asyncio\nfrom bearagent.api import open_workspace\nasyncio.run(open_workspace({str(root)!r}).compact('continue'))\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, **isolated_env(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        run_id = _wait_for_summary_call(root)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with open_ws(root, home) as ws:
        resumed = asyncio.run(ws.resume(run_id))
        events = ws.events(run_id)
        assert first.session_id is not None
        history = runtime_of(ws).sessions.session_history(first.session_id)
    assert resumed.status == "failed" and resumed.error is not None
    assert resumed.error.code == "cancelled.compaction_interrupted"
    assert "nothing was compacted; run /compact again" in resumed.error.message
    kinds = [e.event_type for e in events]
    assert kinds[-3:] == ["RunInterrupted", "RunResumed", "RunFailed"]
    assert kinds.count("ModelCallRequested") == 1 and "ContextCompacted" not in kinds  # not asked again
    assert FIRST_MARKER in history[0].text  # the history is whole


def _wait_for_summary_call(root: Path, timeout_s: float = 30.0) -> str:
    """The id of the /compact run once its summary call is stored (it is then waiting on the slow summariser)."""
    from bearagent.store.sqlite import SqliteEventStore

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        store = SqliteEventStore(root / ".bearagent" / "state.db")
        try:
            for run in store.list_runs(status="running", limit=5):
                if any(e.event_type == "ModelCallStarted" for e in store.read_events(run.run_id)):
                    return str(run.run_id)
        finally:
            store.close()
        time.sleep(0.05)
    raise AssertionError("the compaction's summary call never started")

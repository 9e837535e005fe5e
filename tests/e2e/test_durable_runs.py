"""Runs that survive their process, through the CLI as real processes: `kill -9` at random points and resume,
approvals asked in one process and answered from another, "allow always" on the session, wall time that excludes
waiting. Every log is read back from the real SQLite file."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.trust.seals import Sealer

KILL_POINTS = int(os.environ.get("BEARAGENT_KILL_POINTS", "30"))

STEPS = """
turns:
  - text: "Step one."
    tool_calls: [{name: Bash, arguments: {command: "echo one >> effects.log; sleep 0.2"}}]
    delay_ms: 120
  - text: "Step two."
    tool_calls: [{name: Write, arguments: {file_path: notes.md, content: "two\\n"}}]
    delay_ms: 120
  - text: "Step three."
    tool_calls: [{name: Read, arguments: {file_path: effects.log}}]
    delay_ms: 120
  - text: "Step four."
    tool_calls: [{name: Bash, arguments: {command: "echo four >> effects.log; sleep 0.2"}}]
    delay_ms: 120
  - text: "All done."
    delay_ms: 120
"""
MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write, Bash]")}

WRITE_ONCE = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
  - text: "Writing again."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "again\\n"}}]
  - text: "Done again."
"""


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, **isolated_env(home), "NO_COLOR": "1"}


def _cli(args: list[str], home: Path, *, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        env=_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check is not None:
        assert done.returncode == check, (args, done.returncode, done.stdout, done.stderr)
    return done


def _events(root: Path, run_id: str) -> list[tuple[str, dict[str, object]]]:
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        rows = conn.execute(
            "SELECT event_type, payload FROM events WHERE run_id = ? ORDER BY sequence", (run_id,)
        ).fetchall()
    return [(str(t), json.loads(p)) for t, p in rows]


def _runs(root: Path, home: Path) -> list[dict[str, object]]:
    return json.loads(_cli(["runs", "list", "-w", str(root), "--json"], home).stdout)


def _wait_for_first_event(root: Path, proc: subprocess.Popen[bytes]) -> None:
    db = root / ".bearagent" / "state.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT count(*) FROM events").fetchone()[0]:
                        return
            except sqlite3.Error:
                pass
        time.sleep(0.01)


# ---- kill -9 at random points, then resume -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1200)  # 30 kills, each with 3-4 CLI processes: ~4 min on an idle 2-core machine, more when loaded
def test_kill_9_at_random_points_then_resume_finishes_each_run_without_repeats(tmp_path: Path) -> None:
    rng = random.Random(1601)
    home = tmp_path / "home"
    resumed = 0
    for point in range(KILL_POINTS):
        root = scripted_workspace(tmp_path / f"ws{point}", STEPS, agents=MAIN)
        proc = subprocess.Popen(
            [sys.executable, "-m", "bearagent", "run", "-w", str(root), "--permission-mode", "acceptEdits", "go"],
            env=_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_first_event(root, proc)
        time.sleep(rng.uniform(0.0, 1.2))  # a random point from RunCreated to (about) the end of the run
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if not (root / ".bearagent" / "state.db").exists():
            continue  # killed before the run was recorded: nothing to resume
        runs = _runs(root, home)
        if not runs:
            continue
        (run,) = runs
        assert run["status"] != "running", f"point {point}: a dead run is listed as running"
        run_id = str(run["run_id"])
        if run["status"] == "interrupted":
            done = _cli(["runs", "resume", run_id, "-w", str(root), "--json"], home)
            assert json.loads(done.stdout)["status"] == "succeeded", done.stdout
            resumed += 1
        events = _events(root, run_id)
        types = [t for t, _ in events]
        assert types[-1] == "RunSucceeded", (point, types)
        # no completed model call was made twice: each scripted turn's text is completed once
        texts = [str(p.get("text")) for t, p in events if t == "ModelCallCompleted"]
        assert texts == ["Step one.", "Step two.", "Step three.", "Step four.", "All done."], (point, texts)
        # no side-effecting call ran twice (an interrupted Bash call is abandoned, not repeated)
        effects = (root / "effects.log").read_text().split() if (root / "effects.log").exists() else []
        assert effects.count("one") <= 1 and effects.count("four") <= 1, (point, effects)
        abandoned = [p for t, p in events if t == "ToolCallAbandoned"]
        for item in abandoned:
            assert item["tool_name"] in ("Bash", "Write") and item["side_effect"] in ("execute", "write")
        # every log replays
        _cli(["replay", run_id, "-w", str(root), "--dry"], home)
    assert resumed >= KILL_POINTS // 3, f"only {resumed} of {KILL_POINTS} kills left a run to resume"


LONG_BASH = """
turns:
  - text: "Long step."
    tool_calls: [{name: Bash, arguments: {command: "echo once >> effects.log; sleep 30"}}]
  - text: "Checked."
"""


def _killed_during_bash(tmp_path: Path, home: Path) -> Path:
    """A workspace whose run was killed with SIGKILL while its Bash call ran (the call had its effect)."""
    root = scripted_workspace(tmp_path / "ws", LONG_BASH, agents=MAIN)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), "--permission-mode", "acceptEdits", "go"],
        env=_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (root / "effects.log").exists():
        assert time.monotonic() < deadline, "the Bash call never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return root


def test_an_abandoned_call_tells_the_model_its_outcome_is_unknown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _killed_during_bash(tmp_path, home)
    (run,) = _runs(root, home)
    assert run["status"] == "interrupted"
    inspect = _cli(["inspect", str(run["run_id"]), "-w", str(root)], home).stdout
    assert "interrupted" in inspect
    done = _cli(["runs", "resume", str(run["run_id"])[:8], "-w", str(root)], home)
    assert "outcome is unknown" in done.stdout + done.stderr
    assert (root / "effects.log").read_text().split() == ["once"], "the Bash call must not run again"
    events = _events(root, str(run["run_id"]))
    types = [t for t, _ in events]
    assert types.count("RunInterrupted") == 1 and types.count("RunResumed") == 1
    assert types.count("ToolCallAbandoned") == 1 and types[-1] == "RunSucceeded"
    interrupted = next(p for t, p in events if t == "RunInterrupted")
    assert "is gone" in str(interrupted["reason"])
    in_flight = interrupted["in_flight"]
    assert isinstance(in_flight, dict) and in_flight["name"] == "Bash"
    # a second resume is refused with what to do
    again = _cli(["runs", "resume", str(run["run_id"]), "-w", str(root)], home, check=2)
    assert "succeeded" in again.stderr and "start a new run" in again.stderr


# ---- approvals as facts --------------------------------------------------------------------------------------


def _waiting(root: Path, home: Path, prompt: str = "write it", *extra: str) -> tuple[str, str]:
    done = _cli(
        ["run", "-w", str(root), "--permission-mode", "default", "--wait-approvals", *extra, prompt], home, check=4
    )
    assert "needs an approval" in done.stderr
    (row,) = json.loads(_cli(["approvals", "list", "-w", str(root), "--json"], home).stdout)
    assert row["tool"] == "Write" and row["arguments"] == {"file_path": "out.txt", "content": "made\n"}
    return str(row["run_id"]), str(row["approval_id"])


def test_an_approval_asked_in_one_process_is_answered_from_another(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE_ONCE, agents=MAIN)
    run_id, approval = _waiting(root, home)
    (run,) = _runs(root, home)
    assert run["status"] == "waiting" and not (root / "out.txt").exists()
    time.sleep(1.5)  # a person thinks: this time is not the run's
    listing = _cli(["approvals", "list", "-w", str(root)], home).stdout
    assert approval in listing and "Write" in listing
    done = _cli(["approvals", "answer", run_id[:8], approval, "allow", "-w", str(root), "--json"], home)
    record = json.loads(done.stdout)
    assert record["status"] == "succeeded" and record["final"] == "Done."
    assert (root / "out.txt").read_text() == "made\n"
    assert record["usage"]["model_iterations"] == 2, "the model call before the wait is not made again"
    assert record["usage"]["wall_time_ms"] < 1500, "wall time excludes the wait"
    types = [t for t, _ in _events(root, run_id)]
    assert types.count("ApprovalRequested") == 1 and types.count("ApprovalResolved") == 1
    assert types.index("ApprovalResolved") < types.index("RunResumed") < types.index("ToolCallCompleted")
    # a late second answer is refused and changes nothing
    late = _cli(["approvals", "answer", run_id, approval, "deny", "-w", str(root)], home, check=2)
    assert "waits for no approval" in late.stderr
    assert [t for t, _ in _events(root, run_id)] == types


def test_a_denied_approval_fails_the_call_and_the_model_hears_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE_ONCE, agents=MAIN)
    run_id, approval = _waiting(root, home)
    wrong = _cli(["approvals", "answer", run_id, "ap_nope", "allow", "-w", str(root)], home, check=2)
    assert f"waits for approval {approval}, not ap_nope" in wrong.stderr
    _cli(["approvals", "answer", run_id, approval, "deny", "-w", str(root)], home)
    assert not (root / "out.txt").exists()
    failed = [p for t, p in _events(root, run_id) if t == "ToolCallFailed"]
    assert len(failed) == 1 and "denied" in json.dumps(failed[0])


def test_record_only_then_resume_and_allow_always_lives_on_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE_ONCE, agents=MAIN)
    run_id, approval = _waiting(root, home)
    _cli(["approvals", "answer", run_id, approval, "allow-always", "--no-continue", "-w", str(root)], home)
    (run,) = _runs(root, home)
    assert run["status"] == "waiting", "--no-continue only records the answer"
    _cli(["runs", "resume", run_id, "-w", str(root)], home)
    assert (root / "out.txt").read_text() == "made\n"
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        (rules,) = conn.execute("SELECT allowed_rules FROM sessions").fetchone()
    (entry,) = json.loads(rules)  # `<seal> <rule>`: the rule Claude Code would add (Edit rules cover writes)
    assert entry.endswith(" Edit(/out.txt)")
    assert Sealer(home / "bearagent").rules(str(run["session_id"]), (entry,)) == ("Edit(/out.txt)",)
    # the next run of the session is not asked again
    again = _cli(["run", "-w", str(root), "--permission-mode", "default", "--continue", "write it again"], home)
    assert "Done again." in again.stdout
    assert (root / "out.txt").read_text() == "again\n"


def test_without_wait_approvals_a_non_interactive_run_still_denies_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE_ONCE, agents=MAIN)
    done = _cli(["run", "-w", str(root), "--permission-mode", "default", "--json", "write it"], home)
    record = json.loads(done.stdout)
    assert record["status"] == "succeeded" and not (root / "out.txt").exists()
    (run,) = _runs(root, home)
    types = [t for t, _ in _events(root, str(run["run_id"]))]
    assert "ApprovalRequested" not in types


def test_runs_list_filters_the_waiting_state(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", WRITE_ONCE, agents=MAIN)
    run_id, _approval = _waiting(root, home)
    for status, expected in (("waiting", [run_id]), ("interrupted", []), ("running", [])):
        found = json.loads(_cli(["runs", "list", "-w", str(root), "--status", status, "--json"], home).stdout)
        assert [r["run_id"] for r in found] == expected, status


def test_a_resumed_run_says_what_changed_since_it_started(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _killed_during_bash(tmp_path, home)
    agent = root / ".bearagent" / "agents" / "main.md"
    agent.write_text(agent.read_text().replace("You are a test agent.", "You are a changed agent."))
    (run,) = _runs(root, home)
    done = _cli(["runs", "resume", str(run["run_id"]), "-w", str(root)], home)
    assert "since this run started: agent main: its system prompt changed" in done.stdout + done.stderr
    resumed = [p for t, p in _events(root, str(run["run_id"])) if t == "RunResumed"]
    assert resumed[0]["changes"] == ["agent main: its system prompt changed"]


def test_two_resumes_at_once_continue_the_run_once(tmp_path: Path) -> None:
    import asyncio

    from tests.support.run_ws import open_ws

    from bearagent.domain.errors import BearAgentError

    home = tmp_path / "home"
    root = _killed_during_bash(tmp_path, home)
    (run,) = _runs(root, home)
    run_id = str(run["run_id"])

    async def both() -> list[object]:
        async with open_ws(root, home) as one, open_ws(root, home) as two:
            return list(await asyncio.gather(one.resume(run_id), two.resume(run_id), return_exceptions=True))

    outcomes = asyncio.run(both())
    refused = [o for o in outcomes if isinstance(o, BearAgentError)]
    assert len(refused) == 1, outcomes
    assert refused[0].info.code in ("invalid_request.finished", "invalid_request.still_running")
    types = [t for t, _ in _events(root, run_id)]
    assert types.count("RunResumed") == 1 and types[-1] == "RunSucceeded"

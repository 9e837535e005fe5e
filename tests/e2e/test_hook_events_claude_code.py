"""Claude Code's PostToolBatch, StopFailure and Notification hook events in real runs, with hook scripts in Python
and shell reading their stdin as Claude Code's documentation writes them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.api import runtime_of
from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.events import Event
from bearagent.providers.scripted import ScriptedProvider
from bearagent.trust import trust, workspace_trust_surface

MAIN = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}

BATCH_HOOK = """#!/usr/bin/env python3
import json
import subprocess
import sys
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "batch-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
if any("SECRET" in call["tool_response"] for call in data["tool_calls"]):
    print(json.dumps({"decision": "block", "reason": "a secret was read"}))
sys.exit(0)
"""

STOP_FAILURE_HOOK = """#!/bin/sh
# StopFailure logger: the stdin JSON, one line, appended to a log file
jq -c . >> "$CLAUDE_PROJECT_DIR/stop-failure.jsonl"
"""

NOTIFY_HOOK = """#!/usr/bin/env python3
import json
import subprocess
import sys
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "notify-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
"""

HOOKS = """
hooks:
  PostToolBatch:
    - hooks: [{type: command, command: .claude/hooks/batch.py}]
  StopFailure:
    - matcher: "authentication_failed|unknown"
      hooks: [{type: command, command: .claude/hooks/stop-failure.sh}]
  Notification:
    - matcher: permission_prompt
      hooks: [{type: command, command: .claude/hooks/notify.py}]
"""

TWO_READS = """
turns:
  - tool_calls:
      - {name: Read, arguments: {file_path: a.txt}}
      - {name: Read, arguments: {file_path: b.txt}}
  - text: "done"
"""


def _workspace(tmp_path: Path, script: str, extra: str = "") -> tuple[Path, Path]:
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=CONFIG + extra + HOOKS)
    write(root, ".claude/hooks/batch.py", BATCH_HOOK, executable=True)
    write(root, ".claude/hooks/stop-failure.sh", STOP_FAILURE_HOOK, executable=True)
    write(root, ".claude/hooks/notify.py", NOTIFY_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _lines(path: Path) -> list[dict[str, JsonValue]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _hook_facts(events: Sequence[Event], event: str) -> list[Mapping[str, JsonValue]]:
    return [e.payload for e in events if e.event_type == "HookExecuted" and e.payload["hook_event"] == event]


def test_post_tool_batch_sees_every_call_of_a_parallel_batch(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, TWO_READS)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            result = await ws.run("read both")
            assert result.status == "succeeded", result.error
            facts = _hook_facts(list(ws.events(str(result.run_id))), "PostToolBatch")
            assert len(facts) == 1 and facts[0]["decision"] == "none"

    asyncio.run(go())
    (logged,) = _lines(root / "batch-log.jsonl")
    assert logged["hook_event_name"] == "PostToolBatch"
    calls = logged["tool_calls"]
    assert isinstance(calls, list) and [c["tool_name"] for c in calls] == ["Read", "Read"]  # type: ignore[index]
    assert calls[0]["tool_input"] == {"file_path": "a.txt"}  # type: ignore[index]
    assert "alpha" in calls[0]["tool_response"] and "beta" in calls[1]["tool_response"]  # type: ignore[index]
    assert all(c["tool_use_id"] for c in calls)  # type: ignore[union-attr]
    assert not (root / "stop-failure.jsonl").exists()  # the run succeeded: no StopFailure


def test_a_post_tool_batch_block_ends_the_run_and_stop_failure_fires(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path, TWO_READS)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("SECRET=1\n")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            result = await ws.run("read both")
            assert result.status == "failed"
            assert result.error is not None and result.error.code == "hook.batch_blocked"
            assert "a secret was read" in result.error.message
            events = list(ws.events(str(result.run_id)))
            assert [f["decision"] for f in _hook_facts(events, "PostToolBatch")] == ["block"]
            assert len(_hook_facts(events, "StopFailure")) == 1
            assert events[-1].event_type == "RunFailed"  # the StopFailure fact comes before the run's end
            assert result.usage.model_iterations == 1  # no model call after the blocked batch

    asyncio.run(go())
    (failure,) = _lines(root / "stop-failure.jsonl")
    assert failure["hook_event_name"] == "StopFailure" and failure["error"] == "unknown"
    assert str(failure["error_details"]).startswith("hook.batch_blocked: ")


def test_stop_failure_names_a_model_error_as_claude_code_does(tmp_path: Path) -> None:
    script = """
turns:
  - error: {category: authentication, message: "the API key was rejected", retryable: false}
"""
    root, home = _workspace(tmp_path, script)

    async def go() -> None:
        async with open_ws(root, home) as ws:
            result = await ws.run("hello")
            assert result.status == "failed"

    asyncio.run(go())
    (failure,) = _lines(root / "stop-failure.jsonl")
    assert failure["error"] == "authentication_failed"
    assert "the API key was rejected" in str(failure["error_details"])
    assert failure["last_assistant_message"] == "the API key was rejected"
    assert {"session_id", "transcript_path", "cwd", "run_id"} <= set(failure)


def test_notification_fires_when_the_run_waits_for_an_approval(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""
    root, home = _workspace(tmp_path, script, "permission_mode: default\n")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            waiting = await ws.run("write it", wait_approvals=True)
            assert waiting.status == "waiting"
            info = ws.run_info(str(waiting.run_id))
            assert info.pending_approval is not None
            facts = _hook_facts(list(ws.events(str(waiting.run_id))), "Notification")
            assert len(facts) == 1
            done = await ws.answer_approval(str(waiting.run_id), info.pending_approval.approval_id, "allow_once")
            assert done is not None and done.status == "succeeded"
            return None

    asyncio.run(go())
    (note,) = _lines(root / "notify-log.jsonl")
    assert note["hook_event_name"] == "Notification" and note["notification_type"] == "permission_prompt"
    assert "waits for approval" in str(note["message"]) and note["title"] == "BearAgent"


COMPACT_CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml, context_window: 6000}
  summariser: {provider: scripted, script: summary.yaml}
compaction: {model: summariser, keep_recent_turns: 1, threshold: THRESHOLD}
hooks:
  PreCompact:
    - matcher: "manual|auto"
      hooks: [{type: command, command: .claude/hooks/pre-compact.sh}]
  PostCompact:
    - hooks: [{type: command, command: .claude/hooks/post-compact.py}]
"""
PRE_COMPACT_HOOK = """#!/bin/sh
# PreCompact: log the input; refuse when the focus says so (exit 2 blocks the compaction)
input=$(cat)
printf '%s\\n' "$input" | jq -c . >> "$CLAUDE_PROJECT_DIR/pre-compact.jsonl"
case "$input" in
  *"keep everything"*) echo "the user wants the whole history kept" >&2; exit 2 ;;
esac
exit 0
"""
POST_COMPACT_HOOK = """#!/usr/bin/env python3
import json
import subprocess
import sys
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "post-compact.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
"""
PADDING = "The weather report goes on about clouds and wind and rain. " * 70  # ~1,200 tokens raw
SUMMARY = "Summary: the user sent weather reports."


def _compacting_workspace(tmp_path: Path, threshold: str) -> tuple[Path, Path]:
    script = 'turns:\n  - text: "Noted."\n  - text: "Noted again."\n  - text: "Noted thrice."\n  - text: "Done."\n'
    config = COMPACT_CONFIG.replace("THRESHOLD", threshold)
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary")}, config=config
    )
    write(root, ".bearagent/summary.yaml", f'turns:\n  - text: "{SUMMARY}"\n  - text: "{SUMMARY}"\n')
    write(root, ".claude/hooks/pre-compact.sh", PRE_COMPACT_HOOK, executable=True)
    write(root, ".claude/hooks/post-compact.py", POST_COMPACT_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def test_pre_and_post_compact_fire_around_a_manual_compaction(tmp_path: Path) -> None:
    root, home = _compacting_workspace(tmp_path, "1.0")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            first = await ws.run(f"First.\n{PADDING}")
            session = str(first.session_id)
            await ws.run("Second.", session=session)
            result = await ws.compact(session, focus="the weather")
            assert result.status == "succeeded", result.error

    asyncio.run(go())
    (pre,) = _lines(root / "pre-compact.jsonl")
    assert pre["hook_event_name"] == "PreCompact" and pre["trigger"] == "manual"
    assert pre["custom_instructions"] == "the weather"
    (post,) = _lines(root / "post-compact.jsonl")
    assert post["trigger"] == "manual" and post["compact_summary"] == SUMMARY


def test_a_pre_compact_block_keeps_the_history_and_says_why(tmp_path: Path) -> None:
    root, home = _compacting_workspace(tmp_path, "1.0")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            first = await ws.run(f"First.\n{PADDING}")
            session = str(first.session_id)
            await ws.run("Second.", session=session)
            result = await ws.compact(session, focus="keep everything")
            assert result.status == "failed"
            assert result.error is not None and result.error.code == "hook.compaction_blocked"
            assert "the user wants the whole history kept" in result.error.message
            after = await ws.run("Third?", session=session)
            assert after.status == "succeeded"

    asyncio.run(go())
    assert len(_lines(root / "pre-compact.jsonl")) == 1
    assert not (root / "post-compact.jsonl").exists()  # no compaction happened


def test_an_automatic_compaction_fires_pre_compact_with_trigger_auto(tmp_path: Path) -> None:
    root, home = _compacting_workspace(tmp_path, "0.5")

    async def go() -> None:
        async with open_ws(root, home) as ws:
            first = await ws.run(f"First.\n{PADDING}")
            session = str(first.session_id)
            for prompt in ("Second.", "Third."):
                result = await ws.run(f"{prompt}\n{PADDING}", session=session)
                assert result.status == "succeeded", result.error

    asyncio.run(go())
    pre = _lines(root / "pre-compact.jsonl")
    assert pre and all(p["trigger"] == "auto" and p["custom_instructions"] == "" for p in pre)
    post = _lines(root / "post-compact.jsonl")
    assert len(post) == len(pre) and post[0]["compact_summary"] == SUMMARY


def test_a_handlers_status_message_is_shown_in_the_terminal_of_a_real_run(tmp_path: Path) -> None:
    script = 'turns:\n  - tool_calls: [{name: Read, arguments: {file_path: a.txt}}]\n  - text: "read it"\n'
    config = (
        CONFIG
        + """
hooks:
  PreToolUse:
    - matcher: Read
      hooks: [{type: command, command: .claude/hooks/check.sh, statusMessage: "Checking the file name..."}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, ".claude/hooks/check.sh", "#!/bin/sh\ncat > /dev/null\nexit 0\n", executable=True)
    (root / "a.txt").write_text("alpha\n")
    home = tmp_path / "home"
    env = isolated_env(home, NO_COLOR="1")
    trust(root, workspace_trust_surface(load(root, home)), env=env)
    bearagent = str(Path(sys.executable).parent / "bearagent")
    # generous timeout: a cold start of the CLI on a loaded 2-core machine
    result = subprocess.run(
        [bearagent, "run", "-w", str(root), "read a.txt"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "PreToolUse hook: Checking the file name..." in result.stdout + result.stderr
    assert "read it" in result.stdout


REDACT_HOOK = """#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
text = data["tool_response"].get("content", "")
if "password" in text:
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": text.replace("hunter2", "[REDACTED]"),
        }
    }))
"""


def test_updated_tool_output_replaces_what_the_model_reads_and_the_log_keeps_both(tmp_path: Path) -> None:
    script = 'turns:\n  - tool_calls: [{name: Read, arguments: {file_path: a.txt}}]\n  - text: "read it"\n'
    config = (
        CONFIG
        + """
hooks:
  PostToolUse:
    - matcher: Read
      hooks: [{type: command, command: .claude/hooks/redact.py}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, ".claude/hooks/redact.py", REDACT_HOOK, executable=True)
    (root / "a.txt").write_text("the password is hunter2\n")
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

    async def go() -> None:
        async with open_ws(root, home) as ws:
            result = await ws.run("read a.txt")
            assert result.status == "succeeded", result.error
            loaded = runtime_of(ws).loaded
            entry = loaded.models.for_use(loaded.models.resolve("scripted"), loaded.env)
            provider = runtime_of(ws).resources.provider(entry, str(result.session_id))
            assert isinstance(provider, ScriptedProvider)
            seen = json.dumps(provider.requests[-1].model_dump(mode="json"))
            assert "[REDACTED]" in seen and "hunter2" not in seen
            (done,) = [e.payload for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallCompleted"]
            recorded = json.dumps(thaw_json_mapping(done))
            assert "[REDACTED]" in recorded and "hunter2" in recorded  # the content and the tool's own output
            assert "hook_original_content" in recorded
            (fact,) = _hook_facts(list(ws.events(str(result.run_id))), "PostToolUse")
            assert fact["decision"] == "rewrite"

    asyncio.run(go())


DEFER_HOOK = """#!/bin/bash
# PreToolUse: defer every Write to a person (Claude Code's `defer`)
input=$(cat)
tool=$(printf '%s' "$input" | jq -r .tool_name)
if [ "$tool" = "Write" ]; then
  printf '%s' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer",'
  printf '%s\\n' ' "permissionDecisionReason": "writes need a second pair of eyes"}}'
fi
"""


def test_a_deferred_pretooluse_decision_makes_the_run_wait_for_an_answer(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""
    config = (
        CONFIG
        + """
permissions: {allow: [Write]}
hooks:
  PreToolUse:
    - hooks: [{type: command, command: .claude/hooks/defer.sh}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, ".claude/hooks/defer.sh", DEFER_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

    async def go() -> None:
        async with open_ws(root, home) as ws:
            waiting = await ws.run("write it", wait_approvals=True)
            assert waiting.status == "waiting" and not (root / "out.txt").exists()  # Write is allowed by a rule
            info = ws.run_info(str(waiting.run_id))
            assert info.pending_approval is not None
            events = list(ws.events(str(waiting.run_id)))
            (asked,) = [e.payload for e in events if e.event_type == "ApprovalRequested"]
            assert "the hook deferred the decision: writes need a second pair of eyes" in json.dumps(
                thaw_json_mapping(asked)
            )
            assert [f["decision"] for f in _hook_facts(events, "PreToolUse")] == ["ask"]
            done = await ws.answer_approval(str(waiting.run_id), info.pending_approval.approval_id, "allow_once")
            assert done is not None and done.status == "succeeded"

    asyncio.run(go())
    assert (root / "out.txt").read_text() == "made\n"

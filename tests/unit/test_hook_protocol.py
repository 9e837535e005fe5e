"""The hook wire protocol: input JSON per event, exit codes, JSON output fields, judge answers, matchers."""

from __future__ import annotations

import json

import pytest

from bearagent.domain._base import JsonValue, frozen_json
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.hooks.hook_input import (
    CommonInput,
    build_hook_input,
    match_target,
    model_request_from_wire,
    model_request_to_wire,
    stop_failure_kind,
    tool_response_from_result,
)
from bearagent.hooks.matching import matcher_matches
from bearagent.hooks.outcome import refuse_beyond_capabilities
from bearagent.hooks.protocol import (
    MAX_TEXT_CHARS,
    HandlerFailure,
    HookOutputError,
    HookReply,
    reply_from_command,
    reply_from_json,
    reply_from_judgement,
)


def common(event: str) -> CommonInput:
    return CommonInput.model_validate(
        {
            "session_id": "s1",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/ws",
            "hook_event_name": event,
            "run_id": "r1",
            "agent_name": "build",
        }
    )


def test_pretooluse_input_has_every_common_field_and_the_event_fields() -> None:
    data = build_hook_input(
        common("PreToolUse"), {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    )
    assert data == {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/ws",
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "run_id": "r1",
        "agent_name": "build",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }


def test_common_fields_stay_present_when_null() -> None:
    base = CommonInput(session_id="s", transcript_path="/t", cwd="/", hook_event_name="SessionEnd")
    data = build_hook_input(base, {"reason": "prompt_input_exit"})
    assert data["run_id"] is None and "run_id" in data
    assert data["agent_name"] is None and "agent_name" in data
    assert data["reason"] == "prompt_input_exit"


def test_stop_hook_active_is_a_json_boolean() -> None:
    data = build_hook_input(common("Stop"), {"stop_hook_active": True, "last_assistant_message": "done"})
    assert json.dumps(data["stop_hook_active"]) == "true"
    assert data["background_tasks"] == [] and data["session_crons"] == []
    with pytest.raises(ValueError, match="stop_hook_active"):
        build_hook_input(common("Stop"), {"stop_hook_active": "yes"})


def test_tool_input_must_be_an_object() -> None:
    with pytest.raises(ValueError, match=r"PreToolUse hook payload: tool_input"):
        build_hook_input(common("PreToolUse"), {"tool_name": "Bash", "tool_input": "ls", "tool_use_id": "t"})


def test_unknown_payload_field_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="promt"):
        build_hook_input(common("UserPromptSubmit"), {"promt": "hi"})


def test_session_and_subagent_events() -> None:
    assert build_hook_input(common("SessionStart"), {})["source"] == "startup"
    sub = build_hook_input(common("SubagentStart"), {"agent_id": "a1", "agent_type": "explore"})
    assert (sub["agent_id"], sub["agent_type"]) == ("a1", "explore")
    stop = build_hook_input(common("SubagentStop"), {"agent_id": "a1", "agent_type": "explore"})
    assert stop["stop_hook_active"] is False and stop["agent_transcript_path"] == ""


def test_bash_tool_response_is_always_the_claude_code_shape() -> None:
    ok = ToolResult(tool_call_id=ToolCallId.new(), tool_name="Bash", status="succeeded", content="hi\n")
    response = tool_response_from_result("Bash", ok)
    assert response == {"content": "hi\n", "stdout": "hi\n", "stderr": "", "exit_code": 0, "interrupted": False}
    structured = ToolResult(
        tool_call_id=ToolCallId.new(),
        tool_name="Bash",
        status="succeeded",
        content="x",
        data=frozen_json({"stdout": "out", "stderr": "err", "exit_code": 3, "interrupted": False}),
    )
    assert tool_response_from_result("Bash", structured)["exit_code"] == 3
    timed_out = ToolResult.failure(
        _request(), ErrorInfo.of("timeout", "tool_timeout", "Bash did not finish within 1 s")
    )
    failed = tool_response_from_result("Bash", timed_out)
    assert failed["interrupted"] is True and failed["exit_code"] == 1 and "did not finish" in str(failed["error"])


def _request() -> ToolRequest:
    return ToolRequest(tool_call_id=ToolCallId.new(), name="Bash", arguments=frozen_json({"command": "sleep 9"}))


def test_model_request_round_trips_through_the_wire() -> None:
    request = ModelRequest(model="gpt", messages=(Message.user("hi"),))
    wire = model_request_to_wire(request)
    assert wire["model"] == "gpt"
    assert model_request_from_wire(wire) == request
    with pytest.raises(ValueError, match=r"updatedRequest\.messages"):
        model_request_from_wire({"model": "gpt", "messages": []})


def test_match_targets_per_event() -> None:
    assert match_target("PreToolUse", {"tool_name": "mcp__memory__create_entities"}) == "mcp__memory__create_entities"
    assert match_target("SessionStart", {"source": "resume"}) == "resume"
    assert match_target("SessionStart", {}) == "startup"
    assert match_target("SubagentStop", {"agent_type": "explore"}) == "explore"
    assert match_target("PreModelRequest", {"model_request": {"model": "gpt-5"}}) == "gpt-5"
    assert match_target("UserPromptSubmit", {"prompt": "x"}) is None


# ---- exit codes ----------------------------------------------------------------------------------------------


def test_exit_0_plain_stdout_is_context_only_for_prompt_and_session_start() -> None:
    reply = reply_from_command("UserPromptSubmit", 0, "Current time: now\n", "")
    assert isinstance(reply, HookReply) and reply.additional_context == "Current time: now"
    reply = reply_from_command("SessionStart", 0, "branch: main", "")
    assert isinstance(reply, HookReply) and reply.additional_context == "branch: main"
    reply = reply_from_command("PreToolUse", 0, "just logging", "noise on stderr")
    assert isinstance(reply, HookReply) and reply.additional_context is None and not reply.block


def test_exit_0_json_is_parsed_when_stdout_starts_with_a_brace() -> None:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no",
        }
    }
    reply = reply_from_command("PreToolUse", 0, "  " + json.dumps(out), "")
    assert isinstance(reply, HookReply)
    assert (reply.permission, reply.permission_reason) == ("deny", "no")


def test_a_deny_without_a_reason_gives_the_model_the_system_message() -> None:
    # hookify's shape: the rule's message only in systemMessage, no permissionDecisionReason
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}, "systemMessage": "rule"}
    reply = reply_from_command("PreToolUse", 0, json.dumps(out), "")
    assert isinstance(reply, HookReply)
    assert (reply.permission, reply.permission_reason, reply.system_message) == ("deny", "rule", "rule")
    out["hookSpecificOutput"] = {"hookEventName": "PreToolUse", "permissionDecision": "allow"}
    reply = reply_from_command("PreToolUse", 0, json.dumps(out), "")
    assert isinstance(reply, HookReply) and (reply.permission, reply.permission_reason) == ("allow", None)


def test_leading_noise_before_json_is_tolerated_with_a_note() -> None:
    stdout = "Welcome to bash!\n" + json.dumps({"decision": "block", "reason": "stop"})
    reply = reply_from_command("Stop", 0, stdout, "")
    assert isinstance(reply, HookReply) and reply.block and reply.block_reason == "stop"
    assert any("non-JSON text before" in note for note in reply.notes)


def test_invalid_json_is_a_bad_output_failure() -> None:
    failure = reply_from_command("PreToolUse", 0, '{"decision": ', "")
    assert isinstance(failure, HandlerFailure) and failure.kind == "bad_output"
    assert "not valid JSON" in failure.message


def test_exit_2_blocks_with_stderr_on_blocking_events() -> None:
    reply = reply_from_command("PreToolUse", 2, "", "Blocked: rm -rf commands are not allowed\n")
    assert isinstance(reply, HookReply) and reply.block
    assert reply.block_reason == "Blocked: rm -rf commands are not allowed"


def test_exit_2_on_session_start_only_informs_the_user() -> None:
    reply = reply_from_command("SessionStart", 2, "", "cannot read env")
    assert isinstance(reply, HookReply) and not reply.block and reply.system_message == "cannot read env"


def test_other_exit_codes_are_failures_naming_the_status_and_stderr() -> None:
    failure = reply_from_command("PreToolUse", 1, "", "Traceback...\nboom")
    assert isinstance(failure, HandlerFailure) and failure.kind == "exit_status"
    assert "status code 1" in failure.message and "Traceback" in failure.message
    missing = reply_from_command("PreToolUse", 127, "", "sh: 1: ./nope.sh: not found")
    assert isinstance(missing, HandlerFailure) and missing.kind == "missing_executable"


# ---- JSON fields ---------------------------------------------------------------------------------------------


def test_every_universal_field_is_read() -> None:
    reply = reply_from_json(
        "PostToolUse",
        {
            "continue": False,
            "stopReason": "tests are red",
            "systemMessage": "heads up",
            "suppressOutput": True,
            "decision": "block",
            "reason": "lint failed",
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see lint.log"},
        },
    )
    assert not reply.continue_ and reply.stop_reason == "tests are red"
    assert reply.system_message == "heads up"
    assert reply.block and reply.block_reason == "lint failed"
    assert reply.additional_context == "see lint.log"


def test_legacy_decisions_on_pretooluse() -> None:
    assert reply_from_json("PreToolUse", {"decision": "approve", "reason": "docs"}).permission == "allow"
    blocked = reply_from_json("PreToolUse", {"decision": "block", "reason": "no"})
    assert blocked.permission == "deny" and blocked.permission_reason == "no"


def test_updated_input_and_request_are_only_read_on_their_events() -> None:
    reply = reply_from_json(
        "PreToolUse", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls -la"}}}
    )
    assert reply.updated_input == {"command": "ls -la"}
    ignored = reply_from_json("PostToolUse", {"hookSpecificOutput": {"updatedInput": {"command": "x"}}})
    assert ignored.updated_input is None and any("only read on PreToolUse" in n for n in ignored.notes)
    request = reply_from_json("PreModelRequest", {"hookSpecificOutput": {"updatedRequest": {"model": "m"}}})
    assert request.updated_request == {"model": "m"}


def test_schema_errors_name_the_field() -> None:
    with pytest.raises(HookOutputError, match="continue"):
        reply_from_json("Stop", {"continue": "no"})
    with pytest.raises(HookOutputError, match="permissionDecision"):
        reply_from_json("PreToolUse", {"hookSpecificOutput": {"permissionDecision": "maybe"}})
    with pytest.raises(HookOutputError, match="hookEventName is 'PostToolUse' but this is a PreToolUse hook"):
        reply_from_json("PreToolUse", {"hookSpecificOutput": {"hookEventName": "PostToolUse"}})
    with pytest.raises(HookOutputError, match="JSON object"):
        reply_from_json("Stop", ["not", "an", "object"])


def test_unknown_claude_code_fields_are_tolerated_and_named() -> None:
    reply = reply_from_json("Stop", {"terminalSequence": "\u0007", "hookSpecificOutput": {"sessionTitle": "x"}})
    assert any("terminalSequence" in n and "hookSpecificOutput.sessionTitle" in n for n in reply.notes)


def test_strings_are_bounded() -> None:
    reply = reply_from_json("UserPromptSubmit", {"hookSpecificOutput": {"additionalContext": "x" * 50_000}})
    assert reply.additional_context is not None
    assert len(reply.additional_context) <= MAX_TEXT_CHARS and "truncated" in reply.additional_context


# ---- judges, matchers, capabilities --------------------------------------------------------------------------


def test_judge_answers() -> None:
    ok = reply_from_judgement('{"ok": true}')
    assert isinstance(ok, HookReply) and not ok.block
    no = reply_from_judgement('```json\n{"ok": false, "reason": "tests missing"}\n```')
    assert isinstance(no, HookReply) and no.block and no.block_reason == "tests missing"
    bad = reply_from_judgement("Sure, looks fine to me!")
    assert isinstance(bad, HandlerFailure) and "{ok, reason}" in bad.message
    wrong_type = reply_from_judgement('{"ok": "yes"}')
    assert isinstance(wrong_type, HandlerFailure) and "boolean 'ok'" in wrong_type.message


@pytest.mark.parametrize(
    ("matcher", "name", "expected"),
    [
        (None, "Bash", True),
        ("", "Bash", True),
        ("*", "mcp__memory__create_entities", True),
        ("Bash", "Bash", True),
        ("Bash", "bash", False),
        ("Edit|Write", "Write", True),
        ("Edit|Write", "NotebookEdit", False),
        ("Edit, Write", "Edit", True),
        ("mcp__memory__create_entities", "mcp__memory__create_entities", True),
        ("mcp__memory", "mcp__memory__create_entities", False),
        ("mcp__memory__.*", "mcp__memory__create_entities", True),
        ("mcp__.*", "mcp__github__search_repositories", True),
        ("mcp__.*", "Bash", False),
        ("mcp__.*__write.*", "mcp__fs__write_file", True),
        ("mcp__.*__write.*", "mcp__fs__read_file", False),
        ("Edit.*", "NotebookEdit", False),
        ("mcp__plugin_.*", "mcp__plugin_tools_db__query", True),
    ],
)
def test_matchers(matcher: str | None, name: str, expected: bool) -> None:
    assert matcher_matches(matcher, name) is expected


def test_matcher_is_ignored_on_events_without_matcher_support() -> None:
    assert matcher_matches("Bash", None)


def test_bad_regex_matcher_says_so() -> None:
    with pytest.raises(ValueError, match=r"not a valid regular expression"):
        matcher_matches("mcp__(", "x")


def test_capabilities_refuse_what_was_not_declared() -> None:
    reply = HookReply(
        block=True,
        block_reason="no",
        permission="allow",
        updated_input={"a": 1},
        additional_context="ctx",
        continue_=False,
    )
    kept, refused = refuse_beyond_capabilities(reply, frozenset({"context"}))
    assert refused == ("block", "permissionDecision: allow", "continue: false", "updatedInput")
    assert not kept.block and kept.permission is None and kept.continue_ and kept.updated_input is None
    assert kept.additional_context == "ctx"
    kept, refused = refuse_beyond_capabilities(reply, frozenset({"block", "rewrite", "context"}))
    assert refused == () and kept == reply


def test_updated_tool_output_is_read_on_post_tool_use_only_and_needs_rewrite() -> None:
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {"stdout": "x"}}}
    reply = reply_from_json("PostToolUse", out)
    assert reply.updated_output == '{"stdout": "x"}'
    kept, refused = refuse_beyond_capabilities(reply, frozenset({"block", "context"}))
    assert kept.updated_output is None and refused == ("updatedToolOutput",)
    elsewhere = reply_from_json("PostToolUseFailure", {"hookSpecificOutput": {"updatedToolOutput": "y"}})
    assert elsewhere.updated_output is None
    assert any("updatedToolOutput is only read on PostToolUse" in n for n in elsewhere.notes)


def test_defer_is_an_ask_that_says_the_hook_deferred() -> None:
    out = {"hookSpecificOutput": {"permissionDecision": "defer", "permissionDecisionReason": "CI decides"}}
    reply = reply_from_json("PreToolUse", out)
    assert reply.permission == "ask" and reply.permission_reason == "the hook deferred the decision: CI decides"


def test_new_events_validate_their_input_and_match_on_claude_codes_fields() -> None:
    batch: dict[str, JsonValue] = {
        "tool_calls": [{"tool_name": "Read", "tool_input": {}, "tool_use_id": "t1", "tool_response": "ok"}]
    }
    assert build_hook_input(common("PostToolBatch"), batch)["tool_calls"] == batch["tool_calls"]
    with pytest.raises(ValueError, match="PreCompact hook payload: trigger"):
        build_hook_input(common("PreCompact"), {"trigger": "sometimes"})
    assert match_target("StopFailure", {"error": "rate_limit"}) == "rate_limit"
    assert match_target("Notification", {"notification_type": "permission_prompt"}) == "permission_prompt"
    assert match_target("PostCompact", {"trigger": "auto", "compact_summary": "s"}) == "auto"
    assert stop_failure_kind("authentication", "authentication.invalid_key") == "authentication_failed"
    assert stop_failure_kind("not_found", "not_found.model") == "model_not_found"
    assert stop_failure_kind("budget", "budget.max_tool_calls") == "unknown"

"""How the answers of Claude Code's newer hook events are read: PermissionRequest's `hookSpecificOutput.decision`,
UserPromptExpansion's exit 2 and plain stdout, and the fields each event ignores (named in a note, never dropped)."""

from __future__ import annotations

from bearagent.hooks.protocol import HandlerFailure, HookReply, reply_from_command, reply_from_json


def _decision(event: str, decision: object) -> HookReply | HandlerFailure:
    body = {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
    try:
        return reply_from_json(event, body)
    except ValueError as exc:
        return HandlerFailure("bad_output", str(exc))


def test_permission_request_allow_deny_and_updated_input() -> None:
    allow = _decision("PermissionRequest", {"behavior": "allow", "updatedInput": {"command": "ls -la"}})
    assert isinstance(allow, HookReply) and allow.permission == "allow" and allow.updated_input == {"command": "ls -la"}
    deny = _decision("PermissionRequest", {"behavior": "deny", "message": "not on Fridays", "interrupt": True})
    assert isinstance(deny, HookReply) and deny.permission == "deny" and deny.permission_reason == "not on Fridays"
    assert deny.updated_input is None and any("interrupt" in n for n in deny.notes)
    remembered = _decision("PermissionRequest", {"behavior": "allow", "updatedPermissions": [{"type": "addRules"}]})
    assert isinstance(remembered, HookReply) and any("updatedPermissions" in n for n in remembered.notes)


def test_a_bad_permission_request_decision_is_invalid_output_and_other_events_ignore_it() -> None:
    bad = _decision("PermissionRequest", {"behavior": "maybe"})
    assert isinstance(bad, HandlerFailure) and "decision.behavior" in bad.message
    elsewhere = _decision("PreToolUse", {"behavior": "allow"})
    assert isinstance(elsewhere, HookReply) and elsewhere.permission is None
    assert any("only read on PermissionRequest" in n for n in elsewhere.notes)


def test_user_prompt_expansion_blocks_with_exit_2_and_reads_plain_stdout_as_context() -> None:
    blocked = reply_from_command("UserPromptExpansion", 2, "", "not this command\n")
    assert isinstance(blocked, HookReply) and blocked.block and blocked.block_reason == "not this command"
    context = reply_from_command("UserPromptExpansion", 0, "The ticket is about login.\n", "")
    assert isinstance(context, HookReply) and context.additional_context == "The ticket is about login."
    observed = reply_from_command("InstructionsLoaded", 2, "", "ignored\n")
    assert isinstance(observed, HookReply) and not observed.block  # cannot block: stderr is only shown to you

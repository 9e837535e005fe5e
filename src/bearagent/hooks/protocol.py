"""How a hook handler's answer is read: Claude Code's exit-code and JSON rules (`reply_from_command`,
`reply_from_json`), a judge's `{ok, reason}` (`reply_from_judgement`), and the bounds on what a hook hands back.

Every handler type ends up as one `HookReply` (what it asked for) or one `HandlerFailure` (it did not answer
properly); the dispatcher then applies declared capabilities, `on_failure` and the cross-hook merge
(`hooks/outcome.py`). What a handler reads is `hooks/hook_input.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias, cast

from pydantic import ValidationError

from bearagent.domain._base import JsonValue

MAX_TEXT_CHARS = 10_000
"""Cap of one string a hook hands back (context, reason, system message, plain stdout), as in Claude Code."""

PermissionDecision: TypeAlias = Literal["allow", "deny", "ask"]
"""PreToolUse's `permissionDecision` (`defer` is read as `ask`), or PermissionRequest's `decision.behavior`."""
JsonDict: TypeAlias = dict[str, JsonValue]

BLOCKING_EVENTS: frozenset[str] = frozenset(
    {
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PreModelRequest",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "PreCompact",
        "Stop",
        "SubagentStop",
        "Elicitation",
        "ElicitationResult",
    }
)
"""Events where exit 2 / `decision: block` means something. Elsewhere (SessionStart, SessionEnd, SubagentStart,
StopFailure, Notification, PostCompact) exit 2 only shows stderr to the user, as in Claude Code."""

PLAIN_STDOUT_IS_CONTEXT: frozenset[str] = frozenset({"UserPromptSubmit", "UserPromptExpansion", "SessionStart"})


def bound_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters with a visible marker saying how much was dropped."""
    if len(text) <= limit:
        return text
    marker = f"\n… [hook output truncated: {len(text) - limit} more characters]"
    return text[: max(0, limit - len(marker))] + marker


@dataclass(frozen=True, slots=True)
class HookReply:
    """What one handler asked for, before capabilities and merging. `raw` is the parsed output (for the log)."""

    block: bool = False
    block_reason: str | None = None
    permission: PermissionDecision | None = None
    permission_reason: str | None = None
    updated_input: JsonDict | None = None
    updated_request: JsonDict | None = None
    updated_output: str | None = None
    """PostToolUse's `updatedToolOutput`, as the text the model reads (an object or list is sent as its JSON)."""
    additional_context: str | None = None
    continue_: bool = True
    stop_reason: str | None = None
    system_message: str | None = None
    raw: JsonDict | None = None
    notes: tuple[str, ...] = ()


FailureKind: TypeAlias = Literal[
    "timeout",
    "crashed",
    "exit_status",
    "bad_output",
    "missing_executable",
    "http_status",
    "unknown_handler",
    "sandbox_unavailable",
    "code_changed",
]


@dataclass(frozen=True, slots=True)
class HandlerFailure:
    """The handler did not answer properly; `on_failure` decides whether that blocks."""

    kind: FailureKind
    message: str
    raw: JsonDict | None = field(default=None)


HandlerResult: TypeAlias = HookReply | HandlerFailure


class HookOutputError(ValueError):
    """A hook's JSON broke the output schema; the message names the field."""


def reply_from_json(event: str, value: object) -> HookReply:
    """Read a JSON object answer (stdout on exit 0, an HTTP body, a Python handler's dict)."""
    if not isinstance(value, Mapping):
        raise HookOutputError(f"hook output must be a JSON object, got {type(value).__name__}")
    obj = cast(Mapping[str, object], value)
    try:
        from bearagent.hooks.reply_models import HookJsonOutput  # built when a hook first answers in JSON

        parsed = HookJsonOutput.model_validate(dict(obj))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "output"
        raise HookOutputError(f"hook output field {where}: {first['msg']}") from None
    notes: list[str] = []
    ignored = sorted(set(parsed.model_extra or {}))
    specific = parsed.hookSpecificOutput
    if specific is not None:
        ignored += [f"hookSpecificOutput.{k}" for k in sorted(specific.model_extra or {})]
        if specific.hookEventName is not None and specific.hookEventName != event:
            raise HookOutputError(
                f"hookSpecificOutput.hookEventName is {specific.hookEventName!r} but this is a {event} hook"
            )
    if ignored:
        notes.append(f"ignored output fields BearAgent does not use: {', '.join(ignored)}")

    block = False
    block_reason: str | None = None
    permission: PermissionDecision | None = None
    permission_reason: str | None = None
    if parsed.decision == "block":
        if event == "PreToolUse":
            permission, permission_reason = "deny", parsed.reason
        else:
            block, block_reason = True, parsed.reason or "blocked by hook (decision: block)"
    elif parsed.decision == "approve" and event == "PreToolUse":
        permission, permission_reason = "allow", parsed.reason
    updated_input = updated_request = additional_context = None
    updated_output: str | None = None
    if specific is not None:
        if specific.permissionDecision is not None:
            if event != "PreToolUse":
                notes.append(f"permissionDecision is only read on PreToolUse, ignored on {event}")
            else:
                permission_reason = specific.permissionDecisionReason or parsed.reason
                if permission_reason is None and specific.permissionDecision == "deny" and parsed.systemMessage:
                    # hookify denies with its rule's message in `systemMessage` only: without it the model would
                    # read "no reason given" and could not tell which rule to respect
                    permission_reason = parsed.systemMessage
                if specific.permissionDecision == "defer":
                    # Claude Code's `defer`: the call waits for an answer from outside (here: an approval, the
                    # run's waiting state, recorded as ApprovalRequested); it ranks as `ask` (deny > defer/ask > allow)
                    permission = "ask"
                    detail = f": {permission_reason}" if permission_reason else ""
                    permission_reason = f"the hook deferred the decision{detail}"
                else:
                    permission = specific.permissionDecision
        if specific.decision is not None:
            if event != "PermissionRequest":
                notes.append(f"hookSpecificOutput.decision is only read on PermissionRequest, ignored on {event}")
            else:
                answer = specific.decision
                permission = answer.behavior
                permission_reason = answer.message or parsed.reason
                if answer.behavior == "allow" and answer.updatedInput is not None:
                    updated_input = answer.updatedInput
                if answer.behavior == "deny" and answer.interrupt:
                    notes.append("decision.interrupt: the call is denied; the run goes on (the model reads why)")
                if answer.updatedPermissions:
                    notes.append("decision.updatedPermissions is not applied: answer the approval with 'allow always'")
        if specific.updatedInput is not None:
            if event == "PreToolUse":
                updated_input = specific.updatedInput
            else:
                notes.append(f"updatedInput is only read on PreToolUse, ignored on {event}")
        if specific.updatedRequest is not None:
            if event == "PreModelRequest":
                updated_request = specific.updatedRequest
            else:
                notes.append(f"updatedRequest is only read on PreModelRequest, ignored on {event}")
        if specific.updatedToolOutput is not None:
            if event == "PostToolUse":
                output = specific.updatedToolOutput
                updated_output = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            else:
                notes.append(f"updatedToolOutput is only read on PostToolUse, ignored on {event}")
        additional_context = specific.additionalContext
    if block and event not in BLOCKING_EVENTS:
        notes.append(f"decision: block has no effect on {event}")
        block = False
    return HookReply(
        block=block,
        block_reason=_opt_bound(block_reason),
        permission=permission,
        permission_reason=_opt_bound(permission_reason),
        updated_input=updated_input,
        updated_request=updated_request,
        updated_output=updated_output,
        additional_context=_opt_bound(additional_context),
        continue_=parsed.continue_,
        stop_reason=_opt_bound(parsed.stopReason),
        system_message=_opt_bound(parsed.systemMessage),
        raw=cast(JsonDict, json.loads(json.dumps(dict(obj), default=str))),
        notes=tuple(notes),
    )


def _opt_bound(text: str | None) -> str | None:
    return None if text is None else bound_text(text)


def _parse_json_text(event: str, text: str) -> HandlerResult:
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as exc:
        return HandlerFailure(
            "bad_output", f"stdout starts with '{{' but is not valid JSON ({exc.msg} at line {exc.lineno})"
        )
    try:
        return reply_from_json(event, value)
    except HookOutputError as exc:
        return HandlerFailure("bad_output", str(exc))


def reply_from_command(event: str, exit_code: int, stdout: str, stderr: str) -> HandlerResult:
    """Claude Code's exit-code rules. 0: success (JSON when stdout starts with `{`; a last line that is a JSON
    object after leading noise is accepted with a note; otherwise plain text, which is context for
    UserPromptSubmit / SessionStart). 2: block with stderr (on events that can block; elsewhere stderr is shown to
    the user). Anything else: a failure (reported; `on_failure: block` makes it fail closed)."""
    if exit_code == 0:
        text = stdout.strip()
        if text.startswith("{"):
            return _parse_json_text(event, text)
        lines = [line for line in text.splitlines() if line.strip()]
        if lines and lines[-1].lstrip().startswith("{"):
            result = _parse_json_text(event, lines[-1].strip())
            if isinstance(result, HookReply):
                note = "stdout had non-JSON text before the JSON object on its last line (shell profile echo?)"
                return replace(result, notes=(*result.notes, note))
            return result
        if text and event in PLAIN_STDOUT_IS_CONTEXT:
            return HookReply(additional_context=bound_text(text), raw={"stdout": bound_text(text, 2_000)})
        return HookReply(raw={"stdout": bound_text(text, 2_000)} if text else None)
    if exit_code == 2:
        message = stderr.strip() or "blocked by hook (exit code 2)"
        if event in BLOCKING_EVENTS:
            return HookReply(block=True, block_reason=bound_text(message))
        return HookReply(system_message=bound_text(message))
    first = next((line for line in stderr.splitlines() if line.strip()), "").strip()
    if exit_code in (126, 127):
        return HandlerFailure(
            "missing_executable",
            f"exited with status {exit_code} (command not found or not executable){': ' + first if first else ''}",
        )
    detail = f": {bound_text(first, 500)}" if first else ""
    return HandlerFailure("exit_status", f"failed with non-blocking status code {exit_code}{detail}")


def reply_from_judgement(text: str) -> HandlerResult:
    """A `prompt`/`agent` handler's answer: a JSON object `{ok: bool, reason?: str}` (a ```json fence is allowed).
    `ok: false` blocks with `reason`."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.removeprefix("json").strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return HandlerFailure("bad_output", f"the judge must answer a JSON object {{ok, reason}}, got {body[:200]!r}")
    try:
        value: object = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        return HandlerFailure("bad_output", f"the judge's answer is not valid JSON ({exc.msg})")
    if not isinstance(value, Mapping):
        return HandlerFailure("bad_output", "the judge must answer a JSON object {ok, reason}")
    obj = cast(Mapping[str, object], value)
    ok, reason = obj.get("ok"), obj.get("reason")
    if not isinstance(ok, bool) or (reason is not None and not isinstance(reason, str)):
        return HandlerFailure("bad_output", "the judge's answer needs a boolean 'ok' and a string 'reason'")
    raw: JsonDict = {"ok": ok, "reason": reason}
    if ok:
        return HookReply(raw=raw)
    return HookReply(block=True, block_reason=bound_text(reason or "the judge said no (ok: false)"), raw=raw)

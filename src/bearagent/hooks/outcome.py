"""How the answers of the handlers of one event become one decision, deterministically.

- One handler's answer (`resolve`): a failure becomes what its `on_failure` says (`allow`: reported and ignored;
  `block`: fails closed); output beyond the handler's declared capabilities is refused with a message; a block on
  an event that cannot block is only shown.
- All answers (`merge`), in config order (group order, then handler order), so the result never depends on who
  finished first: blocks (exit 2, `decision: block`, `ok: false`) win; then `permissionDecision` deny > ask > allow.
  `updatedInput` / `updatedRequest` are each read as a full replacement of the original (Claude Code's meaning) and
  applied in config order as a top-level patch against the original, so independent rewrites compose and a later
  handler wins on the same key. PostToolUse's `updatedToolOutput` replaces the whole output: the last one in config
  order wins. `additionalContext` from every handler, joined in config order and bounded;
  `continue: false` from any handler stops the run with the first `stopReason`; every `systemMessage` and every
  handler error is shown to the user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import HookCapability, HookHandlerSpec
from bearagent.hooks.protocol import (
    BLOCKING_EVENTS,
    HandlerFailure,
    HandlerResult,
    HookReply,
    JsonDict,
    PermissionDecision,
    bound_text,
)

HookDecision: TypeAlias = Literal["none", "allow", "deny", "ask", "block", "rewrite", "context", "error"]
_PERMISSION_RANK: Mapping[str, int] = {"allow": 1, "ask": 2, "deny": 3}


@dataclass(frozen=True, slots=True)
class HandlerOutcome:
    """One handler's run, after `on_failure` and capabilities."""

    label: str
    handler_type: str
    source: str
    decision: HookDecision
    duration_ms: int
    reply: HookReply
    failure: HandlerFailure | None = None
    refused: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """The merged decision of every handler that matched one event."""

    event: str
    blocked: bool = False
    block_reason: str | None = None
    permission: PermissionDecision | None = None
    permission_reason: str | None = None
    updated_input: JsonDict | None = None
    updated_request: JsonDict | None = None
    updated_output: str | None = None
    additional_context: str | None = None
    continue_: bool = True
    stop_reason: str | None = None
    system_messages: tuple[str, ...] = ()
    handlers: tuple[HandlerOutcome, ...] = ()
    stop_cap_overridden: bool = False
    background: int = 0
    """Handlers started in the background (`async: true`): not part of this decision."""

    @property
    def matched(self) -> int:
        return len(self.handlers)

    def to_json(self) -> JsonDict:
        """The decision as printed by `bearagent hooks test --json`."""
        return {
            "event": self.event,
            "matched": self.matched,
            "continue": self.continue_,
            "stopReason": self.stop_reason,
            "blocked": self.blocked,
            "blockReason": self.block_reason,
            "permissionDecision": self.permission,
            "permissionDecisionReason": self.permission_reason,
            "updatedInput": self.updated_input,
            "updatedRequest": self.updated_request,
            "updatedToolOutput": self.updated_output,
            "additionalContext": self.additional_context,
            "systemMessages": list(self.system_messages),
            "stopCapOverridden": self.stop_cap_overridden,
            "handlers": [handler_json(h) for h in self.handlers],
        }


def handler_json(outcome: HandlerOutcome) -> JsonDict:
    return {
        "handler": outcome.label,
        "type": outcome.handler_type,
        "source": outcome.source,
        "decision": outcome.decision,
        "duration_ms": outcome.duration_ms,
        "error": outcome.failure.message if outcome.failure else None,
        "refused": list(outcome.refused),
    }


def refuse_beyond_capabilities(
    reply: HookReply, capabilities: frozenset[HookCapability]
) -> tuple[HookReply, tuple[str, ...]]:
    """Drop what `reply` asks for beyond the declared capabilities; return the kept reply and what was refused."""
    refused: list[str] = []
    changes: dict[str, object] = {}
    if "block" not in capabilities:
        if reply.block:
            refused.append("block")
            changes.update(block=False, block_reason=None)
        if reply.permission is not None:
            refused.append(f"permissionDecision: {reply.permission}")
            changes.update(permission=None, permission_reason=None)
        if not reply.continue_:
            refused.append("continue: false")
            changes.update(continue_=True, stop_reason=None)
    if "rewrite" not in capabilities:
        if reply.updated_input is not None:
            refused.append("updatedInput")
            changes["updated_input"] = None
        if reply.updated_request is not None:
            refused.append("updatedRequest")
            changes["updated_request"] = None
        if reply.updated_output is not None:
            refused.append("updatedToolOutput")
            changes["updated_output"] = None
    if "context" not in capabilities and reply.additional_context is not None:
        refused.append("additionalContext")
        changes["additional_context"] = None
    return (replace(reply, **changes) if changes else reply), tuple(refused)  # pyright: ignore[reportArgumentType]


def _fail_reply(event: str, label: str, failure: HandlerFailure, on_failure: str) -> HookReply:
    notice = f"hook {label} failed: {failure.message}"
    if on_failure != "block":
        return HookReply(system_message=notice, raw=failure.raw)
    closed = f"{notice}; it is declared on_failure: block, so this fails closed"
    if event in BLOCKING_EVENTS:
        return HookReply(block=True, block_reason=closed, system_message=notice, raw=failure.raw)
    if event == "SessionEnd":
        return HookReply(system_message=notice, raw=failure.raw)
    return HookReply(continue_=False, stop_reason=closed, system_message=notice, raw=failure.raw)


def _decision_of(reply: HookReply, failure: HandlerFailure | None, on_failure: str) -> HookDecision:
    if failure is not None:
        return "block" if on_failure == "block" else "error"
    if reply.block or not reply.continue_:
        return "block"
    if reply.permission is not None:
        return reply.permission
    if reply.updated_input is not None or reply.updated_request is not None or reply.updated_output is not None:
        return "rewrite"
    if reply.additional_context is not None:
        return "context"
    return "none"


def resolve(
    event: str, spec: HookHandlerSpec, source: str, label: str, result: HandlerResult, duration_ms: int
) -> HandlerOutcome:
    """One handler's answer after `on_failure`, its declared capabilities and what the event can do."""
    if isinstance(result, HandlerFailure):
        reply = _fail_reply(event, label, result, spec.on_failure)
        return HandlerOutcome(
            label, spec.type, source, _decision_of(reply, result, spec.on_failure), duration_ms, reply, result
        )
    reply, refused = refuse_beyond_capabilities(result, spec.capabilities)
    notes = list(reply.notes)
    if reply.block and event not in BLOCKING_EVENTS:
        notes.append(f"a block has no effect on {event}")
        reply = replace(
            reply, block=False, system_message=reply.system_message or reply.block_reason, block_reason=None
        )
    if refused:
        declared = ", ".join(sorted(spec.capabilities)) or "none"
        message = (
            f"hook {label} ({source or 'config'}) asked for {', '.join(refused)} beyond its declared "
            f"capabilities [{declared}]; that part of its output was ignored (add the capability to allow it)"
        )
        messages = [m for m in (reply.system_message, message) if m]
        reply = replace(reply, system_message="\n".join(messages))
    if notes:
        reply = replace(reply, notes=tuple(notes))
    return HandlerOutcome(
        label, spec.type, source, _decision_of(reply, None, spec.on_failure), duration_ms, reply, None, refused
    )


def background_outcome(
    spec: HookHandlerSpec, source: str, label: str, result: HandlerResult, duration_ms: int
) -> HandlerOutcome:
    """An `async` handler's run: recorded with its output, but nothing it answered decides anything (as in Claude
    Code, decision fields of an async hook have no effect); a failure is reported, never blocks."""
    if isinstance(result, HandlerFailure):
        reply = HookReply(system_message=f"hook {label} failed: {result.message}", raw=result.raw)
        return HandlerOutcome(label, spec.type, source, "error", duration_ms, reply, result)
    return HandlerOutcome(label, spec.type, source, "none", duration_ms, HookReply(raw=result.raw))


def rewake_text(result: HandlerResult) -> str | None:
    """The wake-up message of an `asyncRewake` handler: its stderr when it exited 2 (a block, or on an event that
    cannot block the message shown to the user); None for any other exit or a JSON answer."""
    if isinstance(result, HandlerFailure) or result.raw is not None:  # raw: it answered JSON or text (exit 0)
        return None
    if result.block and result.block_reason:
        return result.block_reason
    return result.system_message or None


def _patch(original: Mapping[str, JsonValue], replacements: Sequence[JsonDict]) -> JsonDict:
    """Apply full-replacement objects as top-level patches against `original`, in order."""
    result: JsonDict = dict(original)
    for replacement in replacements:
        for key in original:
            if key not in replacement:
                result.pop(key, None)
        for key, value in replacement.items():
            if key not in original or original[key] != value:
                result[key] = value
    return result


def bounded_output(raw: JsonDict | None) -> JsonDict | None:
    """A handler's parsed output as the log keeps it (a summary when it is larger than 16,000 characters)."""
    if raw is None:
        return None
    text = json.dumps(raw, default=str)
    if len(text) <= 16_000:
        return raw
    return {"truncated": True, "keys": sorted(raw)[:50], "size_chars": len(text)}


def merge(
    event: str,
    fields: Mapping[str, JsonValue],
    outcomes: Sequence[HandlerOutcome],
    problems: Sequence[str],
    *,
    max_context_chars: int,
    background: int = 0,
) -> HookOutcome:
    """The one decision of `outcomes` (in config order; see the module docstring). `problems` are shown first."""
    replies = [o.reply for o in outcomes]
    block_reasons = [r.block_reason or "blocked by hook" for r in replies if r.block]
    permission: PermissionDecision | None = None
    permission_reason: str | None = None
    for reply in replies:
        if reply.permission is not None and (
            permission is None or _PERMISSION_RANK[reply.permission] > _PERMISSION_RANK[permission]
        ):
            permission, permission_reason = reply.permission, reply.permission_reason
    updated_input: JsonDict | None = None
    updated_request: JsonDict | None = None
    inputs = [r.updated_input for r in replies if r.updated_input is not None]
    if inputs and not block_reasons and permission != "deny":
        original = fields.get("tool_input")
        updated_input = _patch(cast(Mapping[str, JsonValue], original) if isinstance(original, Mapping) else {}, inputs)
    requests = [r.updated_request for r in replies if r.updated_request is not None]
    if requests and not block_reasons:
        original = fields.get("model_request")
        updated_request = _patch(
            cast(Mapping[str, JsonValue], original) if isinstance(original, Mapping) else {}, requests
        )
    outputs = [r.updated_output for r in replies if r.updated_output is not None]
    contexts = [r.additional_context for r in replies if r.additional_context]
    stops = [r for r in replies if not r.continue_]
    messages = [*problems, *(r.system_message for r in replies if r.system_message)]
    messages += [f"hook note: {note}" for r in replies for note in r.notes]
    return HookOutcome(
        event=event,
        blocked=bool(block_reasons),
        block_reason=bound_text("\n".join(block_reasons)) if block_reasons else None,
        permission=permission,
        permission_reason=permission_reason,
        updated_input=updated_input,
        updated_request=updated_request,
        updated_output=outputs[-1] if outputs else None,  # a full replacement: the last in config order wins
        additional_context=bound_text("\n\n".join(contexts), max_context_chars) if contexts else None,
        continue_=not stops,
        stop_reason=(
            next((r.stop_reason for r in stops if r.stop_reason), "stopped by a hook (continue: false)")
            if stops
            else None
        ),
        system_messages=tuple(messages),
        handlers=tuple(outcomes),
        background=background,
    )


__all__ = [
    "HandlerOutcome",
    "HookDecision",
    "HookOutcome",
    "background_outcome",
    "bounded_output",
    "handler_json",
    "merge",
    "refuse_beyond_capabilities",
    "resolve",
]

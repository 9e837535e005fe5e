"""Fire one hook event: find the matching handlers, run them in parallel, merge their answers deterministically.

Order and merge (documented in docs/hooks.md):
- Handlers of one event run concurrently (as in Claude Code); identical handlers run once. Their answers are
  merged in config order (group order, then handler order), so the result never depends on who finished first.
- Blocks (exit 2, `decision: block`, `ok: false`) win; then `permissionDecision` deny > ask > allow.
- `updatedInput` / `updatedRequest`: each is read as a full replacement of the original (Claude Code's meaning) and
  applied in config order as a top-level patch against the original, so independent rewrites compose and a later
  handler wins on the same key.
- `additionalContext` from every handler, joined in config order and bounded; `continue: false` from any handler
  stops the run with the first `stopReason`; every `systemMessage` and every handler error is shown to the user.
Beyond Claude Code: `on_failure`, declared capabilities, and a cap on consecutive Stop/SubagentStop blocks.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.run_events import HookExecutedV1
from bearagent.domain.specs import HookCapability, HookEventName, HookHandlerSpec, HookMatcherSpec
from bearagent.hooks.protocol import (
    BLOCKING_EVENTS,
    MAX_TEXT_CHARS,
    CommonInput,
    HandlerFailure,
    HandlerResult,
    HookReply,
    JsonDict,
    PermissionDecision,
    bound_text,
    build_hook_input,
    match_target,
)
from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction, RunnerContext, describe_handler, run_handler
from bearagent.hooks.transcript import TranscriptWriter
from bearagent.runtime.plan import STOP_BLOCK_CAP

if TYPE_CHECKING:
    from bearagent.sandbox.settings import SandboxSettings

firing_hook_event: ContextVar[str | None] = ContextVar("bearagent_firing_hook_event", default=None)
"""The hook event whose handler is running in this task (None outside handlers): a judge run started by a handler
uses it to never fire hooks of the same event again."""

DEFAULT_STOP_BLOCK_CAP = STOP_BLOCK_CAP
HookDecision: TypeAlias = Literal["none", "allow", "deny", "ask", "block", "rewrite", "context", "error"]
HookRecorder = Callable[[HookExecutedV1], "None | Awaitable[None]"]
_SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_\-, |]+$")
_PERMISSION_RANK: Mapping[str, int] = {"allow": 1, "ask": 2, "deny": 3}
STOP_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})


@lru_cache(maxsize=512)
def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """None, "" and "*" match everything; only `[A-Za-z0-9_-, |]` is an exact name or a `|`/`,` list; anything
    else is a regular expression that must match the WHOLE name (`mcp__memory__.*`). Raises `ValueError` for a
    regex that does not compile."""
    if matcher is None or matcher.strip() in ("", "*"):
        return lambda _name: True
    if _SIMPLE_MATCHER.match(matcher):
        names = frozenset(part.strip() for part in re.split(r"[|,]", matcher) if part.strip())
        return lambda name: name in names
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"matcher {matcher!r} is not a valid regular expression: {exc}") from None
    return lambda name: pattern.fullmatch(name) is not None


def matcher_matches(matcher: str | None, target: str | None) -> bool:
    """Whether a group's matcher selects `target` (None = the event has no matcher support: everything runs)."""
    check = compile_matcher(matcher)
    return True if target is None else check(target)


@dataclass(frozen=True, slots=True)
class HookSettings:
    workspace_root: Path
    session_id: str
    permission_mode: str = "default"
    stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP
    max_context_chars: int = MAX_TEXT_CHARS
    env: Mapping[str, str] | None = None
    """Environment for command and http handlers (and `${VAR}` expansion); None = `os.environ` at fire time."""
    cwd: Path | None = None
    """The `cwd` input field; None = the workspace root."""
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings: with `hooks: true`, command handlers run in the sandbox (None = off)."""


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
    additional_context: str | None = None
    continue_: bool = True
    stop_reason: str | None = None
    system_messages: tuple[str, ...] = ()
    handlers: tuple[HandlerOutcome, ...] = ()
    stop_cap_overridden: bool = False

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
            "additionalContext": self.additional_context,
            "systemMessages": list(self.system_messages),
            "stopCapOverridden": self.stop_cap_overridden,
            "handlers": [
                {
                    "handler": h.label,
                    "type": h.handler_type,
                    "source": h.source,
                    "decision": h.decision,
                    "duration_ms": h.duration_ms,
                    "error": h.failure.message if h.failure else None,
                    "refused": list(h.refused),
                }
                for h in self.handlers
            ],
        }


@dataclass(frozen=True, slots=True)
class _Selected:
    group: HookMatcherSpec
    spec: HookHandlerSpec


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
    if reply.updated_input is not None or reply.updated_request is not None:
        return "rewrite"
    if reply.additional_context is not None:
        return "context"
    return "none"


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


def _bounded_output(raw: JsonDict | None) -> JsonDict | None:
    if raw is None:
        return None
    import json

    text = json.dumps(raw, default=str)
    if len(text) <= 16_000:
        return raw
    return {"truncated": True, "keys": sorted(raw)[:50], "size_chars": len(text)}


class HookDispatcher:
    """Runs the hooks of one session. `record` receives one `HookExecutedV1` per handler execution (sync or async);
    the caller appends it to the run's event log."""

    def __init__(
        self,
        groups: Sequence[HookMatcherSpec],
        *,
        settings: HookSettings,
        transcript: TranscriptWriter,
        python_handlers: Mapping[str, PythonHookFunction] | None = None,
        judge: Judge | None = None,
        agent_judge: AgentJudge | None = None,
        record: HookRecorder | None = None,
    ) -> None:
        self._groups = tuple(groups)
        self._python_handlers = dict(python_handlers or {})
        self._judge = judge
        self._agent_judge = agent_judge
        self._record = record
        self.transcript = transcript
        self.settings = settings
        self._stop_blocks: dict[tuple[str, str | None, str | None], int] = {}

    @property
    def groups(self) -> tuple[HookMatcherSpec, ...]:
        return self._groups

    def has_hooks(self, event_name: HookEventName) -> bool:
        return any(group.event == event_name for group in self._groups)

    def _select(self, event: str, target: str | None, agent_name: str | None) -> tuple[list[_Selected], list[str]]:
        selected: list[_Selected] = []
        problems: list[str] = []
        seen: set[str] = set()
        for group in self._groups:
            if group.event != event or (group.agent is not None and group.agent != agent_name):
                continue
            try:
                if not matcher_matches(group.matcher, target):
                    continue
            except ValueError as exc:
                problems.append(f"{group.source or 'hooks'}: {exc}; fix the matcher (this group did not run)")
                continue
            for spec in group.hooks:
                key = spec.model_dump_json()
                if key in seen:
                    continue
                seen.add(key)
                selected.append(_Selected(group, spec))
        return selected, problems

    async def fire(
        self,
        event_name: HookEventName,
        payload: Mapping[str, JsonValue],
        *,
        tool_name: str | None = None,
        run_id: str | None = None,
        agent_name: str | None = None,
        permission_mode: str | None = None,
    ) -> HookOutcome:
        """Run every handler matching `event_name` with `payload` (the event's own fields; common fields are added
        here) and merge their answers. `tool_name` overrides the matcher target; `permission_mode` overrides the
        session's for this event. Hooks scoped to an agent (`HookMatcherSpec.agent`) run only when `agent_name`
        names that agent."""
        if not self.has_hooks(event_name):
            return HookOutcome(event=event_name)
        fields = dict(payload)
        agent_id = fields.get("agent_id")
        stop_key = (event_name, run_id, agent_id if isinstance(agent_id, str) else None)
        if event_name in STOP_EVENTS and "stop_hook_active" not in fields:
            fields["stop_hook_active"] = self._stop_blocks.get(stop_key, 0) > 0
        settings = self.settings
        common = CommonInput(
            session_id=settings.session_id,
            transcript_path=str(self.transcript.path),
            cwd=str(settings.cwd or settings.workspace_root),
            hook_event_name=event_name,
            permission_mode=permission_mode or settings.permission_mode,
            run_id=run_id,
            agent_name=agent_name,
        )
        hook_input = build_hook_input(common, fields)
        target = tool_name if tool_name is not None else match_target(event_name, fields)
        selected, problems = self._select(event_name, target, agent_name)
        if not selected and not problems:
            return HookOutcome(event=event_name)
        ctx = RunnerContext(
            workspace_root=settings.workspace_root,
            env=dict(settings.env if settings.env is not None else os.environ),
            python_handlers=self._python_handlers,
            judge=self._judge,
            agent_judge=self._agent_judge,
            sandbox=settings.sandbox,
        )
        results = await asyncio.gather(*(self._timed(item.spec, event_name, hook_input, ctx) for item in selected))
        outcomes: list[HandlerOutcome] = []
        for item, (result, duration_ms) in zip(selected, results, strict=True):
            outcome = self._resolve(event_name, item, result, duration_ms)
            outcomes.append(outcome)
            await self._emit(event_name, outcome, item.spec)
        merged = self._merge(event_name, fields, outcomes, problems)
        if event_name in STOP_EVENTS:
            merged = await self._apply_stop_cap(merged, stop_key)
        return merged

    async def _timed(
        self, spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext
    ) -> tuple[HandlerResult, int]:
        firing_hook_event.set(event)  # this handler's own task: judges started from here know what fired them
        started = time.monotonic()
        result = await run_handler(spec, event, hook_input, ctx)
        return result, int((time.monotonic() - started) * 1000)

    def _resolve(self, event: str, item: _Selected, result: HandlerResult, duration_ms: int) -> HandlerOutcome:
        spec = item.spec
        label = describe_handler(spec)
        if isinstance(result, HandlerFailure):
            reply = _fail_reply(event, label, result, spec.on_failure)
            return HandlerOutcome(
                label,
                spec.type,
                item.group.source,
                _decision_of(reply, result, spec.on_failure),
                duration_ms,
                reply,
                result,
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
                f"hook {label} ({item.group.source or 'config'}) asked for {', '.join(refused)} beyond its declared "
                f"capabilities [{declared}]; that part of its output was ignored (add the capability to allow it)"
            )
            messages = [m for m in (reply.system_message, message) if m]
            reply = replace(reply, system_message="\n".join(messages))
        if notes:
            reply = replace(reply, notes=tuple(notes))
        return HandlerOutcome(
            label,
            spec.type,
            item.group.source,
            _decision_of(reply, None, spec.on_failure),
            duration_ms,
            reply,
            None,
            refused,
        )

    async def _emit(self, event: str, outcome: HandlerOutcome, spec: HookHandlerSpec) -> None:
        if self._record is None:
            return
        error: ErrorInfo | None = None
        reply = outcome.reply
        if outcome.failure is not None:
            error = ErrorInfo.of(
                "hook", outcome.failure.kind, bound_text(f"{outcome.label}: {outcome.failure.message}", 1_900)
            )
        elif outcome.refused:
            error = ErrorInfo.of(
                "hook",
                "capability_refused",
                bound_text(f"{outcome.label}: refused {', '.join(outcome.refused)}", 1_900),
            )
        reason = reply.block_reason or reply.stop_reason or reply.permission_reason
        if reason is None and outcome.failure is not None:
            reason = outcome.failure.message
        payload = HookExecutedV1(
            hook_event=event,
            handler=outcome.label[:512],
            handler_type=spec.type,
            duration_ms=outcome.duration_ms,
            decision=outcome.decision,
            reason=bound_text(reason, 4_000) if reason else None,
            error=error,
            output=_bounded_output(reply.raw),
        )
        result = self._record(payload)
        if inspect.isawaitable(result):
            await result

    def _merge(
        self, event: str, fields: Mapping[str, JsonValue], outcomes: Sequence[HandlerOutcome], problems: Sequence[str]
    ) -> HookOutcome:
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
            updated_input = _patch(
                cast(Mapping[str, JsonValue], original) if isinstance(original, Mapping) else {}, inputs
            )
        requests = [r.updated_request for r in replies if r.updated_request is not None]
        if requests and not block_reasons:
            original = fields.get("model_request")
            updated_request = _patch(
                cast(Mapping[str, JsonValue], original) if isinstance(original, Mapping) else {}, requests
            )
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
            additional_context=bound_text("\n\n".join(contexts), self.settings.max_context_chars) if contexts else None,
            continue_=not stops,
            stop_reason=(
                next((r.stop_reason for r in stops if r.stop_reason), "stopped by a hook (continue: false)")
                if stops
                else None
            ),
            system_messages=tuple(messages),
            handlers=tuple(outcomes),
        )

    async def _apply_stop_cap(self, outcome: HookOutcome, key: tuple[str, str | None, str | None]) -> HookOutcome:
        if not outcome.blocked:
            self._stop_blocks.pop(key, None)
            return outcome
        count = self._stop_blocks.get(key, 0) + 1
        cap = self.settings.stop_block_cap
        if count <= cap:
            self._stop_blocks[key] = count
            return outcome
        self._stop_blocks.pop(key, None)
        note = (
            f"{outcome.event} hooks blocked stopping {count} times in a row; the cap ({cap}) overrides them and lets "
            "the agent stop (make the hook honour `stop_hook_active`: when it is true, let the agent stop)"
        )
        if self._record is not None:
            result = self._record(
                HookExecutedV1(
                    hook_event=outcome.event,
                    handler="bearagent: stop-hook block cap",
                    handler_type="builtin",
                    duration_ms=0,
                    decision="allow",
                    reason=note,
                )
            )
            if inspect.isawaitable(result):
                await result
        return replace(
            outcome,
            blocked=False,
            block_reason=None,
            stop_cap_overridden=True,
            system_messages=(*outcome.system_messages, note),
        )


__all__ = [
    "DEFAULT_STOP_BLOCK_CAP",
    "HandlerOutcome",
    "HookDecision",
    "HookDispatcher",
    "HookOutcome",
    "HookRecorder",
    "HookSettings",
    "compile_matcher",
    "matcher_matches",
    "refuse_beyond_capabilities",
]

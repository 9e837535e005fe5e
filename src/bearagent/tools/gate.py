"""The tool gate: the one path every tool call takes, whatever its source.

exact lookup -> input size cap -> `prepare` (schema + normalise) -> PreToolUse interceptor (may block, deny, ask,
allow, rewrite arguments - re-prepared - or add context) -> policy (chat workspace, allowlist, permission rules,
mode default; `ask` goes to the asker or becomes a denial that names the config line to add) -> executor under a
timeout -> output cap -> PostToolUse interceptor (context or block reason folded into the result) -> `ToolResult`.

Nothing but `asyncio.CancelledError` leaves `call`: every failure is a failed `ToolResult` the model can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterable, Mapping

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.tools import MAX_TOOL_CONTENT_CHARS, ToolRequest, ToolResult, ToolSpec
from bearagent.ports import (
    ApprovalDeferred,
    PermissionRequestHook,
    PreToolDecision,
    Tool,
    ToolContext,
    ToolInterceptor,
)
from bearagent.ports import AskAnswer as AskAnswer
from bearagent.ports import Asker as Asker
from bearagent.ports import AskRequest as AskRequest
from bearagent.rewind.workspace_writes import WritesRecord
from bearagent.rewind.written import counts_as_write
from bearagent.rewind.written import mark as mark_written
from bearagent.tools.permissions import PermissionRule, RuleError
from bearagent.tools.policy import PolicyDecision, ToolPolicy, permission_config_line
from bearagent.tools.roots import additional_directories
from bearagent.tools.spill import spill
from bearagent.tools.walk import HIDDEN_PATHS_SETTING

_SEARCH_TOOLS = frozenset({"Glob", "Grep", "LS"})


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """The name -> Tool mapping a gate takes, keyed by each tool's spec name."""
    return {tool.spec.name: tool for tool in tools}


class ToolGate:
    """Runs tool calls for one agent: `await gate.call(request, context)` always returns a `ToolResult`."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        policy: ToolPolicy | None = None,
        interceptor: ToolInterceptor | None = None,
        ask: Asker | None = None,
        writes: WritesRecord | None = None,
    ) -> None:
        self._tools: dict[str, Tool] = dict(tools)
        self.policy = policy or ToolPolicy()
        self._interceptor = interceptor
        self._ask = ask
        self._writes = writes
        """The user's durable record of where runs wrote (`rewind/workspace_writes.py`); None: this process only."""

    @property
    def tools(self) -> Mapping[str, Tool]:
        return self._tools

    @property
    def asker(self) -> Asker | None:
        """Who answers this gate's approvals (None: nobody, an `ask` is denied): `sandbox.review` asks it too."""
        return self._ask

    async def _record_write(self, tool: str, request: ToolRequest, context: ToolContext) -> ErrorInfo | None:
        """Record durably, before it runs, that this call may write the workspace and the additional directories,
        so a later process's hooks and MCP servers of those workspaces run confined until the next trust decision.
        A record that cannot be written refuses the call (a later process could not know of its writes)."""
        if self._writes is None:
            return None
        roots = [str(context.workspace_root), *additional_directories(context.settings)]
        first = f"the model's {tool} call {request.tool_call_id} of session {context.session_id}"
        try:
            await asyncio.to_thread(self._writes.note, roots, first)
        except OSError as exc:
            return self._writes.unwritable(tool, exc)
        return None

    def specs(self) -> list[ToolSpec]:
        """The specs the model may see: tools the policy makes available and no bare deny rule removes."""
        return [
            t.spec
            for name, t in self._tools.items()
            if self.policy.available(name) and not self.policy.rules.denies_whole_tool(name)
        ]

    async def call(self, request: ToolRequest, context: ToolContext) -> ToolResult:
        started = time.perf_counter()
        try:
            result = await self._call(request, context, started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a hook or in the gate itself must still not kill the run
            result = _failed(
                request,
                ErrorInfo.of("internal", "tool_gate", f"Internal error while running {request.name}: {_describe(exc)}"),
            )
        return result.model_copy(update={"duration_ms": int((time.perf_counter() - started) * 1000)})

    async def _call(self, request: ToolRequest, context: ToolContext, started: float) -> ToolResult:
        tool = self._tools.get(request.name)
        if tool is None or not self.policy.available(request.name):
            return _failed(request, self._not_available(request.name))
        spec = tool.spec
        size = _json_size(request.arguments)
        if size > spec.max_input_bytes:
            return _failed(
                request,
                ErrorInfo.of(
                    "validation",
                    "input_too_large",
                    f"The arguments of {spec.name} are about {size} bytes; the limit is {spec.max_input_bytes}. "
                    "Send smaller arguments (e.g. split a large Write into several Edits).",
                    size=size,
                ),
            )
        if context.tool_call_id != request.tool_call_id:
            context = dataclasses.replace(context, tool_call_id=request.tool_call_id)
        prepared = _prepare(tool, request.arguments, context)
        if isinstance(prepared, ErrorInfo):
            return _failed(request, prepared)
        arguments = prepared

        pre: PreToolDecision | None = None
        if self._interceptor is not None:
            pre = await self._interceptor.before_tool(
                request.model_copy(update={"arguments": arguments}), spec, context
            )
            if pre.block or pre.permission == "deny":
                reason = pre.reason or "no reason given"
                return _failed(
                    request,
                    ErrorInfo.of(
                        "permission", "blocked_by_hook", f"{spec.name} call blocked by a PreToolUse hook: {reason}"
                    ),
                    extra=pre.additional_context,
                )
            if pre.updated_arguments is not None:
                prepared = _prepare(tool, pre.updated_arguments, context)
                if isinstance(prepared, ErrorInfo):
                    return _failed(
                        request,
                        prepared.model_copy(
                            update={
                                "message": "A PreToolUse hook rewrote the arguments into invalid ones: "
                                + prepared.message
                            }
                        ),
                    )
                arguments = prepared

        decision = self.policy.decide(spec, arguments, context.workspace_root)
        if pre is not None and pre.permission is not None:
            decision = _combine(decision, pre)
        if decision.outcome == "ask":
            decision, arguments = await self._resolve_ask(tool, request, arguments, context, decision)
        if decision.outcome == "deny":
            return _failed(
                request,
                ErrorInfo.of("permission", "denied", decision.reason, tool=spec.name),
                extra=pre and pre.additional_context,
            )

        if spec.name in _SEARCH_TOOLS:
            hidden = self.policy.rules.hidden_paths(spec.name)
            if hidden:
                context = dataclasses.replace(context, settings={**context.settings, HIDDEN_PATHS_SETTING: hidden})
        if counts_as_write(spec.side_effect):  # from here on the session's command hooks run confined
            mark_written(context.workspace_root, context.session_id, spec.name, request.tool_call_id)
            unrecorded = await self._record_write(spec.name, request, context)
            if unrecorded is not None:
                return _failed(request, unrecorded)
        try:
            async with asyncio.timeout(spec.timeout_ms / 1000):
                result = await tool.execute(arguments, context)
        except TimeoutError:
            return _failed(
                request,
                ErrorInfo.of(
                    "timeout",
                    "tool_timeout",
                    f"{spec.name} did not finish within {spec.timeout_ms / 1000:g} s and was stopped. "
                    "Try a smaller task, or raise the tool's timeout.",
                    timeout_ms=spec.timeout_ms,
                ),
            )
        except BearAgentError as exc:
            return _failed(request, exc.info)
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            return _failed(
                request,
                ErrorInfo.of(
                    "tool", "crashed", f"{spec.name} failed with an unexpected error: {_describe(exc)}", tool=spec.name
                ),
            )
        result = _stamp(result, request, spec, context)
        extra_context = pre.additional_context if pre is not None else None
        if self._interceptor is not None:
            post = await self._interceptor.after_tool(
                request.model_copy(update={"arguments": arguments}), spec, result, context
            )
            if post.updated_output is not None and not result.is_error:
                result = _replaced(result, post.updated_output)
            notes = [n for n in (extra_context, post.additional_context) if n]
            if post.block_reason:
                notes.append(f"PostToolUse hook feedback: {post.block_reason}")
            if notes:
                result = _append(result, "\n\n".join(notes))
        elif extra_context:
            result = _append(result, extra_context)
        return result

    async def _resolve_ask(
        self, tool: Tool, request: ToolRequest, arguments: JsonMapping, context: ToolContext, decision: PolicyDecision
    ) -> tuple[PolicyDecision, JsonMapping]:
        spec = tool.spec
        if context.parallel and self._ask is not None:
            raise ApprovalDeferred  # asked alone, after its batch: never several prompts at once
        hooked = await self._permission_hooks(tool, request, arguments, context, decision)
        if hooked is not None:
            return hooked
        return await self._ask_someone(spec, arguments, context, decision), arguments

    async def _permission_hooks(
        self, tool: Tool, request: ToolRequest, arguments: JsonMapping, context: ToolContext, decision: PolicyDecision
    ) -> tuple[PolicyDecision, JsonMapping] | None:
        """Claude Code's PermissionRequest hooks answer the prompt before anyone sees it: `deny` refuses the call,
        `allow` approves it (with `updatedInput` re-validated and re-checked by the rules), unless only a person may
        answer (a control file). None: no hook decided."""
        hook = self._interceptor
        if not isinstance(hook, PermissionRequestHook):
            return None
        spec = tool.spec
        answer = await hook.permission_request(
            request.model_copy(update={"arguments": arguments}), spec, context, decision.suggested_rule or spec.name
        )
        said = f": {answer.message}" if answer.message else ""
        if answer.behavior == "deny":
            return PolicyDecision("deny", f"{spec.name} call was denied by a PermissionRequest hook{said}"), arguments
        if answer.behavior != "allow" or decision.person_only:
            return None
        if answer.updated_arguments is not None:
            prepared = _prepare(tool, answer.updated_arguments, context)
            if isinstance(prepared, ErrorInfo):
                reason = "A PermissionRequest hook rewrote the arguments into invalid ones: " + prepared.message
                return PolicyDecision("deny", reason), arguments
            again = self.policy.decide(spec, prepared, context.workspace_root)
            if again.outcome == "deny":
                return again, prepared
            if again.person_only:
                return await self._ask_someone(spec, prepared, context, again), prepared
            arguments = prepared
        return PolicyDecision("allow", f"allowed by a PermissionRequest hook{said}"), arguments

    async def _ask_someone(
        self, spec: ToolSpec, arguments: JsonMapping, context: ToolContext, decision: PolicyDecision
    ) -> PolicyDecision:
        rule = decision.suggested_rule or spec.name
        if self._ask is None:
            alternative = f" ({decision.alternative})" if decision.alternative else ""
            return PolicyDecision(
                "deny",
                f"{decision.reason} Nobody can approve it in this non-interactive run, so it was denied. "
                f"To allow it, add this to .bearagent/config.yaml: {permission_config_line(rule)}{alternative}.",
                rule=decision.rule,
                suggested_rule=rule,
            )
        answer = await self._ask(AskRequest(spec.name, arguments, decision.reason, decision.suggested_rule, context))
        if answer == "allow_once":
            return PolicyDecision("allow", "approved once by the user")
        if answer == "allow_always":
            with contextlib.suppress(RuleError):  # the call is still approved; only remembering it failed
                self.policy.add_allow_rule(PermissionRule.parse(rule, "allow", root=context.workspace_root))
            return PolicyDecision("allow", "approved by the user (remembered for this session)")
        return PolicyDecision("deny", f"{spec.name} call was denied by the user.")

    def _not_available(self, name: str) -> ErrorInfo:
        import difflib

        names = sorted(n for n in self._tools if self.policy.available(n))
        folded = [n for n in names if n.lower() == name.lower()]
        close = folded + [n for n in difflib.get_close_matches(name, names, n=3, cutoff=0.5) if n not in folded]
        names = close + [n for n in names if n not in close]  # the names it most likely meant first
        shown = ", ".join(names[:8]) + (f" (and {len(names) - 8} more)" if len(names) > 8 else "")
        return ErrorInfo.of(
            "tool",
            "not_available",
            f"Tool {name[:100]!r} is not available to this agent. "
            + (f"Available tools: {shown}. Call one of these names exactly." if names else "This agent has no tools."),
            tool=name[:100],
        )


def _prepare(tool: Tool, arguments: JsonMapping, context: ToolContext) -> JsonMapping | ErrorInfo:
    try:
        return tool.prepare(arguments, context)
    except BearAgentError as exc:
        return exc.info
    except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        return ErrorInfo.of(
            "validation", "invalid_arguments", f"Invalid arguments for {tool.spec.name}: {_describe(exc)}"
        )


def _combine(decision: PolicyDecision, pre: PreToolDecision) -> PolicyDecision:
    """A hook's permission: deny always wins; ask forces a prompt; allow skips a prompt but never a deny rule, nor
    a prompt only a person may answer (a change to a control file)."""
    reason = pre.reason or "PreToolUse hook"
    if pre.permission == "ask" and decision.outcome == "allow":
        return PolicyDecision(
            "ask", f"A PreToolUse hook asks for approval: {reason}.", suggested_rule=decision.suggested_rule
        )
    if pre.permission == "allow" and decision.outcome == "ask" and not decision.person_only:
        return PolicyDecision("allow", f"allowed by a PreToolUse hook: {reason}")
    return decision


def _failed(request: ToolRequest, error: ErrorInfo, *, extra: str | None = None) -> ToolResult:
    result = ToolResult.failure(request, error)
    return _append(result, extra) if extra else result


def _replaced(result: ToolResult, output: str) -> ToolResult:
    """A PostToolUse hook's `updatedToolOutput`: the model reads `output`; the tool's own content stays in the log, in
    `data.hook_original_content`."""
    data = {
        **(thaw_json_mapping(result.data) if result.data is not None else {}),
        "hook_original_content": result.content,
    }
    content = output if len(output) <= MAX_TOOL_CONTENT_CHARS else output[: MAX_TOOL_CONTENT_CHARS - 1] + "…"
    return result.model_copy(update={"content": content, "data": frozen_json(data)})


def _append(result: ToolResult, note: str) -> ToolResult:
    content = result.content + ("\n\n" if result.content else "") + note
    if len(content) > MAX_TOOL_CONTENT_CHARS:
        content = content[: MAX_TOOL_CONTENT_CHARS - 1] + "…"
    return result.model_copy(update={"content": content})


def _stamp(result: ToolResult, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> ToolResult:
    update: dict[str, object] = {}
    if result.tool_call_id != request.tool_call_id or result.tool_name != request.name:
        update["tool_call_id"] = request.tool_call_id
        update["tool_name"] = request.name
    limit = spec.max_output_chars
    if len(result.content) > limit and (kept := spill(result, request, spec, context)) is not None:
        return kept.model_copy(update=update) if update else kept
    if len(result.content) > limit:
        cut = len(result.content) - limit
        note = f"\n\n[output truncated: {cut} of {len(result.content)} characters cut, limit {limit}]"
        keep = max(0, limit - len(note))
        update["content"] = result.content[:keep] + note
        update["truncated"] = True
    return result.model_copy(update=update) if update else result


def _json_size(value: JsonValue, budget: int = 1 << 62) -> int:
    """Approximate serialised size (strings dominate); cheap enough to run on every call."""
    kind = type(value)
    if kind is str:
        return len(value) + 2  # type: ignore[arg-type]
    if kind is int or kind is bool or kind is float or value is None:
        return 8
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, Mapping):
        return 2 + sum(len(k) + 3 + _json_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 2 + sum(_json_size(v) + 1 for v in value)
    return 8


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if len(text) > 300:
        text = text[:300] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

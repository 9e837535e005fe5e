"""One model turn of a run: the bounded request (with a PreModelRequest hook's say), its estimated size against the
model's window (`context_size.py`), `ModelCallRequested` (the budget check), the provider stream (token deltas
published live), retries with backoff, each attempt a fact, and `ModelCallCompleted` with the turn bounded
(`turn_bounds.py`); and the other model call a run makes, a compaction's summary (`compact`: which messages it
replaces is `compaction.py`), when the request is over the threshold or the provider said it overflowed.

Why it is over 400 lines: the summary call is a model call like a turn (admitted against the budgets, streamed,
retried, each attempt a fact), so it shares the stream and the failure path here instead of copying them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Literal

from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ActivityId, IdGenerator, ModelCallId, RunId
from bearagent.domain.messages import Message
from bearagent.domain.models import (
    MAX_TOOL_CALLS_PER_TURN,
    MAX_TURN_TEXT_CHARS,
    ModelCompleted,
    ModelRequest,
    ModelToolCall,
    TextDelta,
)
from bearagent.domain.overflow import is_context_overflow
from bearagent.domain.pricing import cost_microusd
from bearagent.domain.run_events import (
    ContextCompactedV1,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    ModelCallPurpose,
    ModelCallRequestedV4,
    ModelCallStartedV1,
    RecordedToolCall,
)
from bearagent.runtime.compaction import (
    MAX_TRANSCRIPT_HALVINGS,
    compacted,
    split_point,
    summary_request,
    transcript_chars,
)
from bearagent.runtime.context import ContextBuilder
from bearagent.runtime.context_size import ContextWindow, estimator_name, raw_estimate, resolve_context_window
from bearagent.runtime.loop_state import Active, LoopState, ModelTurn, RunFailure, admit, usage_of
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, CompactionPlan, LoopHooks
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_writer import RunWriter
from bearagent.runtime.turn_bounds import bound_turn


def falls_back(error: ErrorInfo) -> bool:
    """Whether a failed call moves the run to its fallback model: the model is overloaded, or unavailable (a server
    saying so, or a model the provider does not know)."""
    if error.category == "overloaded":
        return True
    if error.category == "server" and "unavailable" in error.code:
        return True
    return error.category == "not_found" and "model" in error.code


def retry_notice(error: ErrorInfo, partial_text: str, delay_s: float, next_attempt: int) -> str:
    """What the user is told when a failed model call is retried. When text had already streamed, the retry starts
    the answer over: the notice says the text shown so far is thrown away, so a different answer after it does not
    read as its continuation."""
    if partial_text:
        return (
            f"model call failed ({error.code}); the answer so far ({len(partial_text):,} chars) is discarded; "
            f"restarting in {delay_s:.1f}s (attempt {next_attempt})"
        )
    return f"model call failed ({error.code}); retrying in {delay_s:.1f}s (attempt {next_attempt})"


def positioned(state: LoopState, plan: AgentPlan | CompactionPlan, request: ModelRequest) -> ModelRequest:
    """`request` with the conversation's place (`ModelRequest.conversation_calls`) when it is the first call of the
    run to the conversation's provider; `request` itself otherwise."""
    if state.conversation_calls is None or plan.provider is not state.position_provider:
        return request
    told = request.model_copy(update={"conversation_calls": state.conversation_calls})
    state.conversation_calls = None
    return told


class ModelCalls:
    """Takes the model turns of the runs of one loop."""

    def __init__(
        self,
        *,
        writer: RunWriter,
        ids: IdGenerator,
        retry: RetryPolicy,
        hooks: LoopHooks | None,
        observer: RunObserver,
        context: ContextBuilder,
    ) -> None:
        self._writer = writer
        self._ids = ids
        self._retry = retry
        self._hooks = hooks
        self._observer = observer
        self._context = context

    def _request(self, state: LoopState, messages: Sequence[Message]) -> ModelRequest:
        """The request of the plan's model for `messages`, with the agent's reminder at the end."""
        plan = state.plan
        request_messages: Sequence[Message] = messages
        reminder = self._context.reminder_message(plan.system_reminder)
        if reminder is not None:
            request_messages = [*messages, reminder]
        if state.template is None or state.template_plan is not plan:
            state.template = ModelRequest(
                model=plan.model_name,
                messages=(messages[0],),
                tools=plan.descriptors,
                max_output_tokens=plan.max_output_tokens,
                temperature=plan.temperature,
                timeout_ms=plan.timeout_ms,
                # the system prompt's hash (RunCreated's `prompt_hash`): agent files carry no version of their own
                prompt_version=f"sha256:{self._context.prompt_hash(plan.system_prompt)}",
            )
            state.template_plan = plan
        return state.template.with_messages(request_messages)

    async def _admit_call(
        self,
        recorder: RunRecorder,
        state: LoopState,
        *,
        model_ref: str,
        attempt: int,
        estimated_input_tokens: int,
        estimator: str,
        context_window: int | None,
        context_window_source: str | None,
        provider_id: str | None,
        purpose: ModelCallPurpose = "turn",
    ) -> Active:
        """Record a new model call's Requested (v4) and Started facts (`admit`) and make it the active activity."""
        activity = Active(
            kind="model_call", activity_id=self._ids.new(ActivityId), model_call_id=self._ids.new(ModelCallId)
        )
        assert activity.model_call_id is not None
        await admit(
            recorder,
            ModelCallRequestedV4(
                activity_id=activity.activity_id,
                model_call_id=activity.model_call_id,
                model_ref=model_ref,
                attempt=attempt,
                purpose=purpose,
                estimated_input_tokens=estimated_input_tokens,
                estimator=estimator,
                context_window=context_window,
                context_window_source=context_window_source,
                provider=provider_id,
            ),
            ModelCallStartedV1(activity_id=activity.activity_id, model_call_id=activity.model_call_id),
        )
        state.active = activity
        return activity

    def _estimate(self, state: LoopState, messages: Sequence[Message]) -> int:
        """The corrected estimate of the request `messages` would make (without touching the calibration)."""
        request = self._request(state, messages)
        return state.context.calibration.apply(raw_estimate(request.messages, request.tools))

    async def _window(self, state: LoopState) -> ContextWindow:
        """The context window of the plan's model (resolved once per plan; the provider asks its server once)."""
        context, plan = state.context, state.plan
        if context.window is None or context.window_for is not plan:
            context.window = await resolve_context_window(plan.context_window, plan.provider, plan.model_name)
            context.window_for = plan
        return context.window

    async def turn(self, recorder: RunRecorder, state: LoopState, messages: list[Message]) -> ModelTurn:
        attempt = 1
        compacted_now = False  # one compaction per turn: what is kept verbatim may be over the threshold alone
        overflow_compacted = False
        while True:
            plan = state.plan
            if self._hooks is not None or state.context.window_for is not plan:
                await recorder.flush()  # a hook runs, or the model's server may be asked its window: facts first
            request = self._request(state, messages)
            if self._hooks is not None:
                decision = await self._hooks.pre_model_request(recorder.run_id, plan.agent_name, request)
                if decision.block_reason is not None:
                    raise RunFailure(
                        ErrorInfo.of(
                            "hook",
                            "model_request_blocked",
                            f"a PreModelRequest hook blocked the call: {decision.block_reason}",
                        )
                    )
                request = decision.request
            _raw, estimate = state.context.calibration.estimate(request)
            window = await self._window(state)
            compaction = plan.compaction
            if (
                not compacted_now
                and compaction is not None
                and compaction.enabled
                and window.tokens is not None
                and estimate > compaction.threshold * window.tokens
                and self._replaceable(state, messages, "threshold") > 0
            ):
                compacted_now = True
                self._observer.notice(
                    recorder.run_id,
                    f"the conversation is at ~{estimate:,} of {window.tokens:,} tokens "
                    f"(compaction.threshold {compaction.threshold:g}); compacting earlier turns",
                )
                if (
                    await self.compact(recorder, state, messages, trigger="threshold", tokens_before=estimate)
                    is not None
                ):
                    continue
            activity = await self._admit_call(
                recorder,
                state,
                model_ref=plan.model_ref,
                attempt=attempt,
                estimated_input_tokens=estimate,
                estimator=state.context.calibration.label,
                context_window=window.tokens,
                context_window_source=window.source,
                provider_id=plan.provider_id,
            )
            try:
                turn = await self._stream(recorder.run_id, plan, positioned(state, plan, request), activity)
            except BearAgentError as exc:
                partial = activity.partial_text
                if (
                    is_context_overflow(exc.info)
                    and not overflow_compacted
                    and compaction is not None
                    and compaction.enabled
                    and self._replaceable(state, messages, "overflow") > 0
                ):
                    # the request did not fit: compact once and try again; a second overflow fails the run
                    overflow_compacted = True
                    await self._record_failure(recorder, state, activity, plan, exc, will_retry=True)
                    self._observer.notice(
                        recorder.run_id,
                        "the request did not fit in the model's context window; compacting earlier turns",
                    )
                    if (
                        await self.compact(recorder, state, messages, trigger="overflow", tokens_before=estimate)
                        is not None
                    ):
                        attempt += 1
                        compacted_now = True
                        continue
                    state.partial_text = partial
                    raise RunFailure(exc.info, partial) from exc
                if exc.info.category != "max_output_tokens" or not partial or state.continuations_left <= 0:
                    await self._failed(recorder, state, activity, plan, exc, attempt)
                    attempt += 1
                    continue
                # the output limit cut the answer and it may be continued: the call completed with what it said
                # (no tool calls: a cut tool call cannot be trusted); the loop asks for the rest
                cut = ModelCompleted(stop_reason="max_output_tokens", usage=usage_of(exc))
                turn = ModelTurn(text=partial, tool_calls=[], completed=cut, text_chars=len(partial))
            completed = turn.completed
            state.context.calibration.observe(completed.usage.input_tokens)
            bounded = bound_turn(turn.text, turn.text_chars, turn.tool_calls, turn.calls_asked)
            turn.text, turn.tool_calls, turn.call_errors = bounded.text, bounded.tool_calls, bounded.call_errors
            assert activity.model_call_id is not None
            completion = ModelCallCompletedV2(
                activity_id=activity.activity_id,
                model_call_id=activity.model_call_id,
                usage=completed.usage,
                cost_microusd=cost_microusd(completed.usage, plan.price),
                text=turn.text,
                tool_calls=tuple(
                    RecordedToolCall(
                        tool_call_id=call.tool_call_id,
                        provider_call_id=call.provider_call_id,
                        name=call.name,
                        arguments=call.arguments,
                        invalid_arguments=call.invalid_arguments,
                    )
                    for call in turn.tool_calls
                ),
                provider_request_id=completed.provider_request_id,
                model=completed.model,
                stop_reason=completed.stop_reason,
                refusal=completed.refusal,
            )
            # the loop's next fact follows with no external action between (the first tool call's request, or a
            # final answer's RunSucceeded when no Stop hook runs first): the completion is held and committed with
            # it (`RunRecorder.hold`)
            if bounded.error is None and (turn.tool_calls or self._hooks is None):
                recorder.hold(completion)
            else:
                await recorder.append(completion)
            state.active = None
            if bounded.error is not None:
                raise RunFailure(bounded.error)
            return turn

    async def _failed(
        self,
        recorder: RunRecorder,
        state: LoopState,
        activity: Active,
        plan: AgentPlan,
        exc: BearAgentError,
        attempt: int,
    ) -> None:
        """Record a failed attempt, then wait before the next one, or end the run when it is not retried. An
        overloaded or unavailable model with a fallback (`fallbackModel`) switches the run to it at once."""
        partial = activity.partial_text
        fallback = state.plan.fallback
        if fallback is not None and falls_back(exc.info):
            await self._record_failure(recorder, state, activity, plan, exc, will_retry=True)
            self._observer.notice(
                recorder.run_id,
                f"model {plan.model_ref} is unavailable ({exc.info.code}); switching to the fallback model "
                f"{fallback.model_ref} (fallbackModel)",
            )
            state.plan = fallback  # the next attempt's ModelCallStarted names the fallback model
            return
        delay = self._retry.delay_for(exc.info, attempt)
        await self._record_failure(recorder, state, activity, plan, exc, will_retry=delay is not None)
        if delay is None:
            state.partial_text = partial
            raise RunFailure(exc.info, partial) from exc
        self._observer.notice(recorder.run_id, retry_notice(exc.info, partial, delay, attempt + 1))
        await asyncio.sleep(delay)

    async def _record_failure(
        self,
        recorder: RunRecorder,
        state: LoopState,
        activity: Active,
        plan: AgentPlan | CompactionPlan,
        exc: BearAgentError,
        *,
        will_retry: bool,
    ) -> None:
        assert activity.model_call_id is not None
        usage = usage_of(exc)
        await recorder.append(
            ModelCallFailedV2(
                activity_id=activity.activity_id,
                model_call_id=activity.model_call_id,
                usage=usage,
                cost_microusd=cost_microusd(usage, plan.price),
                error=exc.info,
                partial_text=activity.partial_text,
                will_retry=will_retry,
            )
        )
        state.active = None

    @staticmethod
    def _replaceable(state: LoopState, messages: Sequence[Message], trigger: str) -> int:
        """How many messages after the system prompt a compaction would replace (0: none)."""
        compaction = state.plan.compaction
        if compaction is None:
            return 0
        conversation = messages[1:]
        keep = compaction.keep_recent_turns
        replaced = split_point(conversation, keep)
        if replaced == 0 and trigger != "threshold" and keep > 1:
            replaced = split_point(conversation, 1)  # it did not fit, or the user asked: keep only the last turn
        return replaced

    async def compact(
        self,
        recorder: RunRecorder,
        state: LoopState,
        messages: list[Message],
        *,
        trigger: Literal["threshold", "overflow", "manual"],
        tokens_before: int | None = None,
        focus: str | None = None,
    ) -> ContextCompactedV1 | None:
        """Replace the earlier turns of `messages` (after its system prompt) by a summary the compaction model
        writes, in place, and return the fact; None when there is nothing to replace. The summary call is an activity of the run
        (budgets apply; retried like a model turn); `ContextCompacted` records the result."""
        compaction = state.plan.compaction
        if compaction is None:
            return None
        conversation = messages[1:]
        replaced = self._replaceable(state, messages, trigger)
        if replaced == 0:
            self._observer.notice(recorder.run_id, "nothing to compact: the conversation is its most recent turns")
            return None
        hook_trigger = "manual" if trigger == "manual" else "auto"
        if self._hooks is not None:
            decision = await self._hooks.pre_compact(recorder.run_id, state.plan.agent_name, hook_trigger, focus or "")
            if decision.block_reason is not None:
                message = f"a PreCompact hook blocked the compaction: {decision.block_reason}"
                if trigger == "manual":
                    raise RunFailure(ErrorInfo.of("hook", "compaction_blocked", message))
                self._observer.notice(recorder.run_id, message)
                return None
        if tokens_before is None:
            tokens_before = self._estimate(state, messages)
        request = summary_request(compaction, conversation[:replaced], focus)
        attempt = 1
        shrunk = 0  # how often the transcript was halved because the summary model's window could not hold it
        while True:
            activity = await self._admit_call(
                recorder,
                state,
                model_ref=compaction.model_ref,
                attempt=attempt,
                purpose="compaction",
                estimated_input_tokens=raw_estimate(request.messages),
                estimator=estimator_name(),
                context_window=compaction.context_window,
                context_window_source="config" if compaction.context_window is not None else None,
                provider_id=compaction.provider_id,
            )
            try:
                turn = await self._stream(
                    recorder.run_id, compaction, positioned(state, compaction, request), activity, live=False
                )
            except BearAgentError as exc:
                if is_context_overflow(exc.info) and shrunk < MAX_TRANSCRIPT_HALVINGS:
                    # the summary model's window is smaller than we knew: send it the newer half of what it got
                    shrunk += 1
                    await self._record_failure(recorder, state, activity, compaction, exc, will_retry=True)
                    chars = transcript_chars(request) // 2
                    request = summary_request(compaction, conversation[:replaced], focus, max_chars=chars)
                    attempt += 1
                    continue
                delay = self._retry.delay_for(exc.info, attempt)
                await self._record_failure(recorder, state, activity, compaction, exc, will_retry=delay is not None)
                if delay is None:
                    raise RunFailure(exc.info) from exc
                self._observer.notice(recorder.run_id, retry_notice(exc.info, "", delay, attempt + 1))
                await asyncio.sleep(delay)
                attempt += 1
                continue
            break
        summary = turn.text.strip()
        if not summary:
            error = ErrorInfo.of(
                "invalid_request",
                "empty_summary",
                f"the compaction model {compaction.model_ref} answered with no summary text, so the history could "
                "not be compacted; set `compaction.model` to a model that follows instructions, or try again",
            )
            await self._record_failure(recorder, state, activity, compaction, BearAgentError(error), will_retry=False)
            raise RunFailure(error)
        after = compacted(conversation, replaced, summary)
        tokens_after = self._estimate(state, [messages[0], *after])
        usage = turn.completed.usage
        assert activity.model_call_id is not None
        fact = ContextCompactedV1(
            activity_id=activity.activity_id,
            model_call_id=activity.model_call_id,
            usage=usage,
            cost_microusd=cost_microusd(usage, compaction.price),
            summary=summary[:MAX_TURN_TEXT_CHARS],
            replaced_messages=replaced,
            kept_messages=len(conversation) - replaced,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            trigger=trigger,
            focus=focus.strip()[:4_000] if focus and focus.strip() else None,
            model_ref=compaction.model_ref,
            model=turn.completed.model,
            provider_request_id=turn.completed.provider_request_id,
        )
        await recorder.append(fact)
        state.active = None
        messages[1:] = after
        state.context.shift += replaced - 1
        self._observer.notice(
            recorder.run_id,
            f"compacted {replaced} earlier messages into a summary (~{tokens_before:,} -> ~{tokens_after:,} tokens)",
        )
        if self._hooks is not None:
            await self._hooks.post_compact(recorder.run_id, state.plan.agent_name, hook_trigger, summary)
        return fact

    async def _stream(
        self,
        run_id: RunId,
        plan: AgentPlan | CompactionPlan,
        request: ModelRequest,
        activity: Active,
        *,
        live: bool = True,
    ) -> ModelTurn:
        text_parts: list[str] = []
        text_chars = 0
        tool_calls: list[ModelToolCall] = []
        calls_asked = 0
        completed: ModelCompleted | None = None
        stream = plan.provider.stream(request)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    piece = event.text
                    if piece:
                        text_chars += len(piece)
                        if text_chars > MAX_TURN_TEXT_CHARS:  # kept up to the limit; the turn will fail
                            piece = piece[: max(0, MAX_TURN_TEXT_CHARS - (text_chars - len(piece)))]
                            if not piece:
                                continue
                        text_parts.append(piece)
                        if live:  # a summary is not the answer: it is not shown as it streams
                            self._writer.publish_token(
                                run_id, str(activity.activity_id), len(activity.partial_text), piece
                            )
                            self._observer.token(run_id, piece)
                        activity.partial_text += piece
                elif isinstance(event, ModelToolCall):
                    calls_asked += 1
                    if calls_asked <= MAX_TOOL_CALLS_PER_TURN:
                        tool_calls.append(event)
                else:
                    completed = event
        except BearAgentError:
            raise
        except (asyncio.CancelledError, TimeoutError):
            raise
        except Exception as exc:
            raise BearAgentError(
                ErrorInfo.of(
                    "internal", "provider_crashed", f"the model provider failed unexpectedly: {type(exc).__name__}"
                )
            ) from exc
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if completed is None:
            raise BearAgentError(
                ErrorInfo.of(
                    "truncated_stream",
                    "no_completion",
                    "the model stream ended without a completion event",
                    retryable=True,
                )
            )
        return ModelTurn(
            text="".join(text_parts),
            tool_calls=tool_calls,
            completed=completed,
            text_chars=text_chars,
            calls_asked=calls_asked,
        )

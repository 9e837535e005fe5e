"""Anthropic Messages API (`POST /v1/messages`), streaming, through the official `anthropic` SDK.

Terminal event: `message_stop`. Tool input arrives as `input_json_delta` fragments keyed by the content-block index
and is parsed after the block's `content_block_stop`. Usage is split: input (and cache) counts come with
`message_start`, the cumulative output count with `message_delta` (replaced, not added). A mid-stream
`event: error` (e.g. `overloaded_error`) is raised by the SDK with HTTP status 200 and mapped by its error type.

A `refusal` stop is a final answer: `ModelCompleted.refusal` carries the server's explanation (or a fixed sentence)
and the text streamed before it is to be thrown away by the caller (it was already emitted as deltas). Written on the public `StreamingProvider` kit through `_sdk.SdkAdapter`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import IdGenerator
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.models import ModelRequest, StopReason
from bearagent.providers._base import tool_result_of
from bearagent.providers._core import ProviderSettings
from bearagent.providers._failures import failure_from_sdk
from bearagent.providers._sdk import DEFAULT_MAX_OUTPUT_TOKENS, RawResponse, SdkAdapter, SdkStream
from bearagent.providers.errors import ProviderFailure
from bearagent.providers.kit import ModelCall

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage
    from anthropic.types import RawMessageStreamEvent

REFUSAL_FALLBACK = "The model declined to answer this request."


def anthropic_payload(call: ModelCall) -> tuple[str | None, list[dict[str, object]]]:
    """(system, messages). Leading system messages become `system`; a later one becomes a user text block.
    Consecutive messages of one role are merged (tool results, which travel as `user` content, come first)."""
    system_parts: list[str] = []
    out: list[dict[str, object]] = []
    leading = True
    for message in call.request.messages:
        blocks: list[dict[str, object]]
        role: str
        if message.role == "system":
            if leading:
                system_parts.append(message.text)
                continue
            role, blocks = "user", [{"type": "text", "text": f"[system] {message.text}"}]
        elif message.role == "user":
            role, blocks = "user", [{"type": "text", "text": message.text}]
        elif message.role == "assistant":
            role, blocks = "assistant", []
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": call.wire_call_id(part),
                            "name": call.wire_name(part.name),
                            "input": thaw_json_mapping(part.arguments),
                        }
                    )
                elif part.kind == "text":
                    blocks.append({"type": "text", "text": part.text})
        else:
            part = tool_result_of(message)
            block: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": call.wire_call_id(part),
                "content": part.content,
            }
            if part.is_error:
                block["is_error"] = True
            role, blocks = "user", [block]
        leading = False
        if out and out[-1]["role"] == role:
            previous = cast(list[dict[str, object]], out[-1]["content"])
            merged = previous + blocks
            # tool_result blocks must open the user turn that answers the tool calls
            merged.sort(key=lambda b: 0 if b["type"] == "tool_result" else 1)
            out[-1]["content"] = merged
        else:
            out.append({"role": role, "content": blocks})
    system = "\n\n".join(system_parts) if system_parts else None
    return system, out


def anthropic_tools(call: ModelCall) -> list[dict[str, object]]:
    return [
        {
            "name": call.wire_name(tool.name),
            "description": tool.description,
            "input_schema": thaw_json_mapping(tool.input_schema),
        }
        for tool in call.request.tools
    ]


def _int(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


@dataclass(slots=True)
class _Block:
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list[str])
    initial: dict[str, JsonValue] | None = None


@dataclass(slots=True)
class _MessagesState:
    """One call: open tool_use blocks by index, the split usage counts, the stop reason and its explanation."""

    response_id: str | None = None
    blocks: dict[int, _Block] = field(default_factory=dict[int, _Block])
    has_calls: bool = False
    stop_reason: str | None = None
    refusal: str | None = None
    done: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def update_usage(self, usage: object, call: ModelCall) -> None:
        if usage is None:
            return
        if getattr(usage, "input_tokens", None) is not None:
            self.input_tokens = _int(getattr(usage, "input_tokens", 0))
        if getattr(usage, "cache_read_input_tokens", None) is not None:
            self.cache_read = _int(getattr(usage, "cache_read_input_tokens", 0))
        if getattr(usage, "cache_creation_input_tokens", None) is not None:
            self.cache_write = _int(getattr(usage, "cache_creation_input_tokens", 0))
        if getattr(usage, "output_tokens", None) is not None:
            self.output_tokens = _int(getattr(usage, "output_tokens", 0))
        call.usage = TokenUsage(
            input_tokens=self.input_tokens + self.cache_read + self.cache_write,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )

    def note_refusal(self, source: object) -> None:
        """Keep the server's explanation of a refusal (`stop_details.explanation`), when it gives one."""
        details: object = getattr(source, "stop_details", None)
        explanation: object = getattr(details, "explanation", None)
        if isinstance(explanation, str) and explanation:
            self.refusal = explanation


class AnthropicMessagesProvider(SdkAdapter["AsyncAnthropic", _MessagesState]):
    """Messages API adapter. `max_tokens` is required by the API: request, then entry, then 4096."""

    request_id_header = "request-id"

    def __init__(self, settings: ProviderSettings, *, ids: IdGenerator | None = None) -> None:
        super().__init__(settings, ids=ids)

    def make_client(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(**self.client_options())

    def new_state(self) -> _MessagesState:
        return _MessagesState()

    def max_output_tokens(self, request: ModelRequest) -> int:
        """Always sent (the API requires `max_tokens`): the request's, else the entry's, else 4096."""
        return super().max_output_tokens(request) or DEFAULT_MAX_OUTPUT_TOKENS

    def _params(self, call: ModelCall) -> dict[str, Any]:
        system, messages = anthropic_payload(call)
        params: dict[str, Any] = {
            "model": call.request.model,
            "messages": messages,
            "max_tokens": self.max_output_tokens(call.request),
        }
        if system:
            params["system"] = system
        tools = anthropic_tools(call)
        if tools:
            params["tools"] = tools
        temperature = call.temperature
        if temperature is not None:
            # anthropic 2.x no longer types `temperature`; it is passed through for servers that accept it
            params["extra_body"] = {"temperature": min(temperature, 1.0)}
        return params

    async def start_stream(self, client: AsyncAnthropic, call: ModelCall) -> SdkStream:
        stream = await client.messages.create(**self._params(call), stream=True, timeout=call.timeout_s)
        return cast("SdkStream", stream)

    async def complete(self, client: AsyncAnthropic, call: ModelCall) -> RawResponse:
        return cast(
            "RawResponse", await client.messages.with_raw_response.create(**self._params(call), timeout=call.timeout_s)
        )

    def on_event(self, state: _MessagesState, event: object, call: ModelCall) -> None:
        item = cast("RawMessageStreamEvent", event)
        if item.type == "content_block_delta":
            delta = item.delta
            if delta.type == "text_delta":
                call.text(delta.text)
            elif delta.type == "input_json_delta":
                block = state.blocks.get(item.index)
                if block is not None:
                    block.parts.append(delta.partial_json)
        elif item.type == "content_block_start":
            content = item.content_block
            if content.type == "tool_use":
                initial = cast(object, content.input)
                state.blocks[item.index] = _Block(
                    content.id, content.name, initial=cast(dict[str, JsonValue], initial) if initial else None
                )
            elif content.type == "text" and content.text:
                call.text(content.text)
        elif item.type == "content_block_stop":
            block = state.blocks.pop(item.index, None)
            if block is not None:
                state.has_calls = True
                raw = "".join(block.parts)
                if not raw.strip() and block.initial:
                    call.tool_call(block.name, block.initial, call_id=block.call_id)
                else:
                    call.tool_call(block.name, raw, call_id=block.call_id)
        elif item.type == "message_start":
            message = item.message
            state.response_id = message.id or None
            call.model = message.model or None
            state.update_usage(message.usage, call)
        elif item.type == "message_delta":
            state.stop_reason = item.delta.stop_reason or state.stop_reason
            state.note_refusal(item.delta)
            state.update_usage(item.usage, call)
        elif item.type == "message_stop":
            state.done = True

    def on_end(self, state: _MessagesState, call: ModelCall) -> None:
        if not state.done:
            raise self.truncated(call, "message_stop", call.request_id or state.response_id)
        self._ending(state, call)

    def _ending(self, state: _MessagesState, call: ModelCall) -> None:
        request_id = call.request_id = call.request_id or state.response_id
        stop_reason = state.stop_reason
        if stop_reason == "max_tokens":
            call.finish("max_output_tokens")
            return
        if stop_reason == "model_context_window_exceeded":
            raise self.stopped(call, "context_overflow", request_id)
        stop: StopReason
        if stop_reason == "refusal":
            call.finish("refusal", refusal=state.refusal or REFUSAL_FALLBACK)
            return
        if stop_reason == "tool_use" or state.has_calls:
            stop = "tool_use"
        elif stop_reason == "end_turn":
            stop = "end_turn"
        elif stop_reason == "stop_sequence":
            stop = "stop_sequence"
        else:
            stop = "other"
        call.finish(stop)

    def on_final(self, state: _MessagesState, result: object, call: ModelCall) -> None:
        message = cast("AnthropicMessage", result)
        state.response_id = message.id or None
        call.model = message.model or None
        state.update_usage(message.usage, call)
        for content in message.content:
            if content.type == "text":
                call.text(content.text)
            elif content.type == "tool_use":
                state.has_calls = True
                raw_input = cast(object, content.input)
                call.tool_call(content.name, json.dumps(raw_input), call_id=content.id)
        state.stop_reason = message.stop_reason
        state.note_refusal(message)
        self._ending(state, call)

    def sdk_failure(self, exc: BaseException) -> ProviderFailure | None:
        import anthropic

        return failure_from_sdk(
            exc,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
            status_error=anthropic.APIStatusError,
            api_error=anthropic.APIError,
            request_id_header=self.request_id_header,
        )

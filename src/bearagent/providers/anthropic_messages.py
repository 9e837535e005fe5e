"""Anthropic Messages API (`POST /v1/messages`), streaming, through the official `anthropic` SDK.

Terminal event: `message_stop`. Tool input arrives as `input_json_delta` fragments keyed by the content-block index
and is parsed after the block's `content_block_stop`. Usage is split: input (and cache) counts come with
`message_start`, the cumulative output count with `message_delta` (replaced, not added). A mid-stream
`event: error` (e.g. `overloaded_error`) is raised by the SDK with HTTP status 200 and mapped by its error type.

A `refusal` stop is a final answer: `ModelCompleted.refusal` carries the server's explanation (or a fixed sentence)
and the text streamed before it is to be thrown away by the caller (it was already emitted as deltas).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import IdGenerator
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.models import ModelEvent, ModelRequest, ModelToolCall, StopReason
from bearagent.providers._base import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    Accumulator,
    ProviderFailure,
    ProviderSettings,
    RawResponse,
    SdkProvider,
    SdkStream,
    result_call_id,
    tool_result_of,
    wire_call_ids,
)
from bearagent.providers._failures import failure_from_sdk
from bearagent.providers.tool_names import ToolNameMap

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage
    from anthropic.types import RawMessageStreamEvent

REFUSAL_FALLBACK = "The model declined to answer this request."


def anthropic_payload(request: ModelRequest, names: ToolNameMap) -> tuple[str | None, list[dict[str, object]]]:
    """(system, messages). Leading system messages become `system`; a later one becomes a user text block.
    Consecutive messages of one role are merged (tool results, which travel as `user` content, come first)."""
    ids = wire_call_ids(request.messages)
    system_parts: list[str] = []
    out: list[dict[str, object]] = []
    leading = True
    for message in request.messages:
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
                            "id": ids[part.tool_call_id],
                            "name": names.to_provider(part.name),
                            "input": thaw_json_mapping(part.arguments),
                        }
                    )
                elif part.kind == "text":
                    blocks.append({"type": "text", "text": part.text})
        else:
            part = tool_result_of(message)
            block: dict[str, object] = {
                "type": "tool_result",
                "tool_use_id": result_call_id(part, ids),
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


def anthropic_tools(request: ModelRequest, names: ToolNameMap) -> list[dict[str, object]]:
    return [
        {
            "name": names.to_provider(tool.name),
            "description": tool.description,
            "input_schema": thaw_json_mapping(tool.input_schema),
        }
        for tool in request.tools
    ]


def _int(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0


@dataclass(slots=True)
class _Block:
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list[str])
    initial: dict[str, JsonValue] | None = None


class _MessagesAccumulator(Accumulator):
    def __init__(self, provider: SdkProvider[Any], request: ModelRequest, names: ToolNameMap) -> None:
        super().__init__(provider, request, names)
        self.blocks: dict[int, _Block] = {}
        self.calls: list[ModelToolCall] = []
        self.stop_reason: str | None = None
        self.refusal: str | None = None
        self.done = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_write = 0

    def _update_usage(self, usage: object) -> None:
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
        self.usage = TokenUsage(
            input_tokens=self.input_tokens + self.cache_read + self.cache_write,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )

    def feed(self, item: object) -> str | None:
        event = cast("RawMessageStreamEvent", item)
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return delta.text
            if delta.type == "input_json_delta":
                block = self.blocks.get(event.index)
                if block is not None:
                    block.parts.append(delta.partial_json)
        elif event.type == "content_block_start":
            content = event.content_block
            if content.type == "tool_use":
                initial = cast(object, content.input)
                self.blocks[event.index] = _Block(
                    content.id, content.name, initial=cast(dict[str, JsonValue], initial) if initial else None
                )
            elif content.type == "text" and content.text:
                return content.text
        elif event.type == "content_block_stop":
            block = self.blocks.pop(event.index, None)
            if block is not None:
                self.calls.append(self._finish_block(block))
        elif event.type == "message_start":
            message = event.message
            self.response_id = message.id or None
            self.model = message.model or None
            self._update_usage(message.usage)
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._note_refusal(event.delta)
            self._update_usage(event.usage)
        elif event.type == "message_stop":
            self.done = True
        return None

    def _note_refusal(self, source: object) -> None:
        """Keep the server's explanation of a refusal (`stop_details.explanation`), when it gives one."""
        details: object = getattr(source, "stop_details", None)
        explanation: object = getattr(details, "explanation", None)
        if isinstance(explanation, str) and explanation:
            self.refusal = explanation

    def _finish_block(self, block: _Block) -> ModelToolCall:
        raw = "".join(block.parts)
        if not raw.strip() and block.initial:
            return self.tool_call_parsed(block.call_id, block.name, block.initial)
        return self.tool_call(block.call_id, block.name, raw)

    def finish(self) -> list[ModelEvent]:
        if not self.done:
            raise self.truncated("message_stop", self.request_id or self.response_id)
        return self.ending(self.stop_reason, self.calls)

    def ending(self, stop_reason: str | None, calls: list[ModelToolCall]) -> list[ModelEvent]:
        request_id = self.settle_request_id()
        if stop_reason == "max_tokens":
            raise self.stopped("max_output_tokens", request_id)
        if stop_reason == "model_context_window_exceeded":
            raise self.stopped("context_overflow", request_id)
        refusal: str | None = None
        stop: StopReason
        if stop_reason == "refusal":
            stop = "refusal"
            refusal = self.refusal or REFUSAL_FALLBACK
        elif stop_reason == "tool_use" or calls:
            stop = "tool_use"
        elif stop_reason == "end_turn":
            stop = "end_turn"
        elif stop_reason == "stop_sequence":
            stop = "stop_sequence"
        else:
            stop = "other"
        return self.completed(calls, stop, refusal)

    def from_final(self, result: object) -> list[ModelEvent]:
        message = cast("AnthropicMessage", result)
        self.response_id = message.id or None
        self.model = message.model or None
        self._update_usage(message.usage)
        events: list[ModelEvent] = []
        calls: list[ModelToolCall] = []
        for content in message.content:
            if content.type == "text":
                if content.text:
                    events.extend(self.final_text(content.text))
            elif content.type == "tool_use":
                raw_input = cast(object, content.input)
                calls.append(self.tool_call(content.id, content.name, json.dumps(raw_input)))
        self._note_refusal(message)
        return events + self.ending(message.stop_reason, calls)


class AnthropicMessagesProvider(SdkProvider["AsyncAnthropic"]):
    """Messages API adapter. `max_tokens` is required by the API: request, then entry, then 4096."""

    request_id_header = "request-id"

    def __init__(self, settings: ProviderSettings, *, ids: IdGenerator | None = None) -> None:
        super().__init__(settings, ids=ids)

    def _new_client(self) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(**self._client_options())

    def _accumulator(self, request: ModelRequest, names: ToolNameMap) -> Accumulator:
        return _MessagesAccumulator(self, request, names)

    def max_output_tokens(self, request: ModelRequest) -> int:
        """Always sent (the API requires `max_tokens`): the request's, else the entry's, else 4096."""
        return super().max_output_tokens(request) or DEFAULT_MAX_OUTPUT_TOKENS

    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        system, messages = anthropic_payload(request, names)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "max_tokens": self.max_output_tokens(request),
        }
        if system:
            params["system"] = system
        tools = anthropic_tools(request, names)
        if tools:
            params["tools"] = tools
        temperature = self.temperature(request)
        if temperature is not None:
            # anthropic 2.x no longer types `temperature`; it is passed through for servers that accept it
            params["extra_body"] = {"temperature": min(temperature, 1.0)}
        return params

    async def _open_stream(
        self, client: AsyncAnthropic, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> SdkStream:
        stream = await client.messages.create(**self._params(request, names), stream=True, timeout=timeout)
        return cast("SdkStream", stream)

    async def _complete(
        self, client: AsyncAnthropic, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> tuple[object, str | None]:
        raw = cast(
            "RawResponse",
            await client.messages.with_raw_response.create(**self._params(request, names), timeout=timeout),
        )
        return await self._parsed(raw)

    def _failure(self, exc: BaseException) -> ProviderFailure | None:
        import anthropic

        return failure_from_sdk(
            exc,
            timeout_error=anthropic.APITimeoutError,
            connection_error=anthropic.APIConnectionError,
            status_error=anthropic.APIStatusError,
            api_error=anthropic.APIError,
            request_id_header=self.request_id_header,
        )

"""OpenAI Chat Completions (`POST /chat/completions`), streaming, through the official `openai` SDK.

Works with any OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) through `base_url`. The stream's
terminal signal is the chunk carrying `finish_reason` (the SDK consumes `[DONE]` itself and does not say whether it
saw it): a stream that ends without a `finish_reason` is a `truncated_stream` failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import IdGenerator
from bearagent.domain.messages import ToolCallPart
from bearagent.domain.models import ModelEvent, ModelRequest, ModelToolCall
from bearagent.providers._base import (
    Accumulator,
    ProviderSettings,
    RawResponse,
    SdkProvider,
    SdkStream,
    error_text,
    result_call_id,
    tool_result_of,
    wire_call_ids,
)
from bearagent.providers._openai import OpenAIAccumulator, OpenAIProvider, arguments_json
from bearagent.providers.tool_names import ToolNameMap

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage


def chat_messages(request: ModelRequest, names: ToolNameMap) -> list[dict[str, object]]:
    """Our messages as Chat Completions messages (tool results carry the call id the assistant message used)."""
    ids = wire_call_ids(request.messages)
    out: list[dict[str, object]] = []
    for message in request.messages:
        if message.role in ("system", "user"):
            out.append({"role": message.role, "content": message.text})
        elif message.role == "assistant":
            entry: dict[str, object] = {"role": "assistant", "content": message.text}
            calls = [
                {
                    "id": ids[part.tool_call_id],
                    "type": "function",
                    "function": {
                        "name": names.to_provider(part.name),
                        "arguments": arguments_json(part),
                    },
                }
                for part in message.parts
                if isinstance(part, ToolCallPart)
            ]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        else:
            part = tool_result_of(message)
            out.append({"role": "tool", "tool_call_id": result_call_id(part, ids), "content": error_text(part)})
    return out


def chat_tools(request: ModelRequest, names: ToolNameMap) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "function": {
                "name": names.to_provider(tool.name),
                "description": tool.description,
                "parameters": thaw_json_mapping(tool.input_schema),
            },
        }
        for tool in request.tools
    ]


def chat_usage(usage: CompletionUsage | None) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return TokenUsage(
        input_tokens=max(usage.prompt_tokens or 0, 0),
        output_tokens=max(usage.completion_tokens or 0, 0),
        cache_read_tokens=max(cached, 0),
    )


@dataclass(slots=True)
class _Call:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


class _ChatAccumulator(OpenAIAccumulator):
    def __init__(self, provider: SdkProvider[Any], request: ModelRequest, names: ToolNameMap) -> None:
        super().__init__(provider, request, names)
        self.calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None

    def feed(self, item: object) -> str | None:
        chunk = cast("ChatCompletionChunk", item)
        if chunk.usage is not None:
            self.usage = chat_usage(chunk.usage)
        if self.response_id is None:
            self.response_id = chunk.id or None
            self.model = chunk.model or None
        text: str | None = None
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                text = delta.content if text is None else text + delta.content
            if delta.refusal:
                self.refusal_parts.append(delta.refusal)
            if delta.tool_calls:
                for call in delta.tool_calls:
                    slot = self.calls.get(call.index)
                    if slot is None:
                        slot = self.calls[call.index] = _Call()
                    if call.id:
                        slot.call_id = call.id
                    function = call.function
                    if function is not None:
                        if function.name:
                            slot.name = function.name
                        if function.arguments:
                            slot.arguments.append(function.arguments)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return text

    def finish(self) -> list[ModelEvent]:
        if self.finish_reason is None:
            raise self.truncated("a finish_reason chunk, then [DONE]", self.request_id)
        calls = [
            self.tool_call(slot.call_id, slot.name, "".join(slot.arguments)) for _, slot in sorted(self.calls.items())
        ]
        return self.ending(self.finish_reason, calls, "".join(self.refusal_parts))

    def ending(self, finish_reason: str, calls: list[ModelToolCall], refusal: str) -> list[ModelEvent]:
        request_id = self.settle_request_id()
        if finish_reason == "length":
            raise self.stopped("max_output_tokens", request_id)
        if finish_reason == "content_filter":
            raise self.stopped("content_filter", request_id)
        return self.openai_completed(calls, refusal, ended=finish_reason == "stop")

    def from_final(self, result: object) -> list[ModelEvent]:
        completion = cast("ChatCompletion", result)
        self.response_id = completion.id or None
        self.model = completion.model or None
        self.usage = chat_usage(completion.usage)
        events: list[ModelEvent] = []
        if not completion.choices:
            raise self.truncated("choices[0]", self.request_id)
        choice = completion.choices[0]
        message = choice.message
        if message.content:
            events.extend(self.final_text(message.content))
        calls: list[ModelToolCall] = []
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)
            if function is None:
                continue
            calls.append(
                self.tool_call(call.id, str(getattr(function, "name", "")), getattr(function, "arguments", ""))
            )
        return events + self.ending(choice.finish_reason or "stop", calls, message.refusal or "")


class OpenAIChatProvider(OpenAIProvider):
    """Chat Completions adapter. `max_tokens_field` is `max_completion_tokens` for OpenAI itself and `max_tokens`
    for OpenAI-compatible servers (which mostly only know the older name)."""

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        ids: IdGenerator | None = None,
        max_tokens_field: str = "max_completion_tokens",
    ) -> None:
        super().__init__(settings, ids=ids)
        self.max_tokens_field = max_tokens_field

    def _accumulator(self, request: ModelRequest, names: ToolNameMap) -> Accumulator:
        return _ChatAccumulator(self, request, names)

    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        return {
            "model": request.model,
            "messages": chat_messages(request, names),
            **self._options(request, chat_tools(request, names)),
        }

    async def _open_stream(
        self, client: AsyncOpenAI, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> SdkStream:
        params = self._params(request, names)
        stream = await client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}, timeout=timeout
        )
        sdk_stream = cast("SdkStream", stream)
        return sdk_stream

    async def _complete(
        self, client: AsyncOpenAI, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> tuple[object, str | None]:
        params = self._params(request, names)
        raw = cast("RawResponse", await client.chat.completions.with_raw_response.create(**params, timeout=timeout))
        return await self._parsed(raw)

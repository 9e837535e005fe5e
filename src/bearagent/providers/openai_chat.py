"""OpenAI Chat Completions (`POST /chat/completions`), streaming, through the official `openai` SDK.

Works with any OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) through `base_url`. The stream's
terminal signal is the chunk carrying `finish_reason` (the SDK consumes `[DONE]` itself and does not say whether it
saw it): a stream that ends without a `finish_reason` is a `truncated_stream` failure. Written on the public
`StreamingProvider` kit through `_sdk.SdkAdapter`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.ids import IdGenerator
from bearagent.domain.messages import ToolCallPart
from bearagent.providers._base import error_text, tool_result_of
from bearagent.providers._core import ProviderSettings
from bearagent.providers._openai import OpenAIAdapter, arguments_json, openai_finish
from bearagent.providers._sdk import RawResponse, SdkStream
from bearagent.providers.kit import ModelCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage


def chat_messages(call: ModelCall) -> list[dict[str, object]]:
    """Our messages as Chat Completions messages (tool results carry the call id the assistant message used)."""
    out: list[dict[str, object]] = []
    for message in call.request.messages:
        if message.role in ("system", "user"):
            out.append({"role": message.role, "content": message.text})
        elif message.role == "assistant":
            entry: dict[str, object] = {"role": "assistant", "content": message.text}
            calls = [
                {
                    "id": call.wire_call_id(part),
                    "type": "function",
                    "function": {"name": call.wire_name(part.name), "arguments": arguments_json(part)},
                }
                for part in message.parts
                if isinstance(part, ToolCallPart)
            ]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        else:
            part = tool_result_of(message)
            out.append({"role": "tool", "tool_call_id": call.wire_call_id(part), "content": error_text(part)})
    return out


def chat_tools(call: ModelCall) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "function": {
                "name": call.wire_name(tool.name),
                "description": tool.description,
                "parameters": thaw_json_mapping(tool.input_schema),
            },
        }
        for tool in call.request.tools
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
class _ChatState:
    """One call: the response id (the request id when no header gave one), refusal text, the finish reason."""

    response_id: str | None = None
    refusal: list[str] = field(default_factory=list[str])
    has_calls: bool = False
    finish_reason: str | None = None


class OpenAIChatProvider(OpenAIAdapter[_ChatState]):
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

    def new_state(self) -> _ChatState:
        return _ChatState()

    def _params(self, call: ModelCall) -> dict[str, Any]:
        return {
            "model": call.request.model,
            "messages": chat_messages(call),
            **self.options(call, chat_tools(call)),
        }

    async def start_stream(self, client: AsyncOpenAI, call: ModelCall) -> SdkStream:
        stream = await client.chat.completions.create(
            **self._params(call), stream=True, stream_options={"include_usage": True}, timeout=call.timeout_s
        )
        return cast("SdkStream", stream)

    async def complete(self, client: AsyncOpenAI, call: ModelCall) -> RawResponse:
        return cast(
            "RawResponse",
            await client.chat.completions.with_raw_response.create(**self._params(call), timeout=call.timeout_s),
        )

    def on_event(self, state: _ChatState, event: object, call: ModelCall) -> None:
        chunk = cast("ChatCompletionChunk", event)
        if chunk.usage is not None:
            call.usage = chat_usage(chunk.usage)
        if state.response_id is None:
            state.response_id = chunk.id or None
            call.model = chunk.model or None
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                call.text(delta.content)
            if delta.refusal:
                state.refusal.append(delta.refusal)
            if delta.tool_calls:
                state.has_calls = True
                for tool_call in delta.tool_calls:
                    function = tool_call.function
                    call.tool_call_delta(
                        tool_call.index,
                        name=function.name if function is not None else None,
                        arguments=function.arguments if function is not None else None,
                        call_id=tool_call.id,
                    )
            if choice.finish_reason:
                state.finish_reason = choice.finish_reason

    def on_end(self, state: _ChatState, call: ModelCall) -> None:
        if state.finish_reason is None:
            raise self.truncated(call, "a finish_reason chunk, then [DONE]", call.request_id)
        self._ending(state, call, state.finish_reason, "".join(state.refusal))

    def _ending(self, state: _ChatState, call: ModelCall, finish_reason: str, refusal: str) -> None:
        call.request_id = call.request_id or state.response_id
        if finish_reason == "length":
            call.finish("max_output_tokens")
        elif finish_reason == "content_filter":
            call.finish("content_filter")
        else:
            openai_finish(call, has_calls=state.has_calls, refusal=refusal, ended=finish_reason == "stop")

    def on_final(self, state: _ChatState, result: object, call: ModelCall) -> None:
        completion = cast("ChatCompletion", result)
        state.response_id = completion.id or None
        call.model = completion.model or None
        call.usage = chat_usage(completion.usage)
        if not completion.choices:
            raise self.truncated(call, "choices[0]", call.request_id)
        choice = completion.choices[0]
        message = choice.message
        if message.content:
            call.text(message.content)
        for tool_call in message.tool_calls or ():
            function = getattr(tool_call, "function", None)
            if function is None:
                continue
            state.has_calls = True
            call.tool_call(str(getattr(function, "name", "")), getattr(function, "arguments", ""), call_id=tool_call.id)
        self._ending(state, call, choice.finish_reason or "stop", message.refusal or "")

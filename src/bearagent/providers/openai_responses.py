"""OpenAI Responses API (`POST /responses`), streaming, through the official `openai` SDK.

Terminal events: `response.completed`, `response.incomplete` (max output tokens / content filter: a failure with the
partial text kept) and `response.failed` (a failure). Both shapes of the in-stream `error` event are handled: the
nested production shape (`{"type":"error","error":{...}}`, which the SDK raises as `APIError`) and the flat one
(`{"type":"error","code","message"}`, which the SDK yields as an event). Output items may come in any order
(`reasoning` first, text not at index 0); event types this adapter does not know are ignored.
Written on the public `StreamingProvider` kit through `_sdk.SdkAdapter`.
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
from bearagent.providers.errors import ProviderFailure
from bearagent.providers.kit import ModelCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.responses import Response, ResponseOutputItem, ResponseStreamEvent
    from openai.types.responses.response_usage import ResponseUsage


def responses_input(call: ModelCall) -> list[dict[str, object]]:
    """Our messages as Responses input items: messages, `function_call` and `function_call_output` items."""
    out: list[dict[str, object]] = []
    for message in call.request.messages:
        if message.role in ("system", "user"):
            out.append({"type": "message", "role": message.role, "content": message.text})
        elif message.role == "assistant":
            if message.text:
                out.append({"type": "message", "role": "assistant", "content": message.text})
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    out.append(
                        {
                            "type": "function_call",
                            "call_id": call.wire_call_id(part),
                            "name": call.wire_name(part.name),
                            "arguments": arguments_json(part),
                        }
                    )
        else:
            part = tool_result_of(message)
            out.append({"type": "function_call_output", "call_id": call.wire_call_id(part), "output": error_text(part)})
    return out


def responses_tools(call: ModelCall) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "name": call.wire_name(tool.name),
            "description": tool.description,
            "parameters": thaw_json_mapping(tool.input_schema),
            "strict": False,
        }
        for tool in call.request.tools
    ]


def responses_usage(usage: ResponseUsage | None) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    details = usage.input_tokens_details
    cached: object = getattr(cast(object, details), "cached_tokens", 0)
    return TokenUsage(
        input_tokens=max(usage.input_tokens or 0, 0),
        output_tokens=max(usage.output_tokens or 0, 0),
        cache_read_tokens=cached if isinstance(cached, int) and cached > 0 else 0,
    )


@dataclass(slots=True)
class _Call:
    output_index: int
    call_id: str | None
    name: str
    arguments: list[str] = field(default_factory=list[str])
    final: str | None = None


@dataclass(slots=True)
class _ResponsesState:
    """One call: function calls by item id (output items may come in any order), refusal text, the terminal."""

    response_id: str | None = None
    calls: dict[str, _Call] = field(default_factory=dict[str, _Call])
    refusal: list[str] = field(default_factory=list[str])
    terminal: Response | None = None


def _seen_response(state: _ResponsesState, response: Response, call: ModelCall) -> None:
    state.response_id = response.id or state.response_id
    call.model = response.model or call.model
    if response.usage is not None:
        call.usage = responses_usage(response.usage)


def _seen_item(state: _ResponsesState, output: ResponseOutputItem, output_index: int, *, done: bool) -> None:
    if output.type != "function_call":
        return
    key = output.id or output.call_id
    found = state.calls.get(key)
    if found is None:
        found = state.calls[key] = _Call(output_index, output.call_id, output.name)
    found.call_id = output.call_id or found.call_id
    found.name = output.name or found.name
    if done:
        found.final = output.arguments


class OpenAIResponsesProvider(OpenAIAdapter[_ResponsesState]):
    """Responses API adapter. Sends `store: false` when `store` is False (the default for OpenAI itself), so
    conversations are not kept on the provider's side; history is always sent in full."""

    max_tokens_field = "max_output_tokens"

    def __init__(
        self, settings: ProviderSettings, *, ids: IdGenerator | None = None, store: bool | None = False
    ) -> None:
        super().__init__(settings, ids=ids)
        self.store = store

    def new_state(self) -> _ResponsesState:
        return _ResponsesState()

    def _params(self, call: ModelCall) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": call.request.model,
            "input": responses_input(call),
            **self.options(call, responses_tools(call)),
        }
        if self.store is not None:
            params["store"] = self.store
        return params

    async def start_stream(self, client: AsyncOpenAI, call: ModelCall) -> SdkStream:
        stream = await client.responses.create(**self._params(call), stream=True, timeout=call.timeout_s)
        return cast("SdkStream", stream)

    async def complete(self, client: AsyncOpenAI, call: ModelCall) -> RawResponse:
        return cast(
            "RawResponse", await client.responses.with_raw_response.create(**self._params(call), timeout=call.timeout_s)
        )

    def on_event(self, state: _ResponsesState, event: object, call: ModelCall) -> None:
        item = cast("ResponseStreamEvent", event)
        if item.type == "response.output_text.delta":
            call.text(item.delta)
        elif item.type == "response.function_call_arguments.delta":
            found = state.calls.get(item.item_id)
            if found is not None:
                found.arguments.append(item.delta)
        elif item.type == "response.output_item.added":
            _seen_item(state, item.item, item.output_index, done=False)
        elif item.type == "response.output_item.done":
            _seen_item(state, item.item, item.output_index, done=True)
        elif item.type == "response.function_call_arguments.done":
            found = state.calls.get(item.item_id)
            if found is not None:
                found.final = item.arguments
        elif item.type == "response.refusal.delta":
            state.refusal.append(item.delta)
        elif item.type == "response.created" or item.type == "response.in_progress":
            _seen_response(state, item.response, call)
        elif item.type == "response.completed" or item.type == "response.incomplete" or item.type == "response.failed":
            _seen_response(state, item.response, call)
            state.terminal = item.response
        elif item.type == "error":
            # The flat error shape (the nested one is raised by the SDK as APIError).
            raise call.error(
                ProviderFailure(kind="stream", message=item.message, error_code=item.code, error_type=item.code)
            )

    def on_end(self, state: _ResponsesState, call: ModelCall) -> None:
        response = state.terminal
        if response is None:
            raise self.truncated(
                call, "response.completed, response.incomplete or response.failed", call.request_id or state.response_id
            )
        for found in sorted(state.calls.values(), key=lambda c: c.output_index):
            arguments = found.final if found.final is not None else "".join(found.arguments)
            call.tool_call(found.name, arguments, call_id=found.call_id)
        self._ending(state, call, response, has_calls=bool(state.calls), refusal="".join(state.refusal))

    def _ending(
        self, state: _ResponsesState, call: ModelCall, response: Response, *, has_calls: bool, refusal: str
    ) -> None:
        request_id = call.request_id = call.request_id or state.response_id
        if response.status == "failed":
            error = response.error
            raise call.error(
                ProviderFailure(
                    kind="stream",
                    message=error.message if error is not None else "the response failed without an error message",
                    error_code=str(error.code) if error is not None else None,
                    error_type=str(error.code) if error is not None else None,
                    request_id=request_id,
                )
            )
        if response.status == "incomplete":
            reason = response.incomplete_details.reason if response.incomplete_details is not None else None
            call.finish("content_filter" if reason == "content_filter" else "max_output_tokens")
            return
        openai_finish(call, has_calls=has_calls, refusal=refusal, ended=response.status in ("completed", None))

    def on_final(self, state: _ResponsesState, result: object, call: ModelCall) -> None:
        response = cast("Response", result)
        _seen_response(state, response, call)
        refusal: list[str] = []
        has_calls = False
        for output in response.output:
            if output.type == "message":
                for content in output.content:
                    if content.type == "output_text":
                        call.text(content.text)
                    else:
                        refusal.append(content.refusal)
            elif output.type == "function_call":
                has_calls = True
                call.tool_call(output.name, output.arguments, call_id=output.call_id)
        self._ending(state, call, response, has_calls=has_calls, refusal="".join(refusal))

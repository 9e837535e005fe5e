"""OpenAI Responses API (`POST /responses`), streaming, through the official `openai` SDK.

Terminal events: `response.completed`, `response.incomplete` (max output tokens / content filter: a failure with the
partial text kept) and `response.failed` (a failure). Both shapes of the in-stream `error` event are handled: the
nested production shape (`{"type":"error","error":{...}}`, which the SDK raises as `APIError`) and the flat one
(`{"type":"error","code","message"}`, which the SDK yields as an event). Output items may come in any order
(`reasoning` first, text not at index 0); event types this adapter does not know are ignored.
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
    ProviderFailure,
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
    from openai.types.responses import Response, ResponseOutputItem, ResponseStreamEvent
    from openai.types.responses.response_usage import ResponseUsage


def responses_input(request: ModelRequest, names: ToolNameMap) -> list[dict[str, object]]:
    """Our messages as Responses input items: messages, `function_call` and `function_call_output` items."""
    ids = wire_call_ids(request.messages)
    out: list[dict[str, object]] = []
    for message in request.messages:
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
                            "call_id": ids[part.tool_call_id],
                            "name": names.to_provider(part.name),
                            "arguments": arguments_json(part),
                        }
                    )
        else:
            part = tool_result_of(message)
            out.append(
                {"type": "function_call_output", "call_id": result_call_id(part, ids), "output": error_text(part)}
            )
    return out


def responses_tools(request: ModelRequest, names: ToolNameMap) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "name": names.to_provider(tool.name),
            "description": tool.description,
            "parameters": thaw_json_mapping(tool.input_schema),
            "strict": False,
        }
        for tool in request.tools
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


class _ResponsesAccumulator(OpenAIAccumulator):
    def __init__(self, provider: SdkProvider[Any], request: ModelRequest, names: ToolNameMap) -> None:
        super().__init__(provider, request, names)
        self.calls: dict[str, _Call] = {}
        self.terminal: Response | None = None

    def _seen_response(self, response: Response) -> None:
        self.response_id = response.id or self.response_id
        self.model = response.model or self.model
        if response.usage is not None:
            self.usage = responses_usage(response.usage)

    def _seen_item(self, output: ResponseOutputItem, output_index: int, *, done: bool) -> None:
        if output.type != "function_call":
            return
        key = output.id or output.call_id
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = _Call(output_index, output.call_id, output.name)
        call.call_id = output.call_id or call.call_id
        call.name = output.name or call.name
        if done:
            call.final = output.arguments

    def feed(self, item: object) -> str | None:
        event = cast("ResponseStreamEvent", item)
        if event.type == "response.output_text.delta":
            return event.delta
        if event.type == "response.function_call_arguments.delta":
            call = self.calls.get(event.item_id)
            if call is not None:
                call.arguments.append(event.delta)
        elif event.type == "response.output_item.added":
            self._seen_item(event.item, event.output_index, done=False)
        elif event.type == "response.output_item.done":
            self._seen_item(event.item, event.output_index, done=True)
        elif event.type == "response.function_call_arguments.done":
            call = self.calls.get(event.item_id)
            if call is not None:
                call.final = event.arguments
        elif event.type == "response.refusal.delta":
            self.refusal_parts.append(event.delta)
        elif event.type == "response.created" or event.type == "response.in_progress":
            self._seen_response(event.response)
        elif (
            event.type == "response.completed" or event.type == "response.incomplete" or event.type == "response.failed"
        ):
            self._seen_response(event.response)
            self.terminal = event.response
        elif event.type == "error":
            # The flat error shape (the nested one is raised by the SDK as APIError).
            raise self.fail(
                ProviderFailure(kind="stream", message=event.message, error_code=event.code, error_type=event.code)
            )
        return None

    def finish(self) -> list[ModelEvent]:
        response = self.terminal
        if response is None:
            raise self.truncated(
                "response.completed, response.incomplete or response.failed", self.request_id or self.response_id
            )
        calls = [
            self.tool_call(call.call_id, call.name, call.final if call.final is not None else "".join(call.arguments))
            for call in sorted(self.calls.values(), key=lambda c: c.output_index)
        ]
        return self.ending(response, calls, "".join(self.refusal_parts))

    def ending(self, response: Response, calls: list[ModelToolCall], refusal: str) -> list[ModelEvent]:
        request_id = self.settle_request_id()
        if response.status == "failed":
            error = response.error
            raise self.fail(
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
            if reason == "content_filter":
                raise self.stopped("content_filter", request_id)
            raise self.stopped("max_output_tokens", request_id)
        return self.openai_completed(calls, refusal, ended=response.status in ("completed", None))

    def from_final(self, result: object) -> list[ModelEvent]:
        response = cast("Response", result)
        self._seen_response(response)
        events: list[ModelEvent] = []
        calls: list[ModelToolCall] = []
        refusal: list[str] = []
        for output in response.output:
            if output.type == "message":
                for content in output.content:
                    if content.type == "output_text":
                        if content.text:
                            events.extend(self.final_text(content.text))
                    else:
                        refusal.append(content.refusal)
            elif output.type == "function_call":
                calls.append(self.tool_call(output.call_id, output.name, output.arguments))
        return events + self.ending(response, calls, "".join(refusal))


class OpenAIResponsesProvider(OpenAIProvider):
    """Responses API adapter. Sends `store: false` when `store` is False (the default for OpenAI itself), so
    conversations are not kept on the provider's side; history is always sent in full."""

    max_tokens_field = "max_output_tokens"

    def __init__(
        self, settings: ProviderSettings, *, ids: IdGenerator | None = None, store: bool | None = False
    ) -> None:
        super().__init__(settings, ids=ids)
        self.store = store

    def _accumulator(self, request: ModelRequest, names: ToolNameMap) -> Accumulator:
        return _ResponsesAccumulator(self, request, names)

    def _params(self, request: ModelRequest, names: ToolNameMap) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "input": responses_input(request, names),
            **self._options(request, responses_tools(request, names)),
        }
        if self.store is not None:
            params["store"] = self.store
        return params

    async def _open_stream(
        self, client: AsyncOpenAI, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> SdkStream:
        stream = await client.responses.create(**self._params(request, names), stream=True, timeout=timeout)
        return cast("SdkStream", stream)

    async def _complete(
        self, client: AsyncOpenAI, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> tuple[object, str | None]:
        raw = cast(
            "RawResponse",
            await client.responses.with_raw_response.create(**self._params(request, names), timeout=timeout),
        )
        return await self._parsed(raw)

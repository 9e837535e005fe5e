"""What the three SDK adapters share: settings, the history helpers, the `Accumulator` of one answer, and
`SdkProvider` with the stream loop and its deadline. The per-loop client, the limits and the error path are
`_core.py` (shared with the public kit); the facts of SDK exceptions `_failures.py`."""

from __future__ import annotations

import asyncio
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol, TypedDict, TypeVar, cast

from bearagent.domain._base import JsonBoundsError, JsonValue, validate_json_object
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorCategory, ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import Message, ToolCallPart, ToolResultPart
from bearagent.domain.models import (
    MAX_DELTA_CHARS,
    MAX_REFUSAL_CHARS,
    ModelCompleted,
    ModelEvent,
    ModelRequest,
    ModelToolCall,
    StopReason,
    TextDelta,
    bounded_text,
    text_deltas,
    valid_unicode,
)
from bearagent.providers._core import CallTimer, ProviderCore, bounded_or_none
from bearagent.providers._core import ProviderSettings as ProviderSettings
from bearagent.providers._failures import stream_request_id, transport_failure
from bearagent.providers.errors import (
    CallContext,
    ProviderFailure,
    ProviderStreamError,
    classify_failure,
    length_stop_category,
    stopped_info,
    truncated_stream_info,
)
from bearagent.providers.tool_names import ToolNameMap

ClientT = TypeVar("ClientT")
DEFAULT_MAX_OUTPUT_TOKENS = 4096
"""Sent when neither the request nor the entry sets a limit and the protocol requires one (Anthropic)."""


class ClientOptions(TypedDict):
    """The constructor arguments both SDK clients (`AsyncOpenAI`, `AsyncAnthropic`) get from the settings."""

    api_key: str
    base_url: str
    max_retries: int
    timeout: float
    default_headers: dict[str, str] | None


class SdkStream(Protocol):
    """The part of `openai.AsyncStream` / `anthropic.AsyncStream` the adapters use."""

    async def __anext__(self) -> object: ...

    async def close(self) -> None: ...


class RawResponse(Protocol):
    """The part of the SDKs' `with_raw_response` result the adapters use."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    def parse(self) -> object: ...


def parse_arguments(raw: str | None) -> tuple[dict[str, JsonValue], str | None]:
    """Parse a tool call's argument text. Returns `(arguments, None)` or `({}, why_it_is_invalid)`; never raises."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError as exc:
        preview = raw if len(raw) <= 200 else raw[:200] + "…"
        why = f"the model's tool arguments are not valid JSON ({exc.msg} at character {exc.pos}): {preview}"
        return {}, why[:2000]
    except RecursionError:
        return {}, "the model's tool arguments nest too deeply to be parsed"
    if not isinstance(value, dict):
        return {}, f"the model's tool arguments must be a JSON object, got {type(value).__name__}: {raw[:200]}"
    try:
        return validate_json_object(cast(object, value), where="arguments"), None
    except JsonBoundsError as exc:
        return {}, f"the model's tool arguments are too large or too deep: {exc}"[:2000]


def wire_call_ids(messages: Sequence[Message]) -> dict[ToolCallId, str]:
    """Our tool_call_id -> the call id sent on the wire: the provider's own id, or ours when it has none."""
    out: dict[ToolCallId, str] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                out[part.tool_call_id] = part.provider_call_id or str(part.tool_call_id)
    return out


def result_call_id(part: ToolResultPart, ids: Mapping[ToolCallId, str]) -> str:
    return part.provider_call_id or ids.get(part.tool_call_id) or str(part.tool_call_id)


def tool_result_of(message: Message) -> ToolResultPart:
    """The result a `tool` message carries (its first and only part)."""
    part = message.parts[0]
    assert isinstance(part, ToolResultPart)
    return part


def error_text(part: ToolResultPart) -> str:
    """Protocols without an error flag get the flag in the text, so the model still knows the call failed."""
    return f"Error: {part.content}" if part.is_error else part.content


def name_map_for(request: ModelRequest) -> ToolNameMap:
    names = [tool.name for tool in request.tools]
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, (ToolCallPart, ToolResultPart)):
                names.append(part.name)
    return ToolNameMap(names)


class Accumulator(ABC):
    """Per-call state of one protocol: turns SDK items into text, then tool calls and a completion."""

    def __init__(self, provider: SdkProvider[object], request: ModelRequest, names: ToolNameMap) -> None:
        self.provider = provider
        self.request = request
        self.names = names
        self.text_parts: list[str] = []
        self.usage = TokenUsage()
        self.request_id: str | None = None
        self.response_id: str | None = None
        self.model: str | None = None

    @property
    def partial_text(self) -> str:
        return "".join(self.text_parts)

    @abstractmethod
    def feed(self, item: object) -> str | None:
        """Take one streamed SDK event; return text to emit now, if any. May raise `ProviderStreamError`."""

    @abstractmethod
    def finish(self) -> list[ModelEvent]:
        """The stream ended: tool calls and the completion, or raise (truncated, max tokens, filter...)."""

    @abstractmethod
    def from_final(self, result: object) -> list[ModelEvent]:
        """Events for a non-streamed response object."""

    def tool_call(self, provider_call_id: str | None, provider_name: str, raw_arguments: str | None) -> ModelToolCall:
        arguments, invalid = parse_arguments(raw_arguments)
        return self.tool_call_parsed(provider_call_id, provider_name, arguments, invalid)

    def tool_call_parsed(
        self,
        provider_call_id: str | None,
        provider_name: str,
        arguments: Mapping[str, JsonValue],
        invalid: str | None = None,
    ) -> ModelToolCall:
        name = self.names.to_internal(provider_name) if provider_name else "unnamed_tool"
        return ModelToolCall.from_model(self.provider.ids.new(ToolCallId), provider_call_id, name, arguments, invalid)

    def final_text(self, text: str) -> list[TextDelta]:
        """Text of a non-streamed response: kept as the answer's text, and emitted as deltas (valid Unicode, each
        within `MAX_DELTA_CHARS`)."""
        deltas = list(text_deltas(text))
        self.text_parts.extend(delta.text for delta in deltas)
        return deltas

    def settle_request_id(self) -> str | None:
        """The id the outcome carries: the request-id header, else the response's own id (kept from now on)."""
        self.request_id = self.request_id or self.response_id
        return self.request_id

    def completed(self, calls: list[ModelToolCall], stop: StopReason, refusal: str | None = None) -> list[ModelEvent]:
        """The tool calls, then the completion (after `settle_request_id`). A refusal text is cut to what
        `ModelCompleted.refusal` holds, so a long explanation stays a refusal instead of becoming an error."""
        if refusal is not None:
            refusal = bounded_text(refusal, MAX_REFUSAL_CHARS)
        completed = ModelCompleted(
            provider_request_id=bounded_or_none(self.request_id),
            model=bounded_or_none(self.model),
            stop_reason=stop,
            usage=self.usage,
            refusal=refusal,
        )
        return [*calls, completed]

    def truncated(self, terminal: str, request_id: str | None) -> ProviderStreamError:
        """The stream ended without `terminal`, the protocol's last event."""
        return self.stream_error(truncated_stream_info(self.provider.context, terminal, request_id))

    def stopped(self, category: ErrorCategory, request_id: str | None) -> ProviderStreamError:
        """The provider cut the answer short: content filter, the output-token limit (the one sent) or the context.
        A length stop short of the limit sent is the context window filling up (`length_stop_category`)."""
        if category != "max_output_tokens":
            return self.stream_error(stopped_info(category, self.provider.context, request_id))
        limit = self.provider.max_output_tokens(self.request)
        category = length_stop_category(limit, self.usage)
        info = stopped_info(
            category, self.provider.context, request_id, max_output_tokens=limit, output_tokens=self.usage.output_tokens
        )
        return self.stream_error(info)

    def fail(self, info_failure: ProviderFailure) -> ProviderStreamError:
        info = classify_failure(info_failure, self.provider.context, self.provider.redactor)
        return self.stream_error(info)

    def stream_error(self, info: ErrorInfo) -> ProviderStreamError:
        return ProviderStreamError(
            info,
            partial_text=self.partial_text,
            usage=self.usage,
            provider_request_id=self.request_id,
            model=self.model,
        )


class SdkProvider(ProviderCore[ClientT], ABC):
    """Base of the OpenAI and Anthropic adapters. One instance may serve many calls (and many conversations)."""

    request_id_header = "x-request-id"

    # -- per adapter -------------------------------------------------------------------------------------------
    @abstractmethod
    def _accumulator(self, request: ModelRequest, names: ToolNameMap) -> Accumulator: ...

    @abstractmethod
    async def _open_stream(
        self, client: ClientT, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> SdkStream:
        """Send the request with streaming on; return the SDK stream (already past the HTTP status)."""

    @abstractmethod
    async def _complete(
        self, client: ClientT, request: ModelRequest, names: ToolNameMap, timeout: float
    ) -> tuple[object, str | None]:
        """Send the request without streaming; return the response object and the request-id header."""

    @abstractmethod
    def _failure(self, exc: BaseException) -> ProviderFailure | None:
        """The facts of an SDK exception, or None when it is not an SDK error."""

    # -- shared ------------------------------------------------------------------------------------------------
    @property
    def context(self) -> CallContext:
        """Names used in error messages, with the entry's own timeout."""
        return self._context

    def _exception_failure(self, exc: BaseException) -> ProviderFailure | None:
        return self._failure(exc) or transport_failure(exc)

    def _client_options(self) -> ClientOptions:
        """No SDK retries (the runtime decides on retries), the entry's timeouts and extra headers. Each request
        also gets its own timeout (`CallTimer.io_timeout_s`)."""
        return ClientOptions(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            max_retries=0,
            timeout=max(self.settings.timeout_s, self.settings.idle_timeout_s),
            default_headers=dict(self.settings.headers) or None,
        )

    async def _parsed(self, raw: RawResponse) -> tuple[object, str | None]:
        """The response object of an SDK `with_raw_response` call, and its request-id header."""
        parsed = raw.parse()
        if inspect.isawaitable(parsed):  # anthropic's async raw response parses asynchronously
            parsed = await parsed
        return parsed, raw.headers.get(self.request_id_header)

    def _to_error(self, exc: BaseException, acc: Accumulator, timer: CallTimer) -> ProviderStreamError:
        return self._stream_error(exc, acc.request, acc, acc.stream_error, timer)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one model call. Closing this iterator (or cancelling its task) closes the HTTP stream.

        Timed by a `CallTimer`: the stream's first event within `timeout_s`, then at most `stream_idle_timeout_s`
        between events, the whole call within `max_stream_s` and the request's deadline."""
        names = name_map_for(request)
        acc = self._accumulator(request, names)
        client = self._client_for_loop()  # first: making it may import the SDK, which is not the server's time
        timer = CallTimer(self.settings, request, asyncio.get_running_loop().time)
        if not self.settings.stream:
            try:
                async with asyncio.timeout_at(timer.wait_until()):
                    result, request_id = await self._complete(client, request, names, timer.io_timeout_s())
            except BearAgentError:
                raise
            except Exception as exc:
                raise self._to_error(exc, acc, timer) from None
            acc.request_id = request_id
            try:
                final_events = acc.from_final(result)
            except ProviderStreamError:
                # a cut answer (max tokens, content filter): its text goes out before the failure, as when streaming
                for delta in text_deltas(acc.partial_text):
                    yield delta
                raise
            for event in final_events:
                yield event
            return
        try:
            async with asyncio.timeout_at(timer.wait_until()):
                sdk_stream = await self._open_stream(client, request, names, timer.io_timeout_s())
        except BearAgentError:
            raise
        except Exception as exc:
            raise self._to_error(exc, acc, timer) from None
        acc.request_id = stream_request_id(sdk_stream, self.request_id_header)
        try:
            feed = acc.feed
            append = acc.text_parts.append
            nxt = sdk_stream.__anext__
            wait_until = timer.wait_until
            timeout_at = asyncio.timeout_at
            while True:
                try:
                    async with timeout_at(wait_until()):
                        item = await nxt()
                except StopAsyncIteration:
                    break
                timer.received = True
                text = feed(item)
                if text:
                    text = valid_unicode(text)
                    append(text)
                    if len(text) <= MAX_DELTA_CHARS:
                        yield TextDelta(text=text)
                    else:
                        for delta in text_deltas(text):
                            yield delta
            events = acc.finish()
        except BearAgentError:
            raise
        except Exception as exc:
            raise self._to_error(exc, acc, timer) from None
        finally:
            await sdk_stream.close()
        for event in events:
            yield event

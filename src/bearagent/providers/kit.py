"""The provider kit: a public base for model adapters over a streaming API (an SDK or plain HTTP).

A plugin subclasses `StreamingProvider` and writes three methods:

- `make_client()`: the SDK or HTTP client (made once per event loop; `aclose()` closes it);
- `open_stream(client, call)`: an async generator that sends `call.request` and yields the API's stream events
  (closing the generator must close the HTTP stream: an `async with` around the request inside it does that);
- `feed(event, call)`: reads one event and reports it on `call` (`call.text(...)`, `call.tool_call(...)`,
  `call.tool_call_delta(...)`, `call.usage = ...`, `call.finish(...)`).

and, optionally, `failure(exc)`: the facts (a `ProviderFailure`) of an SDK exception. The kit does the rest the
way the built-in adapters do: tool names projected to provider-safe names and back, tool-call arguments parsed and
bounded, text emitted as it arrives, the entry's time limits (the first event within `timeout_s`, at most
`stream_idle_timeout_s` between events, `max_stream_s` and the request's deadline for the whole call) enforced and
named when they end a call, a stream that ends without
`call.finish()` failed as `truncated_stream`, `max_output_tokens` / `content_filter` stops failed with the partial
text kept, and every failure classified into a stable, secret-free `ErrorInfo` (`rate_limit.exceeded` retryable
after `retry-after`, `authentication.invalid_key` naming the key variable, ...). `httpx` timeouts, connection
errors and `HTTPStatusError`s are understood without a `failure()` override. The runtime owns retries: a kit
provider never retries.

`provider_settings(entry, env, ...)` resolves a `ModelEntry` into `ProviderSettings` (base URL, the key from
`api_key_env`, timeout, limits, headers) with the same rules and error messages as the built-in providers.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from bearagent.domain._base import JsonBoundsError, JsonValue, validate_json_object
from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.messages import ToolCallPart, ToolResultPart
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
from bearagent.providers._base import name_map_for, parse_arguments, wire_call_ids
from bearagent.providers._core import CallTimer, ProviderCore, bounded_or_none, close_resource
from bearagent.providers._failures import default_failure
from bearagent.providers.errors import (
    ProviderFailure,
    ProviderStreamError,
    length_stop_category,
    stopped_info,
    truncated_stream_info,
)

if TYPE_CHECKING:
    pass

ClientT = TypeVar("ClientT")


@dataclass(slots=True)
class _PartialCall:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


class ModelCall:
    """One model call in progress: the request to send, and what the API answered so far.

    Request side: `request` (model, messages, tools, limits), `timeout_s` (the I/O timeout to give the client: the
    longer of the entry's `timeout_s` and `stream_idle_timeout_s`, at most the time the call has left; the kit
    enforces the shorter limits itself), `max_output_tokens` / `temperature` (the request's,
    else the entry's; None = do not send), `wire_name(tool_name)` (the provider-safe spelling of a tool name) and
    `wire_call_id(part)` (the id to send for a tool call or tool result in the history).

    Answer side, from `StreamingProvider.feed`: `text(...)`, `tool_call(...)` or `tool_call_delta(...)`,
    `usage`, `request_id`, `model`, `finish(...)`; `error(failure)` builds the exception to raise for an error event
    inside the stream.
    """

    __slots__ = (
        "_calls",
        "_finished",
        "_ids",
        "_names",
        "_partial",
        "_pending",
        "_provider",
        "_refusal",
        "_stop",
        "_text",
        "_timer",
        "_wire_ids",
        "model",
        "request",
        "request_id",
        "timeout_s",
        "usage",
    )

    def __init__(self, provider: StreamingProvider[Any], request: ModelRequest, timeout_s: float) -> None:
        self.request = request
        self.timeout_s = timeout_s
        self._timer: CallTimer | None = None
        """The call's time limits (set by `StreamingProvider.stream`): a timeout is named after the one in force."""
        self.usage = TokenUsage()
        """Tokens the call used, as the API reported them (assign a `TokenUsage`; the last assignment counts)."""
        self.request_id: str | None = None
        """The provider's id of this request (a request-id header or the response id), for support tickets."""
        self.model: str | None = None
        """The model name the API says answered (when it says)."""
        self._provider = provider
        self._ids = provider.ids
        self._names = name_map_for(request)
        self._wire_ids: dict[ToolCallId, str] | None = None
        self._text: list[str] = []
        self._pending: list[str] = []
        self._calls: list[ModelToolCall] = []
        self._partial: dict[int, _PartialCall] = {}
        self._stop: StopReason | None = None
        self._refusal: str | None = None
        self._finished = False

    # ----- request side -----

    @property
    def max_output_tokens(self) -> int | None:
        return self._provider.max_output_tokens(self.request)

    @property
    def temperature(self) -> float | None:
        return self._provider.temperature(self.request)

    def wire_name(self, tool_name: str) -> str:
        """The name to send for a tool (`^[A-Za-z0-9_-]{1,64}$`; `mcp.time/now` becomes `mcp_time_now`). Names the
        model sends back are mapped to the internal ones by `tool_call` / `tool_call_delta`."""
        return self._names.to_provider(tool_name)

    def wire_call_id(self, part: ToolCallPart | ToolResultPart) -> str:
        """The call id to send for a tool call or a tool result of the history: the provider's own id when it gave
        one, else the id BearAgent assigned (the same for a call and its result)."""
        if part.provider_call_id:
            return part.provider_call_id
        if self._wire_ids is None:
            self._wire_ids = wire_call_ids(self.request.messages)
        return self._wire_ids.get(part.tool_call_id) or str(part.tool_call_id)

    # ----- answer side -----

    @property
    def partial_text(self) -> str:
        """The answer's text so far."""
        return "".join(self._text)

    def text(self, text: str) -> None:
        """Answer text, in the order it arrived (emitted to the user as it comes when the entry streams)."""
        if text:
            text = valid_unicode(text)
            self._text.append(text)
            self._pending.append(text)

    def tool_call(
        self, name: str, arguments: str | Mapping[str, JsonValue] | None, *, call_id: str | None = None
    ) -> None:
        """A complete tool call: `name` as the API sent it, `arguments` as JSON text or an already parsed object,
        `call_id` the API's id for the call (sent back with its result). Arguments that are not a JSON object
        become a failed tool call the model can read, never an exception."""
        if isinstance(arguments, Mapping):
            try:
                parsed, invalid = validate_json_object(arguments, where="arguments"), None
            except JsonBoundsError as exc:
                parsed, invalid = {}, f"the model's tool arguments are too large or too deep: {exc}"
        else:
            parsed, invalid = parse_arguments(arguments)
        internal = self._names.to_internal(name) if name else "unnamed_tool"
        self._calls.append(ModelToolCall.from_model(self._ids.new(ToolCallId), call_id, internal, parsed, invalid))

    def tool_call_delta(
        self, index: int, *, name: str | None = None, arguments: str | None = None, call_id: str | None = None
    ) -> None:
        """A fragment of a streamed tool call: fragments with the same `index` make one call (name and id as soon
        as they come, argument text appended). The calls are completed, in index order, when the stream ends."""
        slot = self._partial.get(index)
        if slot is None:
            slot = self._partial[index] = _PartialCall()
        if call_id:
            slot.call_id = call_id
        if name:
            slot.name = name
        if arguments:
            slot.arguments.append(arguments)

    def finish(self, stop_reason: StopReason | None = None, *, refusal: str | None = None) -> None:
        """The API's terminal event: the answer is complete. `stop_reason` None means `tool_use` when the turn has
        tool calls, else `end_turn`; a `refusal` text makes it `refusal`. `max_output_tokens` and `content_filter`
        end the call as failed (the partial text is kept in the run log). A stream that ends without `finish` is a
        `truncated_stream` failure."""
        self._finished = True
        self._stop = stop_reason
        if refusal:
            self._refusal = bounded_text(refusal, MAX_REFUSAL_CHARS)

    def error(self, failure: ProviderFailure) -> ProviderStreamError:
        """The exception to raise for an error the API reported (e.g. an `error` event after HTTP 200): classified
        like an HTTP error, carrying the text and usage so far."""
        provider = self._provider
        if failure.request_id and self.request_id is None:
            self.request_id = failure.request_id
        info = provider._failure_info(failure, self.request, self.request_id, self._timer)  # pyright: ignore[reportPrivateUsage]
        return self._failed(info)

    # ----- used by StreamingProvider -----

    def _take_deltas(self) -> list[TextDelta]:
        pending = self._pending
        text = pending[0] if len(pending) == 1 else "".join(pending)
        pending.clear()
        if len(text) <= MAX_DELTA_CHARS:  # the common case: one event's text (already valid Unicode: `text`)
            return [TextDelta(text=text)] if text else []
        return list(text_deltas(text))

    def _failed(self, info: ErrorInfo) -> ProviderStreamError:
        return ProviderStreamError(
            info,
            partial_text=self.partial_text,
            usage=self.usage,
            provider_request_id=self.request_id,
            model=self.model,
        )

    def _outcome(self) -> list[ModelEvent]:
        context = self._provider._call_context(self.request)  # pyright: ignore[reportPrivateUsage]
        if not self._finished:
            info = truncated_stream_info(context, "the provider's end-of-answer event", self.request_id)
            raise self._failed(info)
        calls = self._calls + [
            self._streamed(slot) for _, slot in sorted(self._partial.items(), key=lambda item: item[0])
        ]
        stop = self._stop
        if stop == "content_filter":
            raise self._failed(stopped_info("content_filter", context, self.request_id))
        if stop == "max_output_tokens":
            limit = self.max_output_tokens
            info = stopped_info(
                length_stop_category(limit, self.usage),
                context,
                self.request_id,
                max_output_tokens=limit,
                output_tokens=self.usage.output_tokens,
            )
            raise self._failed(info)
        if stop is None:
            stop = "refusal" if self._refusal and not calls else ("tool_use" if calls else "end_turn")
        completed = ModelCompleted(
            provider_request_id=bounded_or_none(self.request_id),
            model=bounded_or_none(self.model),
            stop_reason=stop,
            usage=self.usage,
            refusal=self._refusal,
        )
        return [*calls, completed]

    def _streamed(self, slot: _PartialCall) -> ModelToolCall:
        parsed, invalid = parse_arguments("".join(slot.arguments))
        internal = self._names.to_internal(slot.name) if slot.name else "unnamed_tool"
        return ModelToolCall.from_model(self._ids.new(ToolCallId), slot.call_id, internal, parsed, invalid)


class StreamingProvider(ProviderCore[ClientT], ABC):
    """Base of a `ModelProvider` over a streaming API; see the module docstring. One instance serves many calls
    (and conversations): keep per-call state on the `ModelCall`, not on the provider.

    `settings` comes from `provider_settings(entry, env, ...)`; `ids` is the generator of tool-call ids (the
    provider factory receives the run's generator when it declares an `ids` parameter)."""

    _bug_advice = "This is a bug in the plugin that provides it: please report it to its author with this message."

    # ----- what a provider writes -----

    @abstractmethod
    def make_client(self) -> ClientT:
        """The SDK or HTTP client (e.g. `httpx.AsyncClient(base_url=self.settings.base_url, ...)`). Made on first
        use in each event loop; its `aclose()` (or async `close()`) is called by `StreamingProvider.aclose`."""

    @abstractmethod
    def open_stream(self, client: ClientT, call: ModelCall) -> AsyncIterator[object]:
        """An async generator: send `call.request`, then yield the API's stream events one by one. Let the SDK's
        or HTTP client's exceptions out as they are (`failure()` reads them); closing the generator must close
        the HTTP stream."""

    @abstractmethod
    def feed(self, event: object, call: ModelCall) -> None:
        """Read one event from `open_stream` and report it on `call`. Raise `call.error(ProviderFailure(...))`
        for an error event."""

    def failure(self, exc: BaseException) -> ProviderFailure | None:
        """The facts of an exception raised by the client (HTTP status, the provider's error type and code, its
        message, the response headers), or None to let the kit decide. The default understands `httpx` (and
        plain `ConnectionError`s); override it for an SDK's own exception classes."""
        return None

    # ----- what the kit provides -----

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one model call (the `ModelProvider` protocol). Closing this iterator closes the HTTP stream."""
        try:
            # first: making the client may import an SDK, which is not the server's time (not in `timeout_s`)
            client = self._client_for_loop()
        except BearAgentError:
            raise
        except Exception as exc:
            raise self._error(exc, ModelCall(self, request, self.settings.timeout_s)) from None
        timer = CallTimer(self.settings, request, asyncio.get_running_loop().time)
        call = ModelCall(self, request, timer.io_timeout_s())
        call._timer = timer  # pyright: ignore[reportPrivateUsage]
        live = self.settings.stream
        try:
            events = self.open_stream(client, call)
        except BearAgentError:
            raise
        except Exception as exc:
            raise self._error(exc, call) from None
        try:
            nxt = events.__anext__
            feed = self.feed
            wait_until = timer.wait_until
            while True:
                try:
                    async with asyncio.timeout_at(wait_until()):
                        item = await nxt()
                except StopAsyncIteration:
                    break
                timer.received = True
                feed(item, call)
                if live and call._pending:  # pyright: ignore[reportPrivateUsage]
                    for delta in call._take_deltas():  # pyright: ignore[reportPrivateUsage]
                        yield delta
            outcome = call._outcome()  # pyright: ignore[reportPrivateUsage]
        except ProviderStreamError:
            for delta in call._take_deltas():  # pyright: ignore[reportPrivateUsage]
                yield delta  # a cut or failed answer's text goes out before the failure, streaming or not
            raise
        except BearAgentError:
            raise
        except Exception as exc:
            raise self._error(exc, call) from None
        finally:
            await close_resource(events)
        for delta in call._take_deltas():  # pyright: ignore[reportPrivateUsage]
            yield delta  # not streaming (`stream: false`): the whole text at the end
        for event in outcome:
            yield event

    # ----- internals -----

    def _new_client(self) -> ClientT:
        return self.make_client()

    def _exception_failure(self, exc: BaseException) -> ProviderFailure | None:
        return self.failure(exc) or default_failure(exc)

    def _error(self, exc: BaseException, call: ModelCall) -> ProviderStreamError:
        return self._stream_error(exc, call.request, call, call._failed, call._timer)  # pyright: ignore[reportPrivateUsage]

"""What the built-in SDK adapters (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) share, written on
the public `StreamingProvider` kit plugin authors use: one stream loop, one time-limit and error path for all.

An adapter keeps the state of one call in an object of its own (`new_state`), reads the SDK's stream events into
it and reports them on the kit's `ModelCall` (`on_event`), ends the answer when the SDK stream ends (`on_end`:
`call.finish(...)`, or the truncation of its protocol), and reads a non-streamed response (`on_final`, with
`stream: false`). The SDK's stream is opened by `start_stream`, the whole response by `complete`; the request-id
response header becomes the call's `request_id`. The SDKs never retry (the runtime decides on retries)."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypedDict, TypeVar

from bearagent.domain.errors import ErrorCategory
from bearagent.providers._core import ProviderCore
from bearagent.providers._failures import stream_request_id, transport_failure
from bearagent.providers.errors import ProviderFailure, ProviderStreamError, stopped_info, truncated_stream_info
from bearagent.providers.kit import ModelCall, StreamingProvider

ClientT = TypeVar("ClientT")
StateT = TypeVar("StateT")
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


@dataclass(frozen=True, slots=True)
class _Item:
    """One SDK event (or the whole non-streamed response, `final`) with the state of the call it belongs to."""

    state: object
    event: object
    final: bool = False


class SdkAdapter(StreamingProvider[ClientT], Generic[ClientT, StateT], ABC):
    """Base of the built-in SDK adapters: the kit's `open_stream` / `feed` / `failure` over an SDK."""

    request_id_header: ClassVar[str] = "x-request-id"
    _bug_advice = ProviderCore._bug_advice  # pyright: ignore[reportPrivateUsage]  # a built-in: report it to us

    # ----- per adapter -----

    @abstractmethod
    def new_state(self) -> StateT:
        """The state of one call (what the adapter accumulates between the SDK's events)."""

    @abstractmethod
    async def start_stream(self, client: ClientT, call: ModelCall) -> SdkStream:
        """Send `call.request` with streaming on (timeout `call.timeout_s`); return the SDK stream."""

    @abstractmethod
    async def complete(self, client: ClientT, call: ModelCall) -> RawResponse:
        """Send `call.request` without streaming (timeout `call.timeout_s`); return the SDK's raw response."""

    @abstractmethod
    def on_event(self, state: StateT, event: object, call: ModelCall) -> None:
        """Read one streamed SDK event into `state` and report it on `call`."""

    @abstractmethod
    def on_end(self, state: StateT, call: ModelCall) -> None:
        """The SDK stream ended: `call.finish(...)`, or raise (`truncated`, a cut answer, a failed response)."""

    @abstractmethod
    def on_final(self, state: StateT, result: object, call: ModelCall) -> None:
        """Read a non-streamed response and report it on `call`, `call.finish(...)` included."""

    @abstractmethod
    def sdk_failure(self, exc: BaseException) -> ProviderFailure | None:
        """The facts of an SDK exception, or None when it is not an SDK error."""

    # ----- the kit's side -----

    async def open_stream(self, client: ClientT, call: ModelCall) -> AsyncIterator[object]:
        state = self.new_state()
        if not self.settings.stream:
            raw = await self.complete(client, call)
            parsed = raw.parse()
            if inspect.isawaitable(parsed):  # anthropic's async raw response parses asynchronously
                parsed = await parsed
            request_id = raw.headers.get(self.request_id_header)
            call.request_id = request_id[:256] if request_id else None
            yield _Item(state, parsed, final=True)
            return
        stream = await self.start_stream(client, call)
        call.request_id = stream_request_id(stream, self.request_id_header)
        try:
            nxt = stream.__anext__
            while True:
                try:
                    event = await nxt()
                except StopAsyncIteration:
                    break
                yield _Item(state, event)
        finally:
            await stream.close()
        self.on_end(state, call)

    def feed(self, event: object, call: ModelCall) -> None:
        assert isinstance(event, _Item)
        state: StateT = event.state  # pyright: ignore[reportAssignmentType]
        if event.final:
            self.on_final(state, event.event, call)
        else:
            self.on_event(state, event.event, call)

    def failure(self, exc: BaseException) -> ProviderFailure | None:
        return self.sdk_failure(exc) or transport_failure(exc)

    # ----- helpers for the adapters -----

    def client_options(self) -> ClientOptions:
        """No SDK retries (the runtime decides on retries), the entry's timeouts and extra headers. Each request
        also gets its own timeout (`ModelCall.timeout_s`)."""
        return ClientOptions(
            api_key=self.settings.api_key,
            base_url=self.settings.base_url,
            max_retries=0,
            timeout=max(self.settings.timeout_s, self.settings.idle_timeout_s),
            default_headers=dict(self.settings.headers) or None,
        )

    def truncated(self, call: ModelCall, terminal: str, request_id: str | None) -> ProviderStreamError:
        """The stream ended without `terminal`, the protocol's last event."""
        info = truncated_stream_info(self._call_context(call.request), terminal, request_id)
        return call._failed(info)  # pyright: ignore[reportPrivateUsage]

    def stopped(self, call: ModelCall, category: ErrorCategory, request_id: str | None) -> ProviderStreamError:
        """The provider cut the answer short for a reason `call.finish` has no stop for (the context window)."""
        info = stopped_info(category, self._call_context(call.request), request_id)
        return call._failed(info)  # pyright: ignore[reportPrivateUsage]

"""What every provider base shares (the public kit's `StreamingProvider`, which the built-in SDK adapters use too
through `_sdk.SdkAdapter`): its settings, the tool-call id generator, the secret redactor, the names error messages use,
one client per event loop (closed with the provider), the request's limits, and how an exception raised while
calling the API becomes the `ProviderStreamError` the runtime sees."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Generic, Protocol, TypeVar

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import IdGenerator, Uuid4IdGenerator
from bearagent.domain.models import MAX_RECORDED_NAME_CHARS, ModelRequest, bounded_text
from bearagent.providers.errors import (
    CallContext,
    ProviderFailure,
    ProviderStreamError,
    SecretRedactor,
    TimeoutKind,
    classify_failure,
    timeout_info,
)

ClientT = TypeVar("ClientT")


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Everything an SDK adapter needs, resolved from a `ModelEntry` by the factory (the key value included)."""

    entry_ref: str
    model: str
    base_url: str
    api_key: str
    api_key_env: str | None = None
    timeout_s: float = 120.0
    """Time to the first streamed event of an answer (with `stream: false`, to the whole answer)."""
    max_output_tokens: int | None = None
    temperature: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    stream: bool = True
    provider_label: str = "the model provider"
    stream_idle_timeout_s: float | None = None
    """Longest silence between two streamed events; None: the same as `timeout_s`."""
    max_stream_s: float | None = None
    """Cap on a whole answer; None: only the request's deadline (`ModelRequest.timeout_ms`)."""

    @property
    def idle_timeout_s(self) -> float:
        """The silence allowed between two streamed events: `stream_idle_timeout_s`, else `timeout_s`."""
        return self.stream_idle_timeout_s if self.stream_idle_timeout_s is not None else self.timeout_s

    def redactor(self) -> SecretRedactor:
        return SecretRedactor([self.api_key, *self.headers.values()])


class CallInProgress(Protocol):
    """What the error path needs of a call: the provider's request id, when known (a failure may bring it)."""

    request_id: str | None


class CallTimer:
    """The time limits of one model call, on the event loop's clock: its first event within `timeout_s` of the
    request, then at most `stream_idle_timeout_s` of silence between two events, and the whole call within the
    entry's `max_stream_s` and the request's deadline (`timeout_ms`), whichever ends first.

    `wait_until()` is the instant the wait that starts now (for the stream to open, for its next event) must end by;
    it remembers which limit that is (`current`), so a timeout, raised by this timer or by the HTTP client, is
    reported as the limit that was in force. Only the awaits of the stream are timed: the time the consumer takes
    between two events is not silence of the server."""

    __slots__ = ("_clock", "_end", "_end_kind", "_first_at", "current", "first_byte_s", "idle_s", "received", "total_s")

    def __init__(self, settings: ProviderSettings, request: ModelRequest, clock: Callable[[], float]) -> None:
        now = clock()
        self._clock = clock
        self.first_byte_s = settings.timeout_s
        self.idle_s = settings.idle_timeout_s
        deadline_s = request.timeout_ms / 1000
        cap = settings.max_stream_s
        if cap is not None and cap <= deadline_s:
            self._end_kind: TimeoutKind = "max_stream"
            self.total_s = cap
        else:
            self._end_kind = "deadline"
            self.total_s = deadline_s
        self._end = now + self.total_s
        self._first_at = now + self.first_byte_s
        self.received = False
        """Set once the stream delivered its first event: from then on the idle limit applies."""
        self.current: TimeoutKind = "first_byte"

    def wait_until(self) -> float:
        """The loop time by which the wait starting now must end (and `current`: which limit that is)."""
        if self.received:
            at = self._clock() + self.idle_s
            kind: TimeoutKind = "stream_idle"
        else:
            at = self._first_at
            kind = "first_byte"
        if self._end < at:  # on a tie the entry's wait is named: it is the one the user set
            self.current = self._end_kind
            return self._end
        self.current = kind
        return at

    def io_timeout_s(self) -> float:
        """The connect/read timeout to give the HTTP client: a backstop no shorter than the waits this timer
        allows (it enforces them itself), cut to the time the call has left."""
        left = self._end - self._clock()
        return max(min(max(self.first_byte_s, self.idle_s), left), 0.001)

    def limit_s(self) -> float:
        """The value of the limit in force (`current`), in seconds."""
        kind = self.current
        if kind == "first_byte":
            return self.first_byte_s
        if kind == "stream_idle":
            return self.idle_s
        return self.total_s


class ProviderCore(Generic[ClientT]):
    _bug_advice: ClassVar[str] = "This is a bug: please report it with this message."
    """What the message of an unexpected adapter exception asks the user to do."""

    def __init__(self, settings: ProviderSettings, *, ids: IdGenerator | None = None) -> None:
        self.settings = settings
        self.ids: IdGenerator = ids or Uuid4IdGenerator()
        self.redactor = settings.redactor()
        self._context = CallContext(
            provider_label=settings.provider_label,
            entry_ref=settings.entry_ref,
            model=settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
        )
        self._client: ClientT | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @abstractmethod
    def _new_client(self) -> ClientT:
        """A new SDK or HTTP client (made on first use in each event loop)."""

    @abstractmethod
    def _exception_failure(self, exc: BaseException) -> ProviderFailure | None:
        """The facts of an exception the client raised, or None when it is not a provider failure (a bug)."""

    def max_output_tokens(self, request: ModelRequest) -> int | None:
        """The output-token limit to send: the request's, else the entry's (None: not sent)."""
        return request.max_output_tokens or self.settings.max_output_tokens

    def temperature(self, request: ModelRequest) -> float | None:
        """The temperature to send: the request's, else the entry's (None: not sent)."""
        return request.temperature if request.temperature is not None else self.settings.temperature

    async def aclose(self) -> None:
        """Close the client (its connection pool). The provider stays usable: a new client is made. A client made in
        another event loop is only let go: its connections belong to that loop, and closing them from this one fails
        (the runtime closes its providers from whatever loop closes it, e.g. `Workspace.close()`'s own)."""
        client, loop = self._client, self._client_loop
        self._client = None
        self._client_loop = None
        if client is not None and loop is asyncio.get_running_loop():
            await close_resource(client)

    def _client_for_loop(self) -> ClientT:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = self._new_client()
            self._client_loop = loop
        return self._client

    def _call_context(self, request: ModelRequest) -> CallContext:
        """Names used in error messages (provider label, entry, model, base URL, key variable, effective timeout)."""
        effective = min(self._context.timeout_s, request.timeout_ms / 1000)
        if effective == self._context.timeout_s:
            return self._context
        return dataclasses.replace(self._context, timeout_s=effective)

    def _failure_info(
        self, failure: ProviderFailure, request: ModelRequest, request_id: str | None, timer: CallTimer | None
    ) -> ErrorInfo:
        """The `ErrorInfo` of a provider failure; a timeout is named after the call's limit in force."""
        if failure.kind == "timeout" and timer is not None:
            return timeout_info(
                timer.current, self._context, timer.limit_s(), request_id, streaming=self.settings.stream
            )
        return classify_failure(failure, self._call_context(request), self.redactor)

    def _stream_error(
        self,
        exc: BaseException,
        request: ModelRequest,
        call: CallInProgress,
        failed: Callable[[ErrorInfo], ProviderStreamError],
        timer: CallTimer | None = None,
    ) -> ProviderStreamError:
        """The `ProviderStreamError` for `exc` (`failed` adds the call's partial text and usage): a time limit of
        the call (`timer`'s, or the HTTP client's), a classified provider failure, or, for anything else, an
        `internal.adapter` error naming the exception."""
        context = self._call_context(request)
        if isinstance(exc, TimeoutError):
            failure: ProviderFailure | None = ProviderFailure(kind="timeout", message="deadline reached")
        else:
            failure = self._exception_failure(exc)
        if failure is None:
            # Not a provider failure: a bug or a broken SDK. Not retryable; the message names the exception.
            text = self.redactor.redact(f"{type(exc).__name__}: {exc}")
            return failed(
                ErrorInfo.of(
                    "internal",
                    "adapter",
                    f"The {context.provider_label} adapter failed unexpectedly for model entry {context.entry_ref} "
                    f"({text[:800]}). {self._bug_advice}",
                )
            )
        if failure.request_id and call.request_id is None:
            call.request_id = failure.request_id
        return failed(self._failure_info(failure, request, call.request_id, timer))


async def close_resource(resource: object) -> None:
    """`aclose()` (else `close()`) of a client or stream, awaited when it is a coroutine."""
    close: object = getattr(resource, "aclose", None) or getattr(resource, "close", None)
    if callable(close):
        result: object = close()
        if inspect.isawaitable(result):
            await result


def bounded_or_none(value: str | None) -> str | None:
    """A provider's request id or model name as `ModelCompleted` holds them (valid Unicode, cut to the bound)."""
    return bounded_text(value, MAX_RECORDED_NAME_CHARS) if value else None

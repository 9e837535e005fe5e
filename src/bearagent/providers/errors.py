"""Provider failures as public `ErrorInfo`: one classification for every adapter, secrets stripped.

Adapters pull the protocol-neutral facts out of an SDK exception (HTTP status, the provider's error `type` and
`code`, its message, the response headers) into a `ProviderFailure`, and `classify_failure` turns that into an
`ErrorInfo` with a stable category. Every text that leaves goes through a `SecretRedactor` first, so an API key or
an `Authorization` header echoed back by a server never reaches an error, an event or a log line.

Why one long module: it is one classification table. The error categories, the SDK and server wordings that
map to them and the fix each one names are read together whenever a provider changes its messages.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import BearAgentError, DetailValue, ErrorCategory, ErrorInfo
from bearagent.domain.overflow import CONTEXT_OVERFLOW_FIX, LOOSE_OVERFLOW_TEXT, OVERFLOW_CODES, says_context_overflow
from bearagent.domain.overflow import is_context_overflow as is_context_overflow  # the loop's test, from the domain

REDACTED = "[REDACTED]"
_MIN_SECRET_CHARS = 4
# Key-shaped tokens (OpenAI `sk-...`, `sk-proj-...`, Anthropic `sk-ant-...`) and bearer credentials, redacted even
# when they are not the configured key (a server may echo another key, or a partially masked one).
_KEY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bsk-[A-Za-z0-9_\-*.]{6,}"),
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9_\-.~+/=*]+"),
    re.compile(r"(?i)(x-api-key|api[_-]?key|authorization)(\"?\s*[:=]\s*\"?)[^\s\",}]+"),
)
MAX_DETAIL_CHARS = 512


class SecretRedactor:
    """Removes the given secret values, and anything shaped like an API key or bearer token, from a text."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= _MIN_SECRET_CHARS}
        # Longest first, so a secret containing another is removed whole.
        self._secrets: tuple[str, ...] = tuple(sorted(values, key=len, reverse=True))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        for pattern in _KEY_PATTERNS:
            text = pattern.sub(_redact_match, text)
        return text


def _redact_match(match: re.Match[str]) -> str:
    if match.re.groups >= 2:
        return f"{match.group(1)}{match.group(2)}{REDACTED}"
    if match.re.groups == 1:
        return f"{match.group(1)} {REDACTED}"
    return REDACTED


class ProviderStreamError(BearAgentError):
    """A model call that failed, possibly after some text was streamed.

    `partial_text` is the text the model produced before the failure (already emitted as `TextDelta`s), `usage` the
    tokens reported so far (zero when the provider never said), so the runtime can record both with the failure.
    """

    def __init__(
        self,
        info: ErrorInfo,
        *,
        partial_text: str = "",
        usage: TokenUsage | None = None,
        provider_request_id: str | None = None,
        model: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(info, hint=hint)
        self.partial_text = partial_text
        self.usage = usage if usage is not None else TokenUsage()
        self.provider_request_id = provider_request_id
        self.model = model


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling: names used in messages so the user knows which entry and variable to fix."""

    provider_label: str
    entry_ref: str
    model: str
    base_url: str
    api_key_env: str | None
    timeout_s: float


@dataclass(frozen=True, slots=True)
class ProviderFailure:
    """The protocol-neutral facts of one failed call, extracted from an SDK exception or a stream event."""

    kind: str  # "status" (HTTP error), "stream" (error after HTTP 200), "timeout", "network"
    message: str
    status: int | None = None
    error_type: str | None = None
    error_code: str | None = None
    request_id: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


def _is_overflow(failure: ProviderFailure, etype: str, ecode: str, server_msg: str) -> bool:
    """A request that does not fit in the context window, in any of the words servers use (`domain/overflow.py`):
    an overflow code or type, a wording only an overflow uses (whatever the status: Ollama has answered 500, an older
    llama-server sends it inside a 200 stream), or a looser wording on a request the server called invalid."""
    if ecode in OVERFLOW_CODES or etype in OVERFLOW_CODES or says_context_overflow(server_msg):
        return True
    invalid = failure.status in (400, 413, 422) or etype == "invalid_request_error"
    return invalid and LOOSE_OVERFLOW_TEXT.search(server_msg) is not None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from `retry-after-ms` (preferred) or `retry-after` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000.0
            if math.isfinite(value) and value >= 0:
                return min(value, 86_400.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        if math.isfinite(value) and value >= 0:
            return min(value, 86_400.0)
        return None
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return min(max(parsed.timestamp() - time.time(), 0.0), 86_400.0)


def _clip(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_info(
    category: ErrorCategory,
    specific: str,
    message: str,
    details: Mapping[str, DetailValue],
    *,
    retryable: bool = False,
    retry_after_s: float | None = None,
) -> ErrorInfo:
    return ErrorInfo(
        category=category,
        code=f"{category}.{specific}",
        message=_clip(message, 2000),
        retryable=retryable,
        retry_after_s=retry_after_s,
        details=details,
    )


def classify_failure(failure: ProviderFailure, ctx: CallContext, redactor: SecretRedactor) -> ErrorInfo:
    """Map a provider failure to a stable category, a retryable flag and a message that says how to fix it."""
    server_msg = redactor.redact(failure.message.strip() or "no message")
    server_msg = _clip(server_msg, 800)
    status = failure.status
    etype = (failure.error_type or "").lower()
    ecode = (failure.error_code or "").lower()
    where = f"{ctx.provider_label} (model entry {ctx.entry_ref}, model {ctx.model})"
    http = f"HTTP {status}: " if status is not None and failure.kind == "status" else ""
    said = f"{http}{server_msg}"
    details: dict[str, DetailValue] = {"provider": ctx.provider_label}
    if status is not None:
        details["http_status"] = status
    if failure.error_type:
        details["provider_error_type"] = _clip(redactor.redact(failure.error_type), 128)
    if failure.error_code:
        details["provider_code"] = _clip(redactor.redact(failure.error_code), 128)
    if failure.request_id:
        details["provider_request_id"] = _clip(failure.request_id, 256)
    should_retry = {k.lower(): v for k, v in failure.headers.items()}.get("x-should-retry")

    def info(category: ErrorCategory, specific: str, message: str, *, retryable: bool) -> ErrorInfo:
        if should_retry == "false" and retryable:
            retryable = False
            details["server_said_retry"] = False
        retry_after = parse_retry_after(failure.headers) if retryable else None
        return make_info(category, specific, message, details, retryable=retryable, retry_after_s=retry_after)

    if failure.kind == "timeout":
        return info(
            "timeout",
            "request",
            f"{where} did not answer within {ctx.timeout_s:g}s. Raise `timeout_s` in the model entry, "
            "or check that the server at the entry's base_url is responsive.",
            retryable=True,
        )
    if failure.kind == "network":
        return info(
            "network",
            "connection",
            f"Could not talk to {where} at {redactor.redact(ctx.base_url)}: {server_msg}. Check `base_url` in the "
            "model entry and that the server is running and reachable.",
            retryable=True,
        )
    key_hint = f"the variable {ctx.api_key_env}" if ctx.api_key_env else "the API key variable named by `api_key_env`"
    if ecode == "insufficient_quota" or etype == "insufficient_quota" or status == 402:
        return info(
            "quota",
            "exhausted",
            f"{where} refused the call because the account has no quota or credit left ({said}). Add credit or raise "
            "the spending limit in the provider's billing settings; retrying will not help.",
            retryable=False,
        )
    if _is_overflow(failure, etype, ecode, server_msg):
        return info(
            "context_overflow",
            "exceeded",
            f"The conversation is longer than the context window of {where} ({said}). {CONTEXT_OVERFLOW_FIX}",
            retryable=False,
        )
    if status == 401 or etype == "authentication_error" or ecode == "invalid_api_key":
        return info(
            "authentication",
            "invalid_key",
            f"{where} rejected the credentials ({said}). Check that {key_hint} holds a valid key for this provider.",
            retryable=False,
        )
    if status == 403 or etype == "permission_error":
        return info(
            "permission",
            "denied",
            f"{where} refused access ({said}). Check that the key behind {key_hint} may use this model, or choose "
            "another model in the entry.",
            retryable=False,
        )
    if status == 429 or etype in ("rate_limit_error", "rate_limit_exceeded") or ecode == "rate_limit_exceeded":
        return info(
            "rate_limit",
            "exceeded",
            f"{where} is rate limiting this key ({said}). The call can be retried after the server's delay; lower "
            "the request rate or raise the limit if it keeps happening.",
            retryable=True,
        )
    if status in (529, 503) or etype == "overloaded_error" or ecode == "overloaded":
        return info(
            "overloaded",
            "busy",
            f"{where} is overloaded ({said}). The call can be retried later.",
            retryable=True,
        )
    if status == 404 or etype == "not_found_error" or ecode == "model_not_found":
        return info(
            "invalid_request",
            "not_found",
            f"{where} does not know this model or endpoint ({said}). Check `model` and `base_url` in the entry.",
            retryable=False,
        )
    if status in (408, 504) or ecode == "timeout":
        return info(
            "timeout",
            "server",
            f"{where} timed out on its side ({said}). The call can be retried.",
            retryable=True,
        )
    if status == 409:
        return info(
            "conflict", "retry", f"{where} reported a conflict ({said}). The call can be retried.", retryable=True
        )
    if status is not None and 400 <= status < 500 and failure.kind == "status":
        return info(
            "invalid_request",
            "rejected",
            f"{where} rejected the request ({said}). Check the model entry's options (model, max_output_tokens, "
            "temperature, headers) and the tool schemas.",
            retryable=False,
        )
    if "policy" in ecode or ecode == "content_filter":
        return info(
            "content_filter",
            "policy",
            f"{where} refused the request under its usage policy ({said}). Rephrase the request; retrying the same "
            "request will not help.",
            retryable=False,
        )
    if etype == "invalid_request_error" or ecode.startswith("invalid_") or "image" in ecode:
        return info(
            "invalid_request",
            "rejected",
            f"{where} rejected the request ({said}). Check the model entry's options and the tool schemas.",
            retryable=False,
        )
    # 5xx, or an error that arrived in the stream after HTTP 200 with a server-side type.
    stage = "mid-stream" if failure.kind == "stream" else "server"
    return info(
        "server",
        "mid_stream" if failure.kind == "stream" else "error",
        f"{where} failed with a {stage} error ({said}). The call can be retried.",
        retryable=True,
    )


def _call_details(ctx: CallContext, request_id: str | None, **extra: DetailValue) -> dict[str, DetailValue]:
    """The details of a failure the adapter found itself: the provider, `extra`, the provider's request id."""
    details: dict[str, DetailValue] = {"provider": ctx.provider_label, **extra}
    if request_id:
        details["provider_request_id"] = _clip(request_id, 256)
    return details


TimeoutKind: TypeAlias = Literal["first_byte", "stream_idle", "max_stream", "deadline"]
"""Which limit ended a model call: the wait for its first event (`timeout_s`), the silence between two events
(`stream_idle_timeout_s`), the entry's cap on the whole answer (`max_stream_s`) or the request's deadline."""


def timeout_info(
    kind: TimeoutKind, ctx: CallContext, limit_s: float, request_id: str | None, *, streaming: bool = True
) -> ErrorInfo:
    """A model call ended by one of its time limits (retryable): the message names the limit and the key to raise."""
    where = f"{ctx.provider_label} (model entry {ctx.entry_ref}, model {ctx.model})"
    details = _call_details(ctx, request_id, timeout=kind, limit_s=round(limit_s, 3))
    if kind == "first_byte" and streaming:
        message = (
            f"{where} sent nothing within {limit_s:g}s of the request (`timeout_s`: the time to the first event of "
            "the answer). Raise `timeout_s` in the model entry if the model needs longer to start (a long prompt on "
            "a local model), or check that the server at the entry's base_url is responsive."
        )
    elif kind == "first_byte":
        message = (
            f"{where} did not answer within {limit_s:g}s (`timeout_s`; with `stream: false` it bounds the whole "
            "answer). Raise `timeout_s` in the model entry, or stream the answer (`stream: true`) if the server can."
        )
    elif kind == "stream_idle":
        message = (
            f"{where} stopped in the middle of its answer: nothing arrived for {limit_s:g}s "
            "(`stream_idle_timeout_s`). Raise `stream_idle_timeout_s` in the model entry if the model pauses that "
            "long (long reasoning), or check the server and any proxy between."
        )
    elif kind == "max_stream":
        message = (
            f"{where} was still answering after {limit_s:g}s, the entry's cap on a whole answer (`max_stream_s`). "
            "Raise or remove `max_stream_s` in the model entry, or ask for a shorter answer."
        )
    else:
        message = (
            f"{where} did not finish within {limit_s:g}s, the deadline of this model call (`ModelRequest.timeout_ms`; "
            "the runtime sets it to the entry's `max_stream_s`, else one hour). Give the call a longer deadline."
        )
    return make_info("timeout", kind, message, details, retryable=True)


def truncated_stream_info(ctx: CallContext, terminal: str, request_id: str | None) -> ErrorInfo:
    """The stream ended without its protocol's terminal event: a failure, never a success (retryable)."""
    details = _call_details(ctx, request_id, expected_terminal=terminal)
    return make_info(
        "truncated_stream",
        "no_terminal_event",
        f"The answer stream from {ctx.provider_label} (model entry {ctx.entry_ref}) ended before its terminal "
        f"event ({terminal}), so the answer is incomplete. The call can be retried; if it keeps happening, check "
        "proxies or load balancers between BearAgent and the server.",
        details,
        retryable=True,
    )


def length_stop_category(max_output_tokens: int | None, usage: TokenUsage) -> ErrorCategory:
    """What an answer that stopped for length (`length`, `max_tokens`, `incomplete: max_output_tokens`) ran out of:
    the output-token limit, or the context window when a limit was sent and the answer stopped short of it (a
    server whose window fills while it answers, such as llama-server or Ollama, reports the same stop; continuing
    such an answer cannot help)."""
    if max_output_tokens is not None and 0 < usage.output_tokens < max_output_tokens:
        return "context_overflow"
    return "max_output_tokens"


def stopped_info(
    category: ErrorCategory,
    ctx: CallContext,
    request_id: str | None,
    *,
    max_output_tokens: int | None = None,
    output_tokens: int | None = None,
) -> ErrorInfo:
    """A turn the provider cut short: content filter, the context window or the output-token limit (not retryable).
    `output_tokens` (with the limit sent) says how far a length stop got."""
    details = _call_details(ctx, request_id)
    if output_tokens and max_output_tokens:  # ("token" in a details key reads as a secret: these names do not)
        details["output_used"] = output_tokens
        details["output_limit"] = max_output_tokens
    if category == "content_filter":
        return make_info(
            "content_filter",
            "stopped",
            f"{ctx.provider_label}'s content filter stopped the answer of model entry {ctx.entry_ref}; the partial "
            "text is kept in the run log. Rephrase the request.",
            details,
        )
    if category == "context_overflow":
        short = (
            f" (it stopped for length after {output_tokens} output tokens, short of max_output_tokens={max_output_tokens})"
            if output_tokens and max_output_tokens
            else ""
        )
        return make_info(
            "context_overflow",
            "during_output",
            f"The conversation and its answer are longer than the context window of model entry {ctx.entry_ref}: "
            f"it filled while the model answered{short}; the partial text is kept in the run log. "
            f"{CONTEXT_OVERFLOW_FIX}",
            details,
        )
    limit = f" (max_output_tokens={max_output_tokens})" if max_output_tokens else ""
    return make_info(
        "max_output_tokens",
        "reached",
        f"The answer of model entry {ctx.entry_ref} hit the output-token limit{limit}; the partial text is kept in "
        "the run log. Raise `max_output_tokens` in the model entry or ask for a shorter answer.",
        details,
    )

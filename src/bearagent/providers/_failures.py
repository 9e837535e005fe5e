"""The facts (`ProviderFailure`) of the exceptions a model API client raises: the `openai` and `anthropic` SDKs'
(they share one shape), `httpx`'s and the SDKs' HTTP transport errors, and plain `ConnectionError`s. Classifying
the facts into a stable `ErrorInfo` is `providers/errors.py`."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from bearagent.providers.errors import ProviderFailure

if TYPE_CHECKING:
    import httpx


def _mapping_get(value: object, key: str) -> object:
    if isinstance(value, Mapping):
        return value.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return None


def _str_or_none(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _error_object(body: object) -> object:
    """The error object of an error body: `body["error"]` when it is an object, else the body itself (vLLM's older
    servers put `message`/`type`/`code` at the top). A string error (`{"error": "..."}`, as LM Studio and Ollama
    answer; the SDKs hand over that string as the body) is returned as it is. When the error (or its `message`) is
    the JSON text of another error object (Ollama passing llama-server's error on), that object is returned."""
    inner = _mapping_get(body, "error")
    err: object = cast(object, inner) if isinstance(inner, (Mapping, str)) else body
    text = err if isinstance(err, str) else _mapping_get(err, "message")
    if isinstance(text, str) and text.lstrip().startswith("{"):  # also Ollama's /v1: the JSON text as `message`
        with contextlib.suppress(ValueError, RecursionError):
            parsed: object = json.loads(text)
            nested = _mapping_get(parsed, "error")
            if _mapping_get(nested, "message"):
                return nested
    return err


def failure_from_sdk(
    exc: BaseException,
    *,
    timeout_error: type[BaseException],
    connection_error: type[BaseException],
    status_error: type[BaseException],
    api_error: type[BaseException],
    request_id_header: str,
) -> ProviderFailure | None:
    """The facts of an `openai`/`anthropic` exception (both SDKs share the shape)."""
    if isinstance(exc, timeout_error):
        return ProviderFailure(kind="timeout", message="request timed out")
    if isinstance(exc, connection_error):
        cause = exc.__cause__
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return ProviderFailure(kind="network", message=detail)
    if not isinstance(exc, api_error):
        return None
    err = _error_object(getattr(exc, "body", None))
    message = err if isinstance(err, str) and err else _str_or_none(_mapping_get(err, "message"))
    if not message:
        message = _str_or_none(getattr(exc, "message", None)) or str(exc)
    error_type = _str_or_none(_mapping_get(err, "type"))
    error_code = _str_or_none(_mapping_get(err, "code"))
    if isinstance(exc, status_error):
        status: object = getattr(exc, "status_code", None)
        response: object = getattr(exc, "response", None)
        raw_headers: object = getattr(response, "headers", None)
        headers: dict[str, str] = {}
        if isinstance(raw_headers, Mapping):
            for key, value in raw_headers.items():  # pyright: ignore[reportUnknownVariableType]
                headers[str(key).lower()] = str(value)  # pyright: ignore[reportUnknownArgumentType]
        status_code = status if isinstance(status, int) else None
        kind = "stream" if status_code == 200 else "status"
        return ProviderFailure(
            kind=kind,
            message=message,
            status=status_code if kind == "status" else None,
            error_type=error_type,
            error_code=error_code,
            request_id=headers.get(request_id_header),
            headers=headers,
        )
    return ProviderFailure(kind="stream", message=message, error_type=error_type, error_code=error_code)


def stream_request_id(stream: object, header: str) -> str | None:
    """The request-id response header of an SDK stream (`x-request-id` for OpenAI, `request-id` for Anthropic)."""
    response: object = getattr(stream, "response", None)
    headers: object = getattr(response, "headers", None)
    get: object = getattr(headers, "get", None)
    if not callable(get):
        return None
    value: object = get(header)
    return value[:256] if isinstance(value, str) and value else None


def transport_failure(exc: BaseException) -> ProviderFailure | None:
    """An HTTP transport error the SDK let through unwrapped (e.g. a connection dropped mid-stream)."""
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return ProviderFailure(kind="timeout", message="request timed out")
    if isinstance(exc, httpx2.TransportError):
        return ProviderFailure(kind="network", message=f"{type(exc).__name__}: {exc}")
    return None


def default_failure(exc: BaseException) -> ProviderFailure | None:
    """What the kit understands without a `failure()` override: `httpx` timeouts, transport errors and
    `HTTPStatusError`s (with the status, headers and an `{"error": {"message", "type", "code"}}` body), the
    SDKs' HTTP transport errors, and `ConnectionError`."""
    found = transport_failure(exc)
    if found is not None:
        return found
    if "httpx" in sys.modules:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return ProviderFailure(kind="timeout", message="request timed out")
        if isinstance(exc, httpx.HTTPStatusError):
            return _status_failure(exc.response)
        if isinstance(exc, httpx.TransportError):
            return ProviderFailure(kind="network", message=f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ConnectionError):
        return ProviderFailure(kind="network", message=f"{type(exc).__name__}: {exc}")
    return None


def _status_failure(response: httpx.Response) -> ProviderFailure:
    headers = {k.lower(): v for k, v in response.headers.items()}
    message = f"HTTP {response.status_code}"
    error_type: str | None = None
    error_code: str | None = None
    try:
        body: object = response.json()
    except Exception:  # not read, not JSON: the text, when there is one
        with contextlib.suppress(Exception):
            message = response.text[:2000] or message
    else:
        inner = _error_object(body)
        if isinstance(inner, str) and inner:
            message = inner[:2000]
        elif isinstance(inner, Mapping):
            err = cast(Mapping[str, object], inner)
            message = str(err.get("message") or message)[:2000]
            error_type = str(err["type"]) if err.get("type") else None
            error_code = str(err["code"]) if err.get("code") else None
    return ProviderFailure(
        kind="status",
        message=message,
        status=response.status_code,
        error_type=error_type,
        error_code=error_code,
        request_id=headers.get("x-request-id") or headers.get("request-id"),
        headers=headers,
    )

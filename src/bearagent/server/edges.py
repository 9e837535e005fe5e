"""The server's edges: what a connection may cost before anyone knows who sent it.

- **The body cap** (`BodyLimit`, ASGI): a request whose `Content-Length` is over `limits.max_body_bytes` is answered
  413 before its body is read; a chunked body (no length) is counted as it arrives and answered 413 the moment it
  passes the cap. FastAPI reads a route's body before its dependencies run (authentication is one), so the cap has
  to sit here, in front of everything: an unauthenticated 400 MB chunked upload costs at most the cap.
- **Body time** (`BodyLimit`): a request's body must have arrived `limits.body_timeout_s` after its head did, else
  the request is answered 408 and the connection closed: a head sent at once and a body a byte at a time (a slow
  body, which the header timer no longer watches) holds a connection and a waiting route only that long.
- **Idle and header time** (`edge_protocol`, the h11 protocol uvicorn runs): a connection that has not sent a
  complete request head within `limits.header_timeout_s` of opening (or of its last response) is closed, whether it
  sends nothing or a byte at a time; an idle keep-alive connection is closed after `limits.keep_alive_timeout_s`.
- **Header size** (`edge_protocol`): a request head over `limits.max_header_bytes` is answered 431 and closed,
  counted as it arrives (uvicorn's `h11_max_incomplete_event_size` is set too, but h11 only checks a head that
  arrives in pieces).
- **Connection count** (`edge_protocol`, with uvicorn's `limit_concurrency`): a connection opened while
  `limits.max_connections` are open is answered 503 and closed at once, before it sends anything, so the sockets a
  client can hold open stay within the cap (they cannot run the server out of file descriptors; `bearagent serve`
  checks at start that the cap fits the process's descriptor limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

Scope = dict[str, Any]
Message = dict[str, Any]


def _error_body(code: str, message: str) -> bytes:
    return json.dumps(
        {"error": {"category": "invalid_request", "code": code, "message": message, "retryable": False}}
    ).encode()


def _too_large_body(max_bytes: int) -> bytes:
    return _error_body("request_too_large", f"the body is over {max_bytes} bytes (the server's limits.max_body_bytes)")


class BodyLimit:
    """ASGI middleware: no request body over `max_bytes` reaches the app, with or without a `Content-Length`, and
    none takes longer than `timeout_s` to arrive (counted from the request's start)."""

    def __init__(self, app: Any, max_bytes: int, timeout_s: float = 60.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(send, 413, _too_large_body(self.max_bytes))
            return
        seen = 0
        answered = False
        body_done = False
        deadline = asyncio.get_running_loop().time() + self.timeout_s

        async def limited_receive() -> Message:
            nonlocal seen, answered, body_done
            if answered:
                return {"type": "http.disconnect"}
            if body_done:  # after the body: the app waits for the client to go (streams); no deadline
                return await receive()
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                message: Message = await asyncio.wait_for(receive(), max(remaining, 0.001))
            except TimeoutError:
                answered = True
                said = f"the body did not arrive within {self.timeout_s:g} s (the server's limits.body_timeout_s)"
                await self._refuse(send, 408, _error_body("request_timeout", said))
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:  # answer now; the app sees the client gone and reads no further
                    answered = True
                    await self._refuse(send, 413, _too_large_body(self.max_bytes))
                    return {"type": "http.disconnect"}
                body_done = not message.get("more_body", False)
            return message

        async def guarded_send(message: Message) -> None:
            if not answered:  # after our 413/408 the app's own answer (to a "disconnect") goes nowhere
                await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _refuse(self, send: Any, status: int, body: bytes) -> None:
        with contextlib.suppress(Exception):  # the client may be gone already; there is nothing left to tell it
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})


_HEAD_TOO_LARGE_TEXT = b"the request head is over the server's limits.max_header_bytes"
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"content-length: {len(_HEAD_TOO_LARGE_TEXT)}\r\n\r\n".encode()
    + _HEAD_TOO_LARGE_TEXT
)


_FULL_TEXT = b"the server has limits.max_connections connections open; try again shortly"
_FULL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"retry-after: 1\r\ncontent-length: {len(_FULL_TEXT)}\r\n\r\n".encode()
    + _FULL_TEXT
)


def edge_protocol(
    header_timeout_s: float, max_header_bytes: int = 16_384, max_connections: int | None = None
) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is not complete `header_timeout_s` after it
    opened or after its last response (an idle socket, or a slow one sending a byte at a time), and answering 431
    to a request head over `max_header_bytes` (h11's own `max_incomplete_event_size` only counts a head that arrives
    in pieces: one read of 64 KiB holding a whole head passes it); a connection opened while `max_connections` are
    open is answered 503 and closed at once."""

    class EdgeH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _head_bytes: int = 0
        _head_tail: bytes = b""

        def _waiting_for_head(self) -> bool:
            cycle: Any = getattr(self, "cycle", None)  # None until the first request head (uvicorn types it not)
            return cycle is None or bool(cycle.response_complete)

        def data_received(self, data: bytes) -> None:
            if self._waiting_for_head() and not self.transport.is_closing():
                seen = self._head_tail + data
                end = seen.find(b"\r\n\r\n")
                self._head_bytes += (end + 4 - len(self._head_tail)) if end >= 0 else len(data)
                self._head_tail = b"" if end >= 0 else seen[-3:]
                if self._head_bytes > max_header_bytes:
                    self.transport.write(_HEAD_TOO_LARGE)
                    self.transport.close()
                    return
                if end >= 0:
                    self._head_bytes = 0
            super().data_received(data)

        def _arm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(header_timeout_s, self._head_expired)

        def _head_expired(self) -> None:
            self._head_timer = None
            if self._waiting_for_head() and not self.transport.is_closing():
                with contextlib.suppress(h11.LocalProtocolError):
                    self.conn.send(h11.ConnectionClosed())
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if max_connections is not None and len(self.connections) > max_connections:
                transport.write(_FULL)  # over the cap: answered and closed now, not held until a head arrives
                transport.close()
                return
            self._arm_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._head_bytes, self._head_tail = 0, b""
            if not self.transport.is_closing():
                self._arm_head()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

    return EdgeH11Protocol

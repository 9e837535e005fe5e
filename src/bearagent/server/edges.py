"""The server's edges: what a connection may cost before anyone knows who sent it.

- **The body cap** (`BodyLimit`, ASGI): a request whose `Content-Length` is over `limits.max_body_bytes` is answered
  413 before its body is read; a chunked body (no length) is counted as it arrives and answered 413 the moment it
  passes the cap. FastAPI reads a route's body before its dependencies run (authentication is one), so the cap has
  to sit here, in front of everything: an unauthenticated 400 MB chunked upload costs at most the cap.
- **Idle and header time** (`edge_protocol`, the h11 protocol uvicorn runs): a connection that has not sent a
  complete request head within `limits.header_timeout_s` of opening (or of its last response) is closed, whether it
  sends nothing or a byte at a time; an idle keep-alive connection is closed after `limits.keep_alive_timeout_s`.
- **Header size and connection count**: uvicorn's own `h11_max_incomplete_event_size` (`limits.max_header_bytes`)
  and `limit_concurrency` (`limits.max_connections`: over it, new requests get 503).
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


def _too_large_body(max_bytes: int) -> bytes:
    return json.dumps(
        {
            "error": {
                "category": "invalid_request",
                "code": "request_too_large",
                "message": f"the body is over {max_bytes} bytes (the server's limits.max_body_bytes)",
                "retryable": False,
            }
        }
    ).encode()


class BodyLimit:
    """ASGI middleware: no request body over `max_bytes` reaches the app, with or without a `Content-Length`."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(send)
            return
        seen = 0
        answered = False

        async def limited_receive() -> Message:
            nonlocal seen, answered
            if answered:
                return {"type": "http.disconnect"}
            message: Message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:  # answer now; the app sees the client gone and reads no further
                    answered = True
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not answered:  # after our 413 the app's own answer (to a "disconnect") goes nowhere
                await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _refuse(self, send: Any) -> None:
        body = _too_large_body(self.max_bytes)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def edge_protocol(header_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is not complete `header_timeout_s` after it
    opened or after its last response (an idle socket, or a slow one sending a byte at a time)."""

    class EdgeH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def _arm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(header_timeout_s, self._head_expired)

        def _head_expired(self) -> None:
            self._head_timer = None
            cycle: Any = getattr(self, "cycle", None)  # None until the first request head (uvicorn types it not)
            waiting_for_head = cycle is None or bool(cycle.response_complete)
            if waiting_for_head and not self.transport.is_closing():
                with contextlib.suppress(h11.LocalProtocolError):
                    self.conn.send(h11.ConnectionClosed())
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_head()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

    return EdgeH11Protocol

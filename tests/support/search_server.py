"""A local stand-in for a search API (Brave, Tavily, SearXNG, Exa): records every request (method, path, query
parameters, headers, JSON body) and answers what the test sets."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class SearchServer:
    """A search API on 127.0.0.1: records each request and answers with `reply(seen) -> (status, bytes)`."""

    reply: Callable[[Seen], tuple[int, bytes]]
    seen: list[Seen] = field(default_factory=lambda: [])
    url: str = ""


@contextlib.contextmanager
def search_server() -> Generator[SearchServer]:
    """A SearchServer on a free port of 127.0.0.1 (port 0), shut down on exit."""
    state = SearchServer(reply=lambda _: (500, b""))

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            seen = Seen(
                self.command,
                parts.path,
                parse_qs(parts.query),
                {k.lower(): v for k, v in self.headers.items()},
                json.loads(raw) if raw else None,
            )
            state.seen.append(seen)
            status, payload = state.reply(seen)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _answer
        do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()

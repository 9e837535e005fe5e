"""A local server speaking Anthropic's Messages API (127.0.0.1, random port), non-streamed: every POST /v1/messages
is answered with one message: a `tool_use` of Bash for each command queued in `tool_calls` (first), else `text`.
The key each request carried (`x-api-key`, or the bearer token) is kept in `keys`. Use it as a context manager, or
call `close()`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


class FakeAnthropic:
    def __init__(self, text: str = "Hello from the fake.") -> None:
        self.text = text
        self.keys: list[str] = []
        self.tool_calls: list[str] = []
        """Bash commands to answer with (one tool_use each, first), before the plain text answers."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ")
                fake.keys.append(self.headers.get("x-api-key") or bearer)  # the SDK sends one or the other
                content: list[dict[str, object]] = [{"type": "text", "text": fake.text}]
                stop = "end_turn"
                if fake.tool_calls:
                    command = fake.tool_calls.pop(0)
                    content = [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": command}}]
                    stop = "tool_use"
                body = json.dumps(
                    {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-fake",
                        "content": content,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 5, "output_tokens": 4},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

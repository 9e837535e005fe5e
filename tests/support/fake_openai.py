"""A local OpenAI-compatible server (127.0.0.1, random port) that answers a scripted sequence: `/v1/models` with a
given listing, `/v1/chat/completions` with one answer per request, in order: a streamed text answer, or an error
body recorded from a real server (the provider fixtures' `error_*.json`). Every request is kept in `requests`."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

from tests.support.replay_server import LOCAL_FIXTURES


@dataclass(frozen=True, slots=True)
class Answer:
    text: str = ""
    prompt_tokens: int = 10
    completion_tokens: int = 5
    error_fixture: str | None = None
    """A fixture under tests/fixtures/providers/ (`openai_chat/error_400_llamacpp_context_size.json`)."""


@dataclass
class Seen:
    method: str
    path: str
    body: Mapping[str, object] = field(default_factory=dict[str, object])

    def text(self) -> str:
        """Every message content of a chat request, joined."""
        messages = cast(list[Mapping[str, object]], self.body.get("messages", []))
        return "\n".join(str(m.get("content") or "") for m in messages)


class FakeOpenAI:
    def __init__(self, answers: list[Answer], *, listing: Mapping[str, object] | None = None) -> None:
        self.answers = list(answers)
        self.listing = listing
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                fake.requests.append(Seen("GET", self.path))
                if self.path.rstrip("/").endswith("/models") and fake.listing is not None:
                    self._json(200, fake.listing)
                else:
                    self._json(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = cast(dict[str, object], json.loads(self.rfile.read(length) or b"{}"))
                with fake._lock:
                    fake.requests.append(Seen("POST", self.path, body))
                    answer = fake.answers.pop(0) if fake.answers else Answer(text="(the fake has no more answers)")
                if answer.error_fixture is not None:
                    fixture = json.loads((LOCAL_FIXTURES / answer.error_fixture).read_text())
                    self._json(int(fixture["status"]), fixture["body"])
                    return
                self._stream(answer)

            def _json(self, status: int, payload: Mapping[str, object]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, answer: Answer) -> None:
                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
                chunks: list[dict[str, object]] = [
                    {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer.text}}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    {
                        **base,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": answer.prompt_tokens,
                            "completion_tokens": answer.completion_tokens,
                            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
                        },
                    },
                ]
                data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chat_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.method == "POST"]

"""A local HTTP server (127.0.0.1, random port) that replays provider wire fixtures to the real SDKs.

Fixture sets are directories holding a `manifest.json`: the project's own set `local` (`tests/fixtures/providers/`,
all the default test run needs) and, when it is present, the shared set `shared` beside the repository (same shape;
see `shared_fixtures_dir()`). A request to `/fx/<set>/<fixture path>/v1/<endpoint>` gets that fixture: `*.sse` bodies
with status 200, the manifest's headers and chunked transfer encoding, split into random 1-64 byte chunks (each one
its own socket write);
`error_*.json` envelopes with their status, headers and compact JSON body; other `*.json` as plain 200 bodies.
The request must hit the fixture's manifest endpoint. A manifest entry with `"disconnect": true` drops the
connection after the body instead of ending the chunked stream.

Other routes:
- `/echo-auth/v1/...`: 401 whose error message echoes the request's `Authorization` and `x-api-key` headers
  (a hostile server, for the secret-redaction tests).
- `/slow/<protocol>/v1/...`: an endless stream of text deltas, one every 20 ms; `closed` is set when the client
  goes away (the cancellation tests).
- `/hang/v1/...`: headers of a 200 stream, then silence (the timeout tests).
- `/drip/<protocol>/<n>/<every_ms>/v1/...`: a slow but live answer: the stream's head at once, then `n` text deltas
  (`t0 `, `t1 `, ...), one every `every_ms`, then the terminal events.
- `/stall/<protocol>/<n>/v1/...`: the head and `n` deltas at once, then silence (an answer that stops in the
  middle).
- `/late/<protocol>/<delay_ms>/v1/...`: nothing at all (not even the status line) for `delay_ms`, then a short
  complete answer (a server that takes long to start answering).
- `/gen/<protocol>/<n>/v1/...`: a generated stream of `n` text deltas then the terminal event (the benchmark).
- `GET .../models` (any prefix): a model listing of `LISTED_MODEL_IDS`, in the shape both APIs use.

Every request is recorded (method, path, headers, JSON body) in `requests`.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "providers"


def _shared_providers_path() -> Path:
    override = os.environ.get("BEARAGENT_SHARED_DIR")
    base = Path(override) if override else REPO_ROOT.parent / "shared"
    return base / "fixtures" / "providers"


def shared_fixtures_dir() -> Path | None:
    """The shared provider fixtures, `$BEARAGENT_SHARED_DIR/fixtures/providers` or else
    `<repo>/../shared/fixtures/providers`; None when there is no `manifest.json` there.

    The default test run does not need them (the project's own set covers every scenario); when present, they are
    replayed as an extra check, and the tests that replay them skip with `SHARED_FIXTURES_MISSING` otherwise."""
    path = _shared_providers_path()
    return path if (path / "manifest.json").is_file() else None


SHARED_FIXTURES_MISSING = (
    f"shared provider fixtures not found at {_shared_providers_path()} (no manifest.json); to replay them as well, put "
    "the shared set beside the repository (<repo>/../shared/fixtures/providers/) or set BEARAGENT_SHARED_DIR to the "
    "directory that holds fixtures/providers/"
)


def default_fixture_sets() -> dict[str, Path]:
    """The project's own set (`local`), plus the shared set (`shared`) when it is present."""
    sets = {"local": LOCAL_FIXTURES}
    shared = shared_fixtures_dir()
    if shared is not None:
        sets["shared"] = shared
    return sets


@dataclass(frozen=True, slots=True)
class Fixture:
    set_name: str
    name: str
    path: Path
    protocol: str
    endpoint: str
    status: int
    headers: Mapping[str, str]
    expect: Mapping[str, object]
    disconnect: bool = False

    @property
    def is_stream(self) -> bool:
        return self.name.endswith(".sse")


def load_manifest(set_name: str, root: Path) -> dict[str, Fixture]:
    raw = cast(dict[str, object], json.loads((root / "manifest.json").read_text(encoding="utf-8")))
    entries = cast(dict[str, dict[str, object]], raw["fixtures"])
    out: dict[str, Fixture] = {}
    for name, entry in entries.items():
        out[name] = Fixture(
            set_name=set_name,
            name=name,
            path=root / name,
            protocol=str(entry["protocol"]),
            endpoint=str(entry["endpoint"]),
            status=int(cast(int, entry["status"])),
            headers=cast(dict[str, str], entry.get("headers") or {}),
            expect=cast(dict[str, object], entry.get("expect") or {}),
            disconnect=bool(entry.get("disconnect", False)),
        )
    return out


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        return cast(dict[str, object], json.loads(self.body or b"{}"))


LISTED_MODEL_IDS = (
    "claude-sonnet-4-5",
    "claude-opus-4-5",
    "claude-haiku-4-5",
    "claude-3-7-sonnet-latest",
    "\x1b]0;pwned\x07",
)
"""What a GET of `.../models` lists (the last id holds terminal controls: a listing is untrusted)."""
PROTOCOL_PREFIX = {"openai_chat": "/v1", "openai_responses": "/v1", "anthropic_messages": ""}


@dataclass
class _State:
    fixtures: dict[tuple[str, str], Fixture] = field(default_factory=dict[tuple[str, str], Fixture])
    requests: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    closed: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    rng: random.Random = field(default_factory=lambda: random.Random(int(os.environ.get("REPLAY_SEED", "1234"))))
    lock: threading.Lock = field(default_factory=threading.Lock)


def _sse(event: str, data: Mapping[str, object]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def generated_stream(protocol: str, n: int, text: str = "tok ") -> bytes:
    """A valid stream of `n` text deltas then the protocol's terminal event (for cancellation and benchmarks)."""
    parts: list[bytes] = []
    if protocol == "openai_chat":
        base = {"id": "chatcmpl-gen", "object": "chat.completion.chunk", "created": 1, "model": "gen-model"}
        delta = json.dumps({**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
        line = f"data: {delta}\n\n".encode()
        parts.append(line * n)
        end: dict[str, object] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        usage: dict[str, object] = {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": n + 5},
        }
        parts.append(f"data: {json.dumps(end)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
    elif protocol == "openai_responses":
        resp: dict[str, object] = {
            "id": "resp_gen",
            "object": "response",
            "created_at": 1,
            "status": "in_progress",
            "model": "gen-model",
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        parts.append(_sse("response.created", {"type": "response.created", "sequence_number": 0, "response": resp}))
        item: dict[str, object] = {
            "id": "msg_gen",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        parts.append(
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
            )
        )
        for i in range(n):
            parts.append(
                _sse(
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": 2 + i,
                        "item_id": "msg_gen",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                        "logprobs": [],
                    },
                )
            )
        done = {
            **resp,
            "status": "completed",
            "usage": {
                "input_tokens": 5,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": n,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": n + 5,
            },
        }
        parts.append(
            _sse("response.completed", {"type": "response.completed", "sequence_number": n + 2, "response": done})
        )
    else:
        message: dict[str, object] = {
            "id": "msg_gen",
            "type": "message",
            "role": "assistant",
            "model": "gen-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        }
        parts.append(_sse("message_start", {"type": "message_start", "message": message}))
        parts.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        )
        parts.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            )
            * n
        )
        parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        parts.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": n},
                },
            )
        )
        parts.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(parts)


def _one_delta(protocol: str, i: int) -> bytes:
    if protocol == "openai_chat":
        chunk = {
            "id": "chatcmpl-slow",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "slow",
            "choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()
    if protocol == "openai_responses":
        return _sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": 2 + i,
                "item_id": "msg_gen",
                "output_index": 0,
                "content_index": 0,
                "delta": f"t{i} ",
                "logprobs": [],
            },
        )
    return _sse(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"t{i} "}},
    )


def stream_head_and_tail(protocol: str) -> tuple[bytes, bytes]:
    """The events of a generated stream before its first text delta, and after its last one (the terminal events)."""
    events = [e + b"\n\n" for e in generated_stream(protocol, 0).split(b"\n\n") if e]
    split = 0 if protocol == "openai_chat" else 2
    return b"".join(events[:split]), b"".join(events[split:])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def state(self) -> _State:
        return cast(_Server, self.server).state

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.endswith("/models"):  # a model listing (Anthropic's /v1/models, an OpenAI /v1/models)
            headers = {k.lower(): v for k, v in self.headers.items()}
            with self.state.lock:
                self.state.requests.append(RecordedRequest("GET", self.path, headers, b""))
            data = [{"type": "model", "id": i, "display_name": i, "object": "model"} for i in LISTED_MODEL_IDS]
            self._send_json(200, {"data": data, "has_more": False, "object": "list"}, {})
            return
        self._send_json(200 if path == "/health" else 404, {"status": "ok"}, {})

    def do_POST(self) -> None:
        state = self.state
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        with state.lock:
            state.requests.append(RecordedRequest("POST", self.path, headers, body))
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        try:
            if parts[0] == "fx":
                self._serve_fixture(parts)
            elif parts[0] == "echo-auth":
                secret_bits = f"Authorization={headers.get('authorization')} x-api-key={headers.get('x-api-key')}"
                msg = f"Invalid credentials: you sent {secret_bits}"
                if self.path.endswith("/messages"):
                    payload: dict[str, object] = {
                        "type": "error",
                        "error": {"type": "authentication_error", "message": msg},
                    }
                else:
                    payload = {"error": {"message": msg, "type": "invalid_request_error", "code": "invalid_api_key"}}
                self._send_json(401, payload, {"x-request-id": "req_echo", "request-id": "req_echo"})
            elif parts[0] == "slow":
                self._serve_slow(parts[1])
            elif parts[0] == "hang":
                self._start_stream({"content-type": "text/event-stream"})
                state.stop.wait(30)
            elif parts[0] == "drip":
                self._serve_drip(parts[1], int(parts[2]), every_s=int(parts[3]) / 1000)
            elif parts[0] == "stall":
                self._serve_drip(parts[1], int(parts[2]), every_s=0.0, stall=True)
            elif parts[0] == "late":
                if not state.stop.wait(int(parts[2]) / 1000):
                    self._serve_drip(parts[1], 2, every_s=0.0)
            elif parts[0] == "gen":
                data = generated_stream(parts[1], int(parts[2]))
                self._start_stream({"content-type": "text/event-stream", "x-request-id": "req_gen"})
                step = 65536
                for i in range(0, len(data), step):
                    self._chunk(data[i : i + step])
                self._end_chunks()
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}, {})
        except (BrokenPipeError, ConnectionResetError):
            state.closed.set()
            self.close_connection = True

    def _serve_fixture(self, parts: list[str]) -> None:
        state = self.state
        set_name = parts[1]
        # the fixture name is `<protocol dir>/<file>`
        name = "/".join(parts[2:4])
        fixture = state.fixtures.get((set_name, name))
        if fixture is None:
            self._send_json(404, {"error": {"message": f"unknown fixture {set_name}/{name}", "type": "x"}}, {})
            return
        endpoint = "/" + "/".join(parts[4:])
        if endpoint != fixture.endpoint:
            self._send_json(
                404,
                {"error": {"message": f"fixture {name} answers {fixture.endpoint}, not {endpoint}", "type": "x"}},
                {},
            )
            return
        raw = fixture.path.read_bytes()
        if fixture.name.rsplit("/", 1)[-1].startswith("error_"):
            envelope = cast(dict[str, object], json.loads(raw))
            self._send_json(
                int(cast(int, envelope["status"])),
                cast(dict[str, object], envelope["body"]),
                cast(dict[str, str], envelope.get("headers") or {}),
            )
            return
        if not fixture.is_stream:
            self._send_bytes(fixture.status, raw, fixture.headers)
            return
        self._start_stream(fixture.headers, status=fixture.status)
        pos = 0
        while pos < len(raw):
            size = state.rng.randint(1, 64)
            self._chunk(raw[pos : pos + size])
            pos += size
        if fixture.disconnect:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        self._end_chunks()

    def _serve_slow(self, protocol: str) -> None:
        state = self.state
        self._start_stream({"content-type": "text/event-stream", "x-request-id": "req_slow"})
        head = generated_stream(protocol, 0).split(b"\n\n")
        # the generated head (everything before the first delta) minus the terminal events
        if protocol == "openai_responses" or protocol == "anthropic_messages":
            self._chunk(b"\n\n".join(head[:2]) + b"\n\n")
        i = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not state.stop.is_set():
            self._chunk(_one_delta(protocol, i))
            i += 1
            time.sleep(0.02)

    def _serve_drip(self, protocol: str, n: int, *, every_s: float, stall: bool = False) -> None:
        state = self.state
        head, tail = stream_head_and_tail(protocol)
        self._start_stream({"content-type": "text/event-stream", "x-request-id": "req_drip"})
        self._chunk(head)
        for i in range(n):
            if every_s and state.stop.wait(every_s):
                return
            self._chunk(_one_delta(protocol, i))
        if not stall:
            self._chunk(tail)
            self._end_chunks()
            return
        state.stop.wait(30)

    def _send_json(self, status: int, payload: Mapping[str, object], headers: Mapping[str, str]) -> None:
        merged = {**headers, "content-type": "application/json"}
        self._send_bytes(status, json.dumps(payload, separators=(",", ":")).encode(), merged)

    def _send_bytes(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(key, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, headers: Mapping[str, str], status: int = 200) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(key, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class ReplayServer:
    """Start with `with ReplayServer() as server:`; `server.base_url(fixture)` points an SDK at one fixture."""

    def __init__(self, sets: Mapping[str, Path] | None = None) -> None:
        if sets is None:
            sets = default_fixture_sets()
        self.fixtures: dict[tuple[str, str], Fixture] = {}
        for set_name, root in sets.items():
            for name, fixture in load_manifest(set_name, root).items():
                self.fixtures[(set_name, name)] = fixture
        self._state = _State(fixtures=self.fixtures)
        self._server = _Server(self._state)
        self._thread = threading.Thread(target=self._server.serve_forever, name="replay-server", daemon=True)

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._state.stop.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def closed(self) -> threading.Event:
        return self._state.closed

    def base_url(self, fixture: Fixture) -> str:
        """The SDK base_url that routes to `fixture` (OpenAI SDKs want `/v1` in it, Anthropic's adds `/v1`)."""
        return f"{self.origin}/fx/{fixture.set_name}/{fixture.name}{PROTOCOL_PREFIX[fixture.protocol]}"

    def route_url(self, route: str, protocol: str) -> str:
        return f"{self.origin}/{route}{PROTOCOL_PREFIX[protocol]}"

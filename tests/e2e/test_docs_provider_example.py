"""The model-provider example of docs/plugins.md, run as written against a local fake of the (imaginary) Wren API:
through the whole runtime (a run with a tool call), and directly for the failures a provider has to report."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest
from tests.support.doc_blocks import import_doc_block

from bearagent import BearAgentError, open_workspace
from bearagent.plugin import (
    Message,
    ModelCompleted,
    ModelEntry,
    ModelEvent,
    ModelProvider,
    ModelRequest,
    PluginHost,
    ProviderStreamError,
    StreamingProvider,
    TextDelta,
    ToolDescriptor,
)

REPO = Path(__file__).resolve().parents[2]
FIRST_LINE = "# src/bearagent_wren/__init__.py"
KEY = "wren-key-0123456789"
pytestmark = [pytest.mark.network_local]


@dataclass
class Reply:
    status: int = 200
    lines: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    body: dict[str, object] | None = None
    headers: dict[str, str] = field(default_factory=dict[str, str])


@dataclass
class FakeWren:
    """The Wren API: each POST /v1/chat takes the next reply; every request is recorded."""

    replies: list[Reply] = field(default_factory=list[Reply])
    requests: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    headers: list[Mapping[str, str]] = field(default_factory=list[Mapping[str, str]])
    url: str = ""


@pytest.fixture(scope="module")
def wren_module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return import_doc_block("docs/plugins.md", FIRST_LINE, tmp_path_factory.mktemp("wren"), "bearagent_wren")


@pytest.fixture
def wren() -> Iterator[FakeWren]:
    fake = FakeWren()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            fake.requests.append(json.loads(self.rfile.read(length)))
            fake.headers.append(dict(self.headers.items()))
            reply = fake.replies.pop(0) if self.path == "/v1/chat" else Reply(status=404, body={"error": {}})
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("content-type", "application/json" if reply.body is not None else "application/x-ndjson")
            self.end_headers()
            if reply.body is not None:
                self.wfile.write(json.dumps(reply.body).encode())
            for line in reply.lines:
                self.wfile.write(json.dumps(line).encode() + b"\n")
                self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def test_the_example_runs_an_agent_through_a_tool_call(wren_module: ModuleType, wren: FakeWren, tmp_path: Path) -> None:
    ws = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", ws, ignore=shutil.ignore_patterns("state.db*", "outputs"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        f"models:\n  wren:\n    provider: wren\n    model: wren-1\n    base_url: {wren.url}\n", encoding="utf-8"
    )
    wren.replies = [
        Reply(
            headers={"x-request-id": "wren-req-1"},
            lines=[
                {"type": "text", "text": "Reading the project page."},
                {"type": "tool_call", "index": 0, "id": "call_1", "name": "Read", "arguments": '{"file_pa'},
                {"type": "tool_call", "index": 0, "arguments": 'th": "docs/project.md"}'},
                {"type": "usage", "input_tokens": 120, "output_tokens": 9},
                {"type": "done", "stop": "tool_use"},
            ],
        ),
        Reply(
            lines=[
                {"type": "text", "text": "BearAgent is local-first, "},
                {"type": "text", "text": "and its events record facts."},
                {"type": "usage", "input_tokens": 180, "output_tokens": 12},
                {"type": "done", "stop": "end_turn"},
            ]
        ),
    ]
    host = PluginHost()
    host.register(wren_module, "wren", version="0.1.0")
    env = {"BEARAGENT_HOME": str(home), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "WREN_API_KEY": KEY}
    with open_workspace(ws, env=env, plugins=host) as workspace:
        result = workspace.run_sync("What is this project?", model="wren")
    assert result.status == "succeeded", result.error
    assert result.final == "BearAgent is local-first, and its events record facts."
    assert result.usage.input_tokens == 300 and result.usage.output_tokens == 21
    first, second = wren.requests
    assert wren.headers[0]["Authorization"] == f"Bearer {KEY}" and first["model"] == "wren-1"
    assert "Read" in [cast(dict[str, object], t)["name"] for t in cast(list[object], first["tools"])]
    messages = cast(list[dict[str, object]], second["messages"])
    assistant = next(m for m in messages if m["role"] == "assistant")
    assert cast(list[dict[str, object]], assistant["tool_calls"]) == [
        {"id": "call_1", "name": "Read", "arguments": {"file_path": "docs/project.md"}}
    ]
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_1" and "Events record facts." in str(tool["content"])
    assert tool["is_error"] is False


def _provider(module: ModuleType, wren: FakeWren, **fields: object) -> StreamingProvider[Any]:
    make = cast(Callable[..., ModelProvider], module.make_wren)
    entry = ModelEntry.model_validate(
        {"name": "wren", "provider": "wren", "model": "wren-1", "base_url": wren.url, **fields}
    )
    provider = make(entry, env={"WREN_API_KEY": KEY}, base_dir=Path("."))
    assert isinstance(provider, StreamingProvider)
    return cast(StreamingProvider[Any], provider)


def _stream(provider: StreamingProvider[Any]) -> tuple[list[ModelEvent], BearAgentError | None]:
    request = ModelRequest(
        model="wren-1",
        messages=(Message.user("hi"),),
        tools=(ToolDescriptor(name="mcp.time/now", description="time", input_schema={"type": "object"}),),
    )

    async def go() -> tuple[list[ModelEvent], BearAgentError | None]:
        events: list[ModelEvent] = []
        try:
            async for event in provider.stream(request):
                events.append(event)
        except BearAgentError as exc:
            return events, exc
        finally:
            await provider.aclose()
        return events, None

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("reply", "code", "retryable"),
    [
        (
            Reply(status=401, body={"error": {"type": "authentication_error", "message": f"bad key {KEY}"}}),
            "authentication.invalid_key",
            False,
        ),
        (
            Reply(
                status=429,
                body={"error": {"type": "rate_limit_error", "message": "slow"}},
                headers={"retry-after": "2"},
            ),
            "rate_limit.exceeded",
            True,
        ),
        (Reply(lines=[{"type": "text", "text": "half"}]), "truncated_stream.no_terminal_event", True),
        (
            Reply(lines=[{"type": "text", "text": "a"}, {"type": "error", "error": {"type": "overloaded_error"}}]),
            "overloaded.busy",
            True,
        ),
        (
            Reply(lines=[{"type": "text", "text": "long"}, {"type": "done", "stop": "max_tokens"}]),
            "max_output_tokens.reached",
            False,
        ),
        (Reply(lines=[{"type": "done", "stop": "filtered"}]), "content_filter.stopped", False),
    ],
    ids=["401", "429", "truncated", "error-event", "max-tokens", "filtered"],
)
def test_the_example_reports_failures_like_a_built_in_provider(
    wren_module: ModuleType, wren: FakeWren, reply: Reply, code: str, retryable: bool
) -> None:
    wren.replies = [reply]
    events, error = _stream(_provider(wren_module, wren))
    assert error is not None and error.info.code == code and error.info.retryable is retryable
    assert KEY not in error.info.message and "workspace/wren" in error.info.message
    if code == "authentication.invalid_key":
        assert "WREN_API_KEY" in error.info.message
    if code == "rate_limit.exceeded":
        assert error.info.retry_after_s == 2
    if reply.lines and reply.lines[0].get("type") == "text":
        assert isinstance(error, ProviderStreamError) and error.partial_text == reply.lines[0]["text"]
        assert [e.text for e in events if isinstance(e, TextDelta)] == [reply.lines[0]["text"]]


def test_the_example_sends_provider_safe_tool_names_and_the_entry_limits(
    wren_module: ModuleType, wren: FakeWren
) -> None:
    wren.replies = [Reply(lines=[{"type": "text", "text": "ok"}, {"type": "done", "stop": "end_turn"}])]
    events, error = _stream(_provider(wren_module, wren, max_output_tokens=77, temperature=0.5))
    assert error is None and isinstance(events[-1], ModelCompleted) and events[-1].stop_reason == "end_turn"
    sent = wren.requests[0]
    assert [cast(dict[str, object], t)["name"] for t in cast(list[object], sent["tools"])] == ["mcp_time_now"]
    assert sent["max_tokens"] == 77 and sent["temperature"] == 0.5


def test_the_example_factory_needs_its_key(wren_module: ModuleType) -> None:
    make = cast(Callable[..., ModelProvider], wren_module.make_wren)
    entry = ModelEntry(name="wren", provider="wren", model="wren-1", source="config.yaml")
    with pytest.raises(BearAgentError) as caught:
        make(entry, env={}, base_dir=Path("."))
    assert caught.value.info.code == "configuration.missing_api_key" and "export WREN_API_KEY" in str(caught.value)

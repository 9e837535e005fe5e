"""Trace context leaves the process with the calls a run makes (issue 36): with the OpenTelemetry plugin exporting a
run live, an MCP tool call carries the W3C `traceparent` of its `execute_tool` span in `params._meta` (a real stdio
MCP server answers with what it received), an http hook sends it as a header (a local server records it), a command
hook gets `TRACEPARENT`. Without a tracing plugin nothing is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import pytest
from bearagent_otel import LiveExport
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.support.config_ws import isolated_env, load
from tests.support.mcp_helpers import server_in_workspace
from tests.support.otel_plugin import PLUGIN_SRC, installed_site, otlp_receiver
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.domain.trace_context import checked
from bearagent.plugin import RegisterEventSink, hookimpl
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

SCRIPT = """
turns:
  - tool_calls: [{name: mcp__trace__trace, arguments: {}}]
  - text: "traced"
"""


@contextmanager
def hook_receiver() -> Generator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", seen
    finally:
        server.shutdown()
        server.server_close()


def workspace(tmp: Path, hook_url: str) -> tuple[Path, Path]:
    server = server_in_workspace(tmp / "ws", "trace_echo.py")
    config = (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n  trace: {{command: {sys.executable}, args: [{server}], startup_timeout_s: 30}}\n"
        "hooks:\n"
        "  PreToolUse:\n"
        f"    - matcher: mcp__trace__trace\n      hooks: [{{type: http, url: '{hook_url}'}}]\n"
        "  PostToolUse:\n"
        "    - matcher: mcp__trace__trace\n"
        '      hooks: [{type: command, command: \'printf "%s" "$TRACEPARENT" > "$CLAUDE_PROJECT_DIR/tp.txt"\'}]\n'
    )
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[]", mcp="[trace]")}
    root = scripted_workspace(tmp / "ws", SCRIPT, agents=agents, config=config)
    home = tmp / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


class _Tracing:
    """The plugin's sink and its `trace_context` answer, registered on an in-process host (as the entry point would)."""

    def __init__(self, live: LiveExport) -> None:
        self.live = live

    @hookimpl
    def register_event_sinks(self, register: RegisterEventSink) -> None:
        register(self.live)

    @hookimpl
    def trace_context(self, run_id: str, tool_call_id: str | None) -> Mapping[str, str] | None:
        return self.live.trace_context(run_id, tool_call_id)


def run(root: Path, home: Path, host: PluginHost) -> tuple[str, str]:
    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        result = ws.run_sync("trace it")
        assert result.status == "succeeded", result.error
        events = list(ws.events(str(result.run_id)))
    done = next(e for e in events if e.event_type == "ToolCallCompleted")
    result_of_call = cast(Mapping[str, object], done.payload["result"])
    return str(result.run_id), str(result_of_call["content"])


def _parts(traceparent: str) -> tuple[int, int]:
    _, trace_id, span_id, _ = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


@pytest.mark.slow
def test_mcp_calls_and_hooks_carry_the_spans_trace_context(tmp_path: Path) -> None:
    with hook_receiver() as (url, seen):
        root, home = workspace(tmp_path, url)
        memory = InMemorySpanExporter()
        live = LiveExport({}, exporter_factory=lambda: memory)
        host = PluginHost()
        host.register(_Tracing(live), "otel-test")
        run_id, content = run(root, home, host)
        live.flush()
    spans: list[ReadableSpan] = list(memory.get_finished_spans())
    tool = next(s for s in spans if s.name == "execute_tool mcp__trace__trace")
    assert tool.context is not None

    meta = json.loads(content)
    assert _parts(meta["traceparent"]) == (uuid.UUID(run_id).int, tool.context.span_id), (
        "the MCP server sees the run's trace and the tool call's span as its parent"
    )
    assert meta["traceparent"].endswith("-01"), "sampled"

    assert len(seen) == 1, seen
    hook_trace, hook_parent = _parts(seen[0]["traceparent"])
    assert hook_trace == uuid.UUID(run_id).int
    assert hook_parent == tool.context.span_id, "PreToolUse fires once the call is requested: under its span"
    command_trace = (root / "tp.txt").read_text()
    assert _parts(command_trace) == (uuid.UUID(run_id).int, tool.context.span_id), "PostToolUse: inside the call"


@pytest.mark.slow
def test_without_a_tracing_plugin_nothing_is_sent(tmp_path: Path) -> None:
    with hook_receiver() as (url, seen):
        root, home = workspace(tmp_path, url)
        _, content = run(root, home, PluginHost())
    assert json.loads(content) == {}
    assert len(seen) == 1 and "traceparent" not in seen[0]
    assert (root / "tp.txt").read_text() == ""


def test_a_malformed_answer_is_dropped_whole() -> None:
    good = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    assert checked({"traceparent": good, "tracestate": "k=v", "x-other": "1"}) == {
        "traceparent": good,
        "tracestate": "k=v",
    }
    for bad in (
        "01-" + "ab" * 16 + "-" + "cd" * 8 + "-01",  # an unknown version
        "00-" + "0" * 32 + "-" + "cd" * 8 + "-01",  # the invalid all-zero trace id
        "00-" + "ab" * 16 + "-" + "0" * 16 + "-01",
        "00-" + "AB" * 16 + "-" + "cd" * 8 + "-01",  # upper case is not W3C
        good + "\r\nx-injected: 1",
    ):
        assert checked({"traceparent": bad, "tracestate": "k=v"}) == {}, bad
    assert checked({"traceparent": good, "tracestate": "k=v\r\nx: 1"}) == {"traceparent": good}
    assert checked(["traceparent", good]) == {} and checked(None) == {}


@pytest.mark.slow  # a cold `bearagent run` with the plugin, an MCP server and hooks; the in-process test covers the rest
def test_the_installed_plugin_propagates_in_a_real_process(tmp_path: Path) -> None:
    """The entry point's own `trace_context` hook (not a test double) answers for the runs its sink exports."""
    with hook_receiver() as (url, seen), otlp_receiver() as collector:
        root, home = workspace(tmp_path, url)
        env = {
            **isolated_env(home),
            "BEARAGENT_LOAD_PLUGINS": "otel",
            "PYTHONPATH": os.pathsep.join([str(installed_site(tmp_path)), str(PLUGIN_SRC)]),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        }
        bearagent = str(Path(sys.executable).with_name("bearagent"))
        done = subprocess.run(
            [bearagent, "run", "-w", str(root), "--json", "trace it"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
    tool = next(s for s in collector.spans if s.name == "execute_tool mcp__trace__trace")
    expected = (uuid.UUID(run_id).int, int.from_bytes(tool.span_id, "big"))
    assert _parts((root / "tp.txt").read_text()) == expected
    assert _parts(seen[0]["traceparent"]) == expected

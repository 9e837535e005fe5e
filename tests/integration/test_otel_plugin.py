"""The OpenTelemetry plugin (`plugins/bearagent-otel`) on real runs of the scripted provider with a subagent and a
real stdio MCP server: GenAI-convention span names, the parent/child structure, attributes, no content unless opted
in; the spans built live as events commit equal those built later from the log; and through real `bearagent`
processes, OTLP/HTTP to a local receiver that decodes the protobuf with `opentelemetry-proto`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from bearagent_otel import CONTENT_VAR, LiveExport, export_run
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.support.config_ws import isolated_env, load
from tests.support.otel_plugin import PLUGIN_SRC, installed_site, otlp_receiver
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugin import RegisterEventSink, hookimpl
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

DEMO = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "demo.py"
SCRIPT = """
turns:
  - text: "Asking the scout."
    tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "add numbers", description: sum}}]
  - tool_calls: [{name: mcp__demo__add, arguments: {a: 2, b: 3}}]
  - text: "scout: 5"
  - text: "The secret sum is 5."
"""


def workspace(tmp: Path) -> tuple[Path, Path]:
    demo = tmp / "demo.py"
    shutil.copyfile(DEMO, demo)
    config = (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n  demo: {{command: {sys.executable}, args: [{demo}, stdio], startup_timeout_s: 30}}\n"
    )
    agents = {
        "main": agent_md("Main agent.", mode="primary", tools="[Task]", subagents="[scout]"),
        "scout": agent_md("Adds.", mode="subagent", tools="[Read]", mcp="[demo]"),
    }
    root = scripted_workspace(tmp / "ws", SCRIPT, agents=agents, config=config)
    home = tmp / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


class _Sink:
    def __init__(self, live: LiveExport) -> None:
        self.live = live

    @hookimpl
    def register_event_sinks(self, register: RegisterEventSink) -> None:
        register(self.live)


def run_live(root: Path, home: Path, env: Mapping[str, str]) -> tuple[str, list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    live = LiveExport(env, exporter_factory=lambda: memory)
    host = PluginHost()
    host.register(_Sink(live), "otel-test")
    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        result = ws.run_sync("add two and three")
        assert result.status == "succeeded", result.error
    live.flush()
    return str(result.run_id), list(memory.get_finished_spans())


def shape(spans: list[ReadableSpan]) -> set[tuple[str, str | None, int, int]]:
    def ids(span: ReadableSpan) -> tuple[int, int]:
        assert span.context is not None
        return span.context.trace_id, span.context.span_id

    by_id = {ids(span)[1]: span for span in spans}
    return {
        (span.name, by_id[span.parent.span_id].name if span.parent is not None else None, *ids(span)) for span in spans
    }


def test_spans_follow_the_genai_conventions_and_the_log(tmp_path: Path) -> None:
    root, home = workspace(tmp_path)
    run_id, spans = run_live(root, home, {})
    names = sorted("chat" if span.name.startswith("chat ") else span.name for span in spans)
    assert names == sorted(
        ["invoke_agent main", "execute_tool Task", "invoke_agent scout", "execute_tool mcp__demo__add", *["chat"] * 4]
    ), names
    trace_ids = {span.context.trace_id for span in spans if span.context is not None}
    assert trace_ids == {uuid.UUID(run_id).int}, "one trace, its id the run's"
    edges = {(name, parent) for name, parent, _, _ in shape(spans)}
    assert ("invoke_agent main", None) in edges
    assert ("invoke_agent scout", "execute_tool Task") in edges, "the subagent under the call that started it"
    assert ("execute_tool mcp__demo__add", "invoke_agent scout") in edges
    chats = {parent for name, parent in edges if name.startswith("chat ")}
    assert chats == {"invoke_agent scout", "invoke_agent main"}

    root_span = next(s for s in spans if s.name == "invoke_agent main")
    attrs: dict[str, Any] = dict(root_span.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_agent" and attrs["gen_ai.agent.name"] == "main"
    assert attrs["bearagent.run.id"] == run_id and attrs["bearagent.run.status"] == "succeeded"
    chat = next(s for s in spans if s.name.startswith("chat "))
    chat_attrs: dict[str, Any] = dict(chat.attributes or {})
    assert chat_attrs["gen_ai.operation.name"] == "chat"
    assert chat_attrs["gen_ai.usage.input_tokens"] > 0 and "gen_ai.usage.output_tokens" in chat_attrs
    assert chat_attrs["gen_ai.response.finish_reasons"] == ("tool_use",)
    mcp = next(s for s in spans if s.name == "execute_tool mcp__demo__add")
    mcp_attrs: dict[str, Any] = dict(mcp.attributes or {})
    assert mcp_attrs["gen_ai.tool.type"] == "extension" and mcp_attrs["gen_ai.tool.name"] == "mcp__demo__add"
    for span in spans:
        assert span.start_time is not None and span.end_time is not None and span.start_time <= span.end_time
        text = json.dumps(dict(span.attributes or {}))
        assert "secret sum" not in text and "add two and three" not in text, "no content by default"

    # the same spans, ids included, built later from the log alone
    memory = InMemorySpanExporter()
    assert export_run(root, run_id, memory, {}) == len(spans)
    assert shape(list(memory.get_finished_spans())) == shape(spans)


def test_content_only_when_opted_in(tmp_path: Path) -> None:
    root, home = workspace(tmp_path)
    # the latest revision of the conventions: content in attributes (test_otel_semconv.py: v1.36.0's events)
    _, spans = run_live(
        root, home, {CONTENT_VAR: "true", "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
    )
    everything = json.dumps([dict(span.attributes or {}) for span in spans])
    assert "add two and three" in everything and "The secret sum is 5." in everything
    tool = next(s for s in spans if s.name == "execute_tool mcp__demo__add")
    assert json.loads(str(dict(tool.attributes or {})["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    # the default (v1.36.0): the same content as span events, none in attributes
    _, spans = run_live(root, home, {CONTENT_VAR: "true"})
    assert "The secret sum is 5." not in json.dumps([dict(span.attributes or {}) for span in spans])
    in_events = json.dumps([dict(e.attributes or {}) for span in spans for e in span.events])
    assert "add two and three" in in_events and "The secret sum is 5." in in_events


@pytest.mark.slow  # seven cold `bearagent` processes (and the MCP server's): the in-process tests above cover the spans
def test_real_processes_export_over_otlp_http(tmp_path: Path) -> None:
    root, home = workspace(tmp_path)
    site = installed_site(tmp_path)
    bearagent = str(Path(sys.executable).with_name("bearagent"))
    with otlp_receiver() as receiver:
        env = {
            **isolated_env(home),
            "BEARAGENT_LOAD_PLUGINS": "otel",
            "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_SRC)]),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_SERVICE_NAME": "bear-test",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-bear-tenant=ursa%20major",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci",
        }
        done = subprocess.run(
            [bearagent, "run", "-w", str(root), "--json", "add two and three"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        run_id = json.loads(done.stdout)["run_id"]
        live = sorted(receiver.names())
        assert len(live) == 8 and "invoke_agent scout" in live, live
        roots = [s for s in receiver.spans if s.name == "invoke_agent main"]
        assert roots[0].trace_id == uuid.UUID(run_id).bytes
        # the protobuf as received: the tree of a run with a subagent and an MCP call, attributes, no content
        names = {bytes(s.span_id): s.name for s in receiver.spans}
        edges = {(s.name, names.get(bytes(s.parent_span_id))) for s in receiver.spans}
        assert ("invoke_agent main", None) in edges
        assert ("execute_tool Task", "invoke_agent main") in edges
        assert ("invoke_agent scout", "execute_tool Task") in edges
        assert ("execute_tool mcp__demo__add", "invoke_agent scout") in edges
        decoded = {s.name: {a.key: a.value for a in s.attributes} for s in receiver.spans}
        assert decoded["execute_tool mcp__demo__add"]["gen_ai.tool.type"].string_value == "extension"
        assert decoded["invoke_agent scout"]["gen_ai.operation.name"].string_value == "invoke_agent"
        chat = next(attrs for name, attrs in decoded.items() if name.startswith("chat "))
        assert chat["gen_ai.usage.input_tokens"].int_value > 0 and chat["gen_ai.system"].string_value == "scripted"
        wire = b"".join(s.SerializeToString() for s in receiver.spans)
        assert b"secret sum" not in wire and b"add two and three" not in wire, "no content by default"
        # the standard variables: headers, service name, resource attributes
        assert all(h.get("x-bear-tenant") == "ursa major" for h in receiver.headers), receiver.headers
        assert receiver.resources[0]["service.name"] == "bear-test"
        assert receiver.resources[0]["deployment.environment"] == "ci"

        exported = subprocess.run(
            [bearagent, "otel", "export", run_id[:8], "-w", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert exported.returncode == 0, exported.stderr
        assert "exported 8 span(s)" in exported.stdout
        assert sorted(receiver.names()) == sorted(live * 2)

        # the spelling: the core command hands the run to the plugin's exporter
        core = subprocess.run(
            [bearagent, "runs", "export", run_id, "--otlp", "-w", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert core.returncode == 0, core.stderr
        assert f"exported 8 span(s) of run {run_id}" in core.stdout
        assert sorted(receiver.names()) == sorted(live * 3)
        both = subprocess.run(
            [bearagent, "runs", "export", run_id, "--otlp", "-o", str(tmp_path / "x"), "-w", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert both.returncode != 0 and "-o/--output does not apply to --format otlp" in both.stderr
        without = subprocess.run(
            [bearagent, "runs", "export", run_id, "--format", "otlp", "-w", str(root)],
            env={**env, "BEARAGENT_LOAD_PLUGINS": ""},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert without.returncode != 0, without.stdout
        assert "no export format named 'otlp'" in without.stderr and "bearagent-otel" in without.stderr

        missing = subprocess.run(
            [bearagent, "otel", "export", "last", "-w", str(root)],
            env={k: v for k, v in env.items() if k != "OTEL_EXPORTER_OTLP_ENDPOINT"},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert missing.returncode != 0 and "no OTLP endpoint" in missing.stderr
        missing_core = subprocess.run(
            [bearagent, "runs", "export", "last", "--otlp", "-w", str(root)],
            env={k: v for k, v in env.items() if k != "OTEL_EXPORTER_OTLP_ENDPOINT"},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert missing_core.returncode != 0 and "no OTLP endpoint" in missing_core.stderr
        assert "OTEL_EXPORTER_OTLP_ENDPOINT" in missing_core.stderr


def test_nothing_is_exported_without_an_endpoint(tmp_path: Path) -> None:
    live = LiveExport({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "})
    root, home = workspace(tmp_path)
    host = PluginHost()
    host.register(_Sink(live), "otel-test")
    with open_workspace(root, env=isolated_env(home), plugins=host) as ws:
        assert ws.run_sync("add two and three").status == "succeeded"
    assert live._builder is None, "the SDK is never even set up"  # pyright: ignore[reportPrivateUsage]

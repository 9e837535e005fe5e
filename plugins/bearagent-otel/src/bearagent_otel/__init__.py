"""bearagent-otel: OpenTelemetry GenAI spans of BearAgent runs (`spans.py`), exported over OTLP/HTTP.

Live: with `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, every run this process
executes is exported as its events commit (an event sink). After the fact: `bearagent otel export RUN` builds the
same spans from a stored run's log. The exporter honours the standard `OTEL_EXPORTER_OTLP_*` variables (endpoint,
headers, timeout, compression), `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`; message content is exported
only with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; `OTEL_SEMCONV_STABILITY_OPT_IN` picks the
revision of the GenAI conventions (`semconv.py`: v1.36.0 by default, `gen_ai_latest_experimental` the latest).

Built on the public plugin API only (`bearagent.plugin`, `bearagent.open_workspace`). The SDK is imported when
the first event arrives with an endpoint configured, never at start-up.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bearagent.plugin import (
    Event,
    RegisterCommand,
    RegisterEventSink,
    RegisterRunExporter,
    RunExporter,
    hookimpl,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from bearagent_otel.spans import SpanBuilder

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CONTENT_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content(env: Mapping[str, str]) -> bool:
    return env.get(CONTENT_VAR, "").strip().lower() in ("1", "true", "yes")


def configured(env: Mapping[str, str]) -> bool:
    return any(env.get(name, "").strip() for name in ENDPOINT_VARS)


def make_builder(exporter: SpanExporter, env: Mapping[str, str], *, batch: bool) -> tuple[SpanBuilder, TracerProvider]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    from bearagent import __version__
    from bearagent_otel.semconv import Semconv
    from bearagent_otel.spans import NextIds, SpanBuilder

    ids = NextIds()
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "bearagent"})
    provider = TracerProvider(resource=resource, id_generator=ids, shutdown_on_exit=batch)
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bearagent", __version__)
    builder = SpanBuilder(tracer, ids, capture_content=capture_content(env), semconv=Semconv.from_env(env))  # pyright: ignore[reportArgumentType]
    return builder, provider


class LiveExport:
    """The event sink: builds spans as events commit, exported in batches (flushed when the process exits)."""

    def __init__(self, env: Mapping[str, str], exporter_factory: Callable[[], SpanExporter] | None = None) -> None:
        self._env = env
        self._factory = exporter_factory
        self._builder: SpanBuilder | None = None
        self._provider: TracerProvider | None = None
        self._lock = threading.Lock()

    def _ready(self) -> SpanBuilder:
        with self._lock:
            if self._builder is None:
                if self._factory is not None:
                    exporter = self._factory()
                else:
                    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                    exporter = OTLPSpanExporter()
                self._builder, self._provider = make_builder(exporter, self._env, batch=True)
            return self._builder

    def flush(self) -> None:
        """Export the ended spans now (the process's exit does it too)."""
        if self._provider is not None:
            self._provider.force_flush()

    def __call__(self, event: Event) -> None:
        if self._factory is None and not configured(self._env):
            return
        self._ready().feed(event)

    def trace_context(self, run_id: str, tool_call_id: str | None) -> dict[str, str] | None:
        """What an outgoing call of a run this process exports sends (`traceparent`); None for other runs."""
        builder = self._builder
        parent = builder.traceparent(run_id, tool_call_id) if builder is not None else None
        return {"traceparent": parent} if parent is not None else None


def export_run(root: Path, run_ref: str, exporter: SpanExporter, env: Mapping[str, str]) -> int:
    """Export one stored run (with its subagents' runs) as spans; the number of spans exported."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    from bearagent import open_workspace

    counted: list[int] = [0]

    class _Counting:
        def export(self, spans: Any) -> SpanExportResult:
            counted[0] += len(spans)
            return exporter.export(spans)

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return exporter.force_flush(timeout_millis)

    builder, provider = make_builder(_Counting(), env, batch=False)  # pyright: ignore[reportArgumentType]
    with open_workspace(root) as ws:
        run = ws.run_info(run_ref)

        def feed(run_id: str) -> None:
            for event in ws.events(run_id):
                builder.feed(event)
                if event.event_type == "ChildRunStarted":
                    feed(str(event.payload["child_run_id"]))

        feed(str(run.run_id))
    provider.shutdown()
    return counted[0]


_LIVE: weakref.WeakSet[LiveExport] = weakref.WeakSet()
"""The sinks this module registered and still in use (one per plugin host: a server may hold several), asked by
`trace_context`; a sink no writer holds any more leaves the set by itself."""


@hookimpl
def register_event_sinks(register: RegisterEventSink) -> None:
    live = LiveExport(os.environ)
    _LIVE.add(live)
    register(live)


@hookimpl
def trace_context(run_id: str, tool_call_id: str | None) -> dict[str, str] | None:
    """Outgoing MCP calls and hooks of an exported run carry its trace context (W3C `traceparent`), so the spans
    of an MCP server or a hook endpoint that honours it join the run's trace."""
    for live in tuple(_LIVE):
        answer = live.trace_context(run_id, tool_call_id)
        if answer is not None:
            return answer
    return None


@click.group("otel")
def otel() -> None:
    """OpenTelemetry: export runs as GenAI spans over OTLP/HTTP (bearagent-otel plugin)."""


@otel.command("export")
@click.argument("run_ref", metavar="RUN")
@click.option(
    "-w", "--workspace", type=click.Path(file_okay=False, path_type=Path), default=None, help="The workspace."
)
@click.option("--endpoint", default=None, help="OTLP/HTTP traces URL (default: the OTEL_EXPORTER_OTLP_* variables).")
def export(run_ref: str, workspace: Path | None, endpoint: str | None) -> None:
    """Export RUN (and its subagents' runs) from the log as spans, to the OTLP endpoint."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from bearagent import BearAgentError

    env = dict(os.environ)
    if endpoint is None and not configured(env):
        raise click.ClickException(
            "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318) or pass --endpoint URL"
        )
    exporter = OTLPSpanExporter(endpoint=endpoint) if endpoint else OTLPSpanExporter()
    try:
        count = export_run(workspace or Path.cwd(), run_ref, exporter, env)
    except BearAgentError as exc:
        raise click.ClickException(f"{exc.info.message} ({exc.hint or 'see bearagent runs list'})") from exc
    click.echo(f"exported {count} span(s) of run {run_ref}")


def export_otlp(workspace_root: Path, run_id: str, env: Mapping[str, str]) -> str:
    """`bearagent runs export RUN --otlp`: the stored run's spans to the endpoint of the OTEL_EXPORTER_OTLP_*
    variables (the same spans as `bearagent otel export`)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from bearagent import BearAgentError, ErrorInfo

    if not configured(env):
        raise BearAgentError(
            ErrorInfo.of("configuration", "otlp_endpoint", "no OTLP endpoint to export the run to"),
            hint="set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318) or use `bearagent otel export RUN "
            "--endpoint URL`",
        )
    count = export_run(workspace_root, run_id, OTLPSpanExporter(), env)
    return f"exported {count} span(s) of run {run_id}"


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    register(otel)


@hookimpl
def register_run_exporters(register: RegisterRunExporter) -> None:
    register(RunExporter("otlp", export_otlp, "the run's OpenTelemetry GenAI spans over OTLP/HTTP"))

"""The OpenTelemetry plugin (`plugins/bearagent-otel`) for tests: importable in-process from its source folder, and
"installed" for a `bearagent` subprocess the way pip installs it (a `.dist-info` with its `bearagent` entry point on
`PYTHONPATH`, so BearAgent's entry-point discovery finds it), without a download. Plus a local OTLP/HTTP receiver
that decodes what it is sent with the `opentelemetry-proto` package."""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PLUGIN_SRC = REPO / "plugins" / "bearagent-otel" / "src"
if str(PLUGIN_SRC) not in sys.path:
    sys.path.insert(0, str(PLUGIN_SRC))


def installed_site(tmp: Path) -> Path:
    """A folder that, on PYTHONPATH, makes the plugin an installed distribution with its entry point."""
    site = tmp / "otel-site"
    info = site / "bearagent_otel-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bearagent-otel\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[bearagent]\notel = bearagent_otel\n")
    return site


class Receiver:
    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        """Each request's HTTP headers (names lower-cased)."""
        self.resources: list[dict[str, str]] = []
        """Each batch's resource attributes (string values)."""
        self.lock = threading.Lock()
        self.url = ""

    def names(self) -> list[str]:
        with self.lock:
            return [span.name for span in self.spans]


@contextmanager
def otlp_receiver() -> Generator[Receiver]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            with receiver.lock:
                receiver.requests += 1
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                for resource_spans in request.resource_spans:
                    receiver.resources.append({a.key: a.value.string_value for a in resource_spans.resource.attributes})
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend(scope_spans.spans)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200 if self.path == "/v1/traces" else 404)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()

"""WebFetch against a real HTTP server on 127.0.0.1: HTML to Markdown, redirects, caps, private-address refusal."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from tests.support.tools import call

from bearagent.domain.tools import ToolResult
from bearagent.tools.gate import ToolGate, tools_by_name
from bearagent.tools.web_fetch import WebFetchTool

pytestmark = pytest.mark.network_local


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        routes = {
            "/page": (
                200,
                "text/html; charset=utf-8",
                b"<html><body><h1>Hello</h1><p>Some <b>bold</b> text.</p><script>x()</script></body></html>",
            ),
            "/plain": (200, "text/plain", b"just text"),
            "/image": (200, "image/png", b"\x89PNG"),
            "/missing": (404, "text/plain", b"not here"),
            "/huge": (200, "text/plain", b"a" * (6 * 1024 * 1024)),
        }
        if self.path.startswith("/redirect/"):
            n = int(self.path.rsplit("/", 1)[1])
            self.send_response(302)
            self.send_header("Location", "/page" if n == 0 else f"/redirect/{n - 1}")
            self.end_headers()
            return
        if self.path == "/host":
            body = f"host={self.headers.get('Host')}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path == "/to-file":
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()
            return
        status, media, body = routes.get(self.path, (404, "text/plain", b"?"))
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def fetch(tmp_path: Path, url: str, allow: bool = True, **extra: object) -> ToolResult:
    return asyncio.run(call(tmp_path, "WebFetch", {"url": url, **extra}, allow_private_network=allow))


def test_html_becomes_markdown(server: str, tmp_path: Path) -> None:
    result = fetch(tmp_path, server + "/page", prompt="the greeting")
    assert result.status == "succeeded", result.content
    assert "# Hello" in result.content and "**bold**" in result.content
    assert "x()" not in result.content
    assert "Looking for: the greeting" in result.content
    assert result.data is not None and result.data["status"] == 200


def test_redirects_are_followed_and_bounded(server: str, tmp_path: Path) -> None:
    ok = fetch(tmp_path, server + "/redirect/3")
    assert ok.status == "succeeded" and ok.data is not None and str(ok.data["final_url"]).endswith("/page")
    too_many = fetch(tmp_path, server + "/redirect/9")
    assert too_many.error is not None and too_many.error.code == "network.too_many_redirects"
    to_file = fetch(tmp_path, server + "/to-file")
    assert to_file.status == "failed" and "only fetches http and https" in to_file.content


def test_loopback_refused_without_the_setting(server: str, tmp_path: Path) -> None:
    result = fetch(tmp_path, server + "/plain", allow=False)
    assert result.error is not None and result.error.code == "permission.private_address"
    assert "127.0.0.1" in result.content and "allow_private_network: true" in result.content
    for url in ("http://localhost:1/", "http://[::1]:1/", "http://169.254.169.254/latest", "http://10.0.0.1/"):
        refused = fetch(tmp_path, url, allow=False)
        assert refused.status == "failed" and refused.error is not None
        assert refused.error.code == "permission.private_address", url


def test_non_http_schemes_and_bad_urls(tmp_path: Path) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/x", "gopher://x", "http://user:pw@example.com/"):
        result = fetch(tmp_path, url)
        assert result.status == "failed" and result.error is not None and result.error.category == "validation", url


def test_size_cap_binary_and_http_errors(server: str, tmp_path: Path) -> None:
    huge = fetch(tmp_path, server + "/huge")
    assert huge.status == "succeeded" and huge.truncated and len(huge.content) < 100_000
    image = fetch(tmp_path, server + "/image")
    assert image.status == "failed" and "'image/png', which is not text" in image.content
    missing = fetch(tmp_path, server + "/missing")
    assert missing.error is not None and missing.error.code == "network.http_status" and "not here" in missing.content
    plain = fetch(tmp_path, server + "/plain")
    assert plain.status == "succeeded" and plain.content.endswith("just text")


def test_connects_to_the_checked_address_and_keeps_the_host_name(server: str, tmp_path: Path) -> None:
    port = server.rsplit(":", 1)[1]
    result = fetch(tmp_path, f"http://localhost:{port}/host")
    assert result.status == "succeeded", result.content
    assert result.content.endswith(f"host=localhost:{port}")
    assert result.data is not None and result.data["final_url"] == f"http://localhost:{port}/host"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 whose self-signed certificate names only `localhost`."""
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{httpd.server_address[1]}", cert
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_https_checks_the_certificate_against_the_host_name(tls_server: tuple[str, Path], tmp_path: Path) -> None:
    port, cert = tls_server
    tool = WebFetchTool(transport=httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cafile=str(cert))))
    gate = ToolGate(tools_by_name([tool]))

    def get(url: str) -> ToolResult:
        return asyncio.run(call(tmp_path, "WebFetch", {"url": url}, gate=gate, allow_private_network=True))

    ok = get(f"https://localhost:{port}/host")
    assert ok.status == "succeeded", ok.content
    assert ok.content.endswith(f"host=localhost:{port}")
    by_ip = get(f"https://127.0.0.1:{port}/host")  # the certificate does not name the IP
    assert by_ip.status == "failed" and by_ip.error is not None and by_ip.error.category == "network"

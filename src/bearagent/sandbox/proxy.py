"""The host side of `sandbox: {network: [hosts]}`: a small HTTP proxy on a Unix socket that lets through only the
listed hosts.

The sandbox keeps its own network namespace (nothing but loopback), so the only way out is this proxy: bubblewrap
binds its socket into the sandbox's private /tmp (`SANDBOX_SOCKET`), and `_forward.py`, started in the sandbox
before the command, listens on 127.0.0.1:<port> there, forwards each TCP connection to the socket, and sets
`HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` (and the lower-case names) for the command.

The proxy understands `CONNECT host:port` (a tunnel: HTTPS, or anything the client speaks through it) and plain
HTTP requests with an absolute URI (`GET http://host:port/path HTTP/1.1`, forwarded as one request with
`Connection: close`). A host is allowed when it is listed (case-insensitive, trailing dot ignored), or under a
listed `*.domain` (subdomains only, not the domain itself); an IP literal only when that address is listed. Any
other host gets `403` with a body naming it and the setting to change. Names are resolved here, on the host.
Bounded: the request head (`MAX_HEAD`), the connections at once (`MAX_CONNECTIONS`), the time to send a head and
to connect, and how long a connection may sit idle.

One proxy per host list per process (`proxy_socket`): it runs on its own event loop in a daemon thread, in a
private directory (0700) that is removed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ipaddress
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

from bearagent.sandbox.settings import host_covered, normalise_host_entry

SANDBOX_SOCKET = "/tmp/.bearagent-proxy.sock"
"""Where the proxy's socket appears inside the sandbox."""
MAX_HEAD = 16 * 1024
MAX_CONNECTIONS = 64
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 300.0
_DROPPED_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


def host_allowed(host: str, hosts: Iterable[str]) -> bool:
    """Whether a requested host (a name or an IP literal, brackets allowed) is in the normalised `hosts` list."""
    raw = host.strip()
    bare = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
    listed = tuple(hosts)
    try:
        return str(ipaddress.ip_address(bare)) in listed
    except ValueError:
        pass
    name = normalise_host_entry(bare)
    if name is None or name.startswith("*.") or name != bare.lower().rstrip("."):
        return False
    return host_covered(name, listed)


def _split_authority(target: str) -> tuple[str, int] | None:
    """`host:port` or `[v6]:port` into its parts (the port is required)."""
    if target.startswith("["):
        end = target.find("]")
        if end < 0 or target[end + 1 : end + 2] != ":":
            return None
        host, port = target[1:end], target[end + 2 :]
    else:
        host, sep, port = target.rpartition(":")
        if not sep or ":" in host:
            return None
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _response(status: str, body: str) -> bytes:
    data = body.encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + data


class HostProxy:
    """The proxy for one host list; `start(path)` listens on the Unix socket `path`, `close()` ends everything."""

    def __init__(self, hosts: Iterable[str]) -> None:
        self.hosts = tuple(hosts)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, path: str) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=path, limit=MAX_HEAD)
        os.chmod(path, 0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - a callback always runs in a task
            writer.close()
            return
        if len(self._tasks) >= MAX_CONNECTIONS:
            with contextlib.suppress(OSError):
                writer.write(_response("503 Service Unavailable", "bearagent sandbox proxy: too many connections\n"))
                await writer.drain()
            writer.close()
            return
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _denied(self, host: str) -> bytes:
        listed = ", ".join(self.hosts)
        return _response(
            "403 Forbidden",
            f"bearagent sandbox: the host {host!r} is not allowed (sandbox.network allows: {listed}). "
            f"To allow it, add it to `sandbox: {{network: [...]}}` in your config.\n",
        )

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except (asyncio.LimitOverrunError, ValueError):
            writer.write(_response("431 Request Header Fields Too Large", "bearagent sandbox proxy: head too large\n"))
            return
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            writer.write(_response("400 Bad Request", "bearagent sandbox proxy: malformed request line\n"))
            return
        method, target, version = parts
        forward: bytes | None = None
        if method.upper() == "CONNECT":
            authority = _split_authority(target)
            if authority is None:
                writer.write(_response("400 Bad Request", "bearagent sandbox proxy: CONNECT needs host:port\n"))
                return
            host, port = authority
        else:
            url = urlsplit(target)
            try:
                port = url.port or 80
            except ValueError:
                port = 0
            if url.scheme.lower() != "http" or not url.hostname or not port:
                writer.write(
                    _response(
                        "400 Bad Request",
                        "bearagent sandbox proxy: send an absolute http:// URI, or CONNECT host:port for https\n",
                    )
                )
                return
            host = url.hostname
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            headers = [
                line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower() not in _DROPPED_HEADERS
            ]
            forward = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""]).encode(
                "latin-1"
            )
        if not host_allowed(host, self.hosts):
            writer.write(self._denied(host))
            return
        bare = host[1:-1] if host.startswith("[") else host
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(bare, port), CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            writer.write(_response("502 Bad Gateway", f"bearagent sandbox proxy: cannot reach {host}:{port}: {exc}\n"))
            return
        try:
            if forward is None:
                writer.write(f"{version} 200 Connection established\r\n\r\n".encode("latin-1"))
            else:
                up_writer.write(forward)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Copy until end of stream (then half-close `dst`), an error, or `IDLE_TIMEOUT_S` without data."""
    try:
        while True:
            data = await asyncio.wait_for(src.read(65_536), IDLE_TIMEOUT_S)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (OSError, TimeoutError):
        dst.close()


class _Running:
    """A `HostProxy` on its own loop in a daemon thread, listening in a private directory."""

    def __init__(self, hosts: tuple[str, ...]) -> None:
        self.dir = tempfile.mkdtemp(prefix="bearagent-proxy-")  # 0700
        self.path = os.path.join(self.dir, "proxy.sock")
        self.proxy = HostProxy(hosts)
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="bearagent-sandbox-proxy", daemon=True)
        self.thread.start()
        self._ready.wait(10)
        if self._error is not None or not self._ready.is_set():
            self.stop()
            raise OSError(f"the sandbox network proxy did not start: {self._error or 'timed out'}")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.proxy.start(self.path))
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.proxy.close())
        self.loop.close()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
        shutil.rmtree(self.dir, ignore_errors=True)


_lock = threading.Lock()
_running: dict[tuple[str, ...], _Running] = {}


def proxy_socket(hosts: Iterable[str]) -> str:
    """The host path of this process's proxy for `hosts` (normalised entries), started on first use. Raises
    `OSError` when it cannot start."""
    key = tuple(hosts)
    with _lock:
        running = _running.get(key)
        if running is None or not running.thread.is_alive():
            running = _running[key] = _Running(key)
        return running.path


@atexit.register
def stop_all() -> None:
    """Stop every proxy of this process and remove their directories."""
    with _lock:
        for running in _running.values():
            running.stop()
        _running.clear()

"""Helpers for the MCP tests: server scripts, specs, a streamable-HTTP server subprocess, process checks, and the
on-demand npm install of `@modelcontextprotocol/server-everything` (same command as `scripts/ci-extras.sh`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bearagent.domain.specs import McpServerSpec

REPO = Path(__file__).resolve().parents[2]
SERVERS = Path(__file__).resolve().parent / "mcp_servers"
DEMO = SERVERS / "demo.py"
MISBEHAVING = SERVERS / "misbehaving.py"
NPM_CACHE = REPO / ".cache" / "npm-mcp"
EVERYTHING_VERSION = "2026.8.31"
EVERYTHING_JS = NPM_CACHE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def stdio_spec(name: str, script: Path, *args: str, **fields: object) -> McpServerSpec:
    data: dict[str, object] = {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": (str(script), *args),
        "source": "test",
        "startup_timeout_s": 20.0,
        "call_timeout_s": 20.0,
    }
    data.update(fields)
    return McpServerSpec.model_validate(data)


def http_spec(name: str, url: str, **fields: object) -> McpServerSpec:
    data: dict[str, object] = {
        "name": name,
        "transport": "http",
        "url": url,
        "source": "test",
        "startup_timeout_s": 10.0,
        "call_timeout_s": 20.0,
    }
    data.update(fields)
    return McpServerSpec.model_validate(data)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout_s}s")


def server_in_workspace(root: Path, name: str) -> Path:
    """A copy of `mcp_servers/<name>` inside the workspace `root` (as a workspace's own server lives there): a
    workspace server runs confined once a run may have written (`mcp/after_writes.py`), and the sandbox sees the
    workspace but not a checkout under /tmp, where the original would be missing inside it (issue 29)."""
    target = root / ".mcp-servers" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SERVERS / name, target)
    return target


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    port: int
    url: str

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@contextmanager
def http_server(argv: list[str], *, path: str = "/mcp", env: dict[str, str] | None = None) -> Generator[HttpServer]:
    """Run `argv` (which must contain the literal "{port}" somewhere, or read PORT from env) on a free port."""
    port = free_port()
    full_env = dict(os.environ)
    full_env["PORT"] = str(port)
    full_env.update(env or {})
    cmd = [a.replace("{port}", str(port)) for a in argv]
    proc = subprocess.Popen(
        cmd, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    server = HttpServer(proc, port, f"http://127.0.0.1:{port}{path}")
    try:
        wait_for_port(port, proc)
        yield server
    finally:
        server.kill()


def pid_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_with_arg(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains `marker` (a /proc scan, no psutil)."""
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmdline and int(entry.name) != os.getpid() and pid_alive(int(entry.name)):
            out.append(int(entry.name))
    return out


def wait_until_gone(pids: list[int], timeout_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if pid_alive(p)]
    return alive


def ensure_server_everything() -> Path:
    """Path of server-everything's `dist/index.js`, installing it into `.cache/npm-mcp/` on first use.

    Skips only when node or npm is absent; an install failure fails the test with npm's output.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node/npm not found on PATH: install Node.js >= 18 to run the server-everything tests")
    if EVERYTHING_JS.exists():
        return EVERYTHING_JS
    NPM_CACHE.mkdir(parents=True, exist_ok=True)
    with open(NPM_CACHE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not EVERYTHING_JS.exists():
            proc = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(NPM_CACHE),
                    "--no-audit",
                    "--no-fund",
                    f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0 or not EVERYTHING_JS.exists():
                pytest.fail(
                    "npm install of @modelcontextprotocol/server-everything failed "
                    f"(exit {proc.returncode}):\n{proc.stderr[-2000:]}\nRun scripts/ci-extras.sh to retry."
                )
    return EVERYTHING_JS

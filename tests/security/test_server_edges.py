"""The server's edges (issue 28, items 8, 14, 15), through a real `bearagent serve` process: the body cap holds for a
chunked body and before authentication; idle and slow connections are closed; subjects are compared whole."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.server.test_http_api import BEARAGENT, Server, start
from tests.support.run_ws import agent_md, scripted_workspace

AGENTS = {"main": agent_md("Main.", mode="primary", tools="[Read]")}
LIMITS = "limits: {header_timeout_s: 1, keep_alive_timeout_s: 1}\n"


def _serve(tmp_path: Path, extra: str = "") -> Server:
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: done\n", agents=AGENTS)
    return start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {root}}}\n{LIMITS}{extra}")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _address(server: Server) -> tuple[str, int]:
    host, port = server.base.removeprefix("http://").split(":")
    return host, int(port)


def test_an_unauthenticated_chunked_50_mb_body_is_refused_early_with_bounded_memory(tmp_path: Path) -> None:
    server = _serve(tmp_path)
    try:
        before = _rss_kib(server.proc.pid)
        chunk = b"x" * 65_536
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        with socket.create_connection(_address(server), timeout=60) as sock:
            sock.sendall(
                b"POST /v1/sessions/s/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            sent = 0
            started = time.monotonic()
            try:
                while sent < 50 * 1024 * 1024:
                    sock.sendall(frame)
                    sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered and closed: what we want
            answer = b""
            try:
                while b"\r\n\r\n" not in answer:
                    data = sock.recv(65_536)
                    if not data:
                        break
                    answer += data
            except ConnectionResetError:
                pass
        assert answer.startswith((b"HTTP/1.1 413", b"HTTP/1.1 401")), answer[:200]
        assert sent < 50 * 1024 * 1024 or time.monotonic() - started < 60
        grown = _rss_kib(server.proc.pid) - before
        assert grown < 64 * 1024, f"the server grew by {grown} KiB reading a body it refused"
        with server.client() as c:  # and it still serves
            assert c.get("/health").status_code == 200
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def test_a_declared_length_over_the_cap_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    server = _serve(tmp_path)
    try:
        with socket.create_connection(_address(server), timeout=30) as sock:
            sock.sendall(b"POST /v1/sessions/s/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 400000000\r\n\r\n")
            answer = b""
            while data := sock.recv(65_536):  # the server closes after its answer
                answer += data
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"max_body_bytes" in answer
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


@pytest.mark.slow
def test_idle_and_slow_connections_are_closed_after_the_header_timeout(tmp_path: Path) -> None:
    server = _serve(tmp_path)
    try:
        idle = [socket.create_connection(_address(server), timeout=30) for _ in range(200)]
        slow = socket.create_connection(_address(server), timeout=30)
        slow.sendall(b"GET /health HTTP/1.1\r\n")
        deadline = time.monotonic() + 4  # one byte at a time past the 1 s header timeout
        closed_slow = False
        while time.monotonic() < deadline:
            try:
                slow.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                closed_slow = True
                break
            time.sleep(0.2)
        if not closed_slow:
            slow.settimeout(5)
            try:
                closed_slow = slow.recv(1024) == b""
            except ConnectionResetError:
                closed_slow = True
        assert closed_slow, "a request head sent a byte at a time is cut off"
        for sock in idle:  # generous: the server closes them at 1 s; a loaded machine takes longer
            sock.settimeout(30)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1024) == b"", "an idle connection is closed"
            sock.close()
        slow.close()
        with server.client() as c:
            assert c.get("/health").status_code == 200
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def test_subjects_sharing_a_256_character_prefix_do_not_share_sessions(tmp_path: Path) -> None:
    server = _serve(tmp_path, "auth: {proxy: {trusted: [127.0.0.1/32]}}\n")
    common = "gateway-user-" + "u" * 300

    def headers(who: str) -> dict[str, str]:
        return {
            "X-Forwarded-User": common + who,
            "X-Forwarded-Scopes": "runs:read runs:write",
            "X-Forwarded-Workspaces": "ws",
        }

    try:
        with server.client(None) as c:
            made = c.post("/v1/workspaces/ws/sessions", json={"title": "alice's"}, headers=headers("-alice"))
            assert made.status_code == 201, made.text
            sid = made.json()["id"]
            mine = c.get("/v1/workspaces/ws/sessions", headers=headers("-alice")).json()["sessions"]
            assert [s["id"] for s in mine] == [sid]
            theirs = c.get("/v1/workspaces/ws/sessions", headers=headers("-bob")).json()["sessions"]
            assert theirs == [], "bob sees none of alice's sessions"
            assert c.get(f"/v1/sessions/{sid}", headers=headers("-bob")).status_code in (403, 404)
            assert c.get(f"/v1/sessions/{sid}", headers=headers("-alice")).status_code == 200
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def _serve_with_limits(tmp_path: Path, limits: str) -> Server:
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: done\n", agents=AGENTS)
    return start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {root}}}\nlimits: {{{limits}}}\n")


def _answer(sock: socket.socket) -> bytes:
    answer = b""
    with contextlib.suppress(ConnectionResetError, TimeoutError):
        while data := sock.recv(65_536):
            answer += data
            if b"\r\n\r\n" in answer:
                break
    return answer


def test_a_request_head_over_max_header_bytes_is_refused_unauthenticated(tmp_path: Path) -> None:
    server = _serve_with_limits(tmp_path, "max_header_bytes: 4096, header_timeout_s: 30")
    try:
        with socket.create_connection(_address(server), timeout=30) as sock:
            padding = "a" * 65_536  # one header far over the 4 KiB cap
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(f"GET /v1/workspaces HTTP/1.1\r\nHost: x\r\nX-Pad: {padding}\r\n\r\n".encode())
            answer = _answer(sock)
        # refused at the edge, before authentication (never the route: 200/401)
        assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
        with server.client() as c:  # a normal head is still served
            assert c.get("/health").status_code == 200
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.slow
def test_connections_over_max_connections_are_answered_503_at_once_and_closed(tmp_path: Path) -> None:
    server = _serve_with_limits(tmp_path, "max_connections: 4, header_timeout_s: 60, keep_alive_timeout_s: 60")
    held: list[socket.socket] = []
    try:
        with server.client() as c:  # the cap counts open connections: fewer than 4 are served
            assert c.get("/health").status_code == 200
        before = _open_fds(server.proc.pid)
        held = [socket.create_connection(_address(server), timeout=30) for _ in range(4)]
        time.sleep(1)  # the server has accepted them (no wall-clock claim: only lets the accepts happen first)
        for _ in range(40):  # each one over the cap is answered without sending a byte, and closed
            with socket.create_connection(_address(server), timeout=30) as extra:
                answer = _answer_all(extra)
                assert answer.startswith(b"HTTP/1.1 503") and b"max_connections" in answer, answer[:200]
        assert _open_fds(server.proc.pid) <= before + 4 + 2, "the refused connections hold no descriptor"
        for sock in held:
            sock.close()
        held = []
        deadline = time.monotonic() + 60  # generous: the server notices the closed sockets on its next loop turn
        status = 0
        while time.monotonic() < deadline:
            with server.client() as c:
                status = c.get("/health").status_code
            if status == 200:
                break
            time.sleep(0.2)
        assert status == 200, "served again once the held connections closed"
    finally:
        for sock in held:
            sock.close()
        server.proc.terminate()
        server.proc.wait(timeout=30)


def _answer_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or 30 s pass)."""
    answer = b""
    with contextlib.suppress(ConnectionResetError, TimeoutError):
        while data := sock.recv(65_536):
            answer += data
    return answer


@pytest.mark.slow
def test_a_slow_body_is_answered_408_before_authentication(tmp_path: Path) -> None:
    server = _serve_with_limits(tmp_path, "body_timeout_s: 2, header_timeout_s: 30")
    try:
        for framing in ("content-length: 1000\r\n", "transfer-encoding: chunked\r\n"):
            with socket.create_connection(_address(server), timeout=30) as sock:
                sock.sendall(
                    f"POST /v1/workspaces/ws/sessions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                    f"{framing}\r\n".encode()
                )
                started = time.monotonic()
                sock.settimeout(0.3)
                answer = b""
                while time.monotonic() - started < 30 and not answer:  # a byte at a time, never the whole body
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        sock.sendall(b"1\r\n{\r\n" if "chunked" in framing else b"{")
                    with contextlib.suppress(TimeoutError):
                        answer = sock.recv(65_536)
                sock.settimeout(30)
                answer += _answer_all(sock)
            assert answer.startswith(b"HTTP/1.1 408"), (framing, answer[:300])
            assert b"limits.body_timeout_s" in answer
        with server.client() as c:
            assert c.post("/v1/workspaces/ws/sessions", json={"title": "t"}).status_code == 201  # a normal body is fine
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)


def test_serve_refuses_a_connection_cap_the_descriptor_limit_cannot_hold(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: done\n", agents=AGENTS)
    config = tmp_path / "server.yaml"
    config.write_text(f"workspaces:\n  - {{id: ws, path: {root}}}\nlimits: {{max_connections: 100000000}}\n")
    home = tmp_path / "home"
    (home / "bearagent").mkdir(parents=True)
    done = subprocess.run(
        [BEARAGENT, "serve", "--port", "0", "--config", str(config)],
        env={**os.environ, "HOME": str(home), "BEARAGENT_HOME": str(home / "bearagent"), "BEARAGENT_LOAD_PLUGINS": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "limits.max_connections" in done.stderr and "ulimit -n" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_gateway_subject_spelled_like_bearagents_own_callers_owns_nothing_of_theirs(tmp_path: Path) -> None:
    """`local` is the local token's subject and every machine-started session's caller, `local:<uid>` a machine
    run's initiator: a gateway user who picked such a name (any case, padded) is someone else."""
    server = _serve(tmp_path, "auth: {proxy: {trusted: [127.0.0.1/32]}}\n")

    def headers(who: str) -> dict[str, str]:
        return {"X-Forwarded-User": who, "X-Forwarded-Scopes": "runs:read runs:write", "X-Forwarded-Workspaces": "ws"}

    try:
        with server.client() as owner, server.client(None) as c:
            made = owner.post("/v1/workspaces/ws/sessions", json={"title": "the operator's"})
            assert made.status_code == 201, made.text
            sid = made.json()["id"]
            assert [s["id"] for s in owner.get("/v1/workspaces/ws/sessions").json()["sessions"]] == [sid]
            for who in ("local", "Local", "local:0", "local:1000", "LOCAL:root"):
                listed = c.get("/v1/workspaces/ws/sessions", headers=headers(who))
                assert listed.status_code == 200 and listed.json()["sessions"] == [], (who, listed.text)
                assert c.get(f"/v1/sessions/{sid}", headers=headers(who)).status_code in (403, 404), who
            mine = c.post("/v1/workspaces/ws/sessions", json={"title": "gateway local's"}, headers=headers("local"))
            assert mine.status_code == 201, mine.text
            assert mine.json().get("subject_ref", "?") not in ("local", "?"), mine.text
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=30)

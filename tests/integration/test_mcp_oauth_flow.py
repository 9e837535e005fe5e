"""The OAuth pieces on their own: the token file fails closed and is private; a login the user refuses is one clear
error; the loopback listener answers only its callback; a session with a stored login that the server no longer
accepts fails with the login hint and never opens a browser."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Generator
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthToken
from tests.support.mcp_helpers import free_port, http_spec, wait_for_port

from bearagent.mcp.manager import McpConnectionManager
from bearagent.mcp.oauth import MAX_TOKEN_FILE_BYTES, McpLoginError, TokenFile, token_path
from bearagent.mcp.oauth_login import _Loopback, login  # pyright: ignore[reportPrivateUsage]

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "oauth_server.py"


@pytest.fixture
def denying_server(tmp_path: Path) -> Generator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), str(tmp_path / "grants.jsonl"), "3600", "deny"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_the_token_file_is_private_and_fails_closed(tmp_path: Path) -> None:
    path = token_path(tmp_path / "config", "srv", "http://127.0.0.1:1/mcp")
    assert path != token_path(tmp_path / "config", "srv", "http://127.0.0.1:2/mcp")  # another URL, another login
    store = TokenFile(path)
    assert not store.has_tokens() and asyncio.run(store.get_tokens()) is None

    asyncio.run(store.set_tokens(OAuthToken(access_token="at", refresh_token="rt", expires_in=3600)))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    fresh = TokenFile(path)
    token = asyncio.run(fresh.get_tokens())
    assert token is not None and token.refresh_token == "rt"
    assert fresh.expires_at is not None and fresh.expires_at > 0

    for bad in (b"{not json", b'{"version": 99, "tokens": {"access_token": "x"}}', b"[]", b"\xff\xfe"):
        path.write_bytes(bad)
        assert not TokenFile(path).has_tokens() and asyncio.run(TokenFile(path).get_tokens()) is None
    path.write_bytes(b'{"version": 1, "tokens": {"access_token": "' + b"a" * MAX_TOKEN_FILE_BYTES + b'"}}')
    assert asyncio.run(TokenFile(path).get_tokens()) is None
    assert TokenFile(path).remove() and not TokenFile(path).remove()


def test_a_refused_login_is_one_clear_error(denying_server: str, tmp_path: Path) -> None:
    store = tmp_path / "config" / "mcp-oauth" / "srv.json"

    def browser(url: str) -> None:
        def visit() -> None:
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert b"refused" in answer.read()

        asyncio.get_running_loop().run_in_executor(None, visit)

    async def go() -> None:
        await login(
            server="srv",
            url=denying_server,
            headers={},
            store_path=store,
            announce=browser,
            open_browser=False,
            timeout_s=30,
        )

    with pytest.raises(McpLoginError, match=r"refused the login: access_denied \(the user said no\)"):
        asyncio.run(go())
    assert not TokenFile(store).has_tokens()


def test_the_loopback_listener_answers_only_its_callback() -> None:
    async def go() -> tuple[list[int], dict[str, str]]:
        loop = _Loopback()
        await loop.start(None)
        base = f"http://127.0.0.1:{loop.port}"

        def status(path: str) -> int:
            try:
                with urllib.request.urlopen(base + path, timeout=10) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as err:
                return err.code

        codes = [
            await asyncio.to_thread(status, "/elsewhere?code=x"),
            await asyncio.to_thread(status, "/callback"),
            await asyncio.to_thread(status, "/callback?code=abc&state=s1"),
            await asyncio.to_thread(status, "/callback?code=second&state=s2"),
        ]
        assert loop.result is not None
        result = await loop.result
        await loop.close()
        return codes, result

    codes, result = asyncio.run(go())
    assert codes == [404, 400, 200, 409]
    assert result == {"code": "abc", "state": "s1"}


def test_a_stored_login_the_server_rejects_names_the_login_command(denying_server: str, tmp_path: Path) -> None:
    home = tmp_path / "bearagent"
    path = token_path(home, "srv", denying_server)
    path.parent.mkdir(parents=True)
    # a token the server never issued, already expired, with a refresh token the server does not know
    path.write_text(
        json.dumps({"version": 1, "tokens": {"access_token": "forged", "refresh_token": "nope"}, "expires_at": 1.0})
    )

    async def go() -> tuple[str, str | None, str | None]:
        manager = McpConnectionManager([http_spec("srv", denying_server)], {"BEARAGENT_HOME": str(home)}, tmp_path)
        try:
            await manager.start_all(background_retry=False)
            status = manager.server_status("srv")
            return status.state, status.last_error, status.hint
        finally:
            await manager.aclose()

    state, error, hint = asyncio.run(go())
    assert state == "failed"
    assert error is not None and "401 Unauthorized" in error
    assert hint is not None and "bearagent mcp login srv" in hint

"""McpConnectionManager against real SDK servers: in-process, stdio subprocesses and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import pytest
from tests.support.mcp_helpers import DEMO, MISBEHAVING, free_port, http_server, http_spec, stdio_spec

from bearagent.domain._base import frozen_json
from bearagent.domain.ids import RunId, ToolCallId
from bearagent.domain.specs import McpServerSpec
from bearagent.domain.tools import ToolResult
from bearagent.mcp.manager import McpConnectionManager
from bearagent.mcp.names import projected_tool_name, side_effect_from_annotations
from bearagent.mcp.tool import McpTool
from bearagent.ports import ToolContext

pytestmark = pytest.mark.timeout(120)

RUN = "00000000-0000-4000-8000-000000000001"
CALL = "00000000-0000-4000-8000-0000000000c1"


def run(factory: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(factory())  # pyright: ignore[reportArgumentType]


def ctx(root: Path, *, run_id: str | None = None) -> ToolContext:
    return ToolContext(
        workspace_root=root,
        run_id=RunId(run_id) if run_id else None,
        tool_call_id=ToolCallId(CALL),
    )


def tool_named(manager: McpConnectionManager, name: str) -> McpTool:
    for tool in manager.tools():
        if tool.spec.name == name:
            assert isinstance(tool, McpTool)
            return tool
    raise AssertionError(f"{name} not in {[t.spec.name for t in manager.tools()]}")


async def call(manager: McpConnectionManager, name: str, args: Mapping[str, object], root: Path) -> ToolResult:
    return await tool_named(manager, name).execute(frozen_json(args), ctx(root, run_id=RUN))


# ----- naming and side effects (no server) -----


def test_projected_names_keep_exact_form_when_valid_and_hash_otherwise() -> None:
    assert projected_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert projected_tool_name("ev", "get-sum") == "mcp__ev__get-sum"
    odd = projected_tool_name("demo", "weird name/with space")
    assert odd.startswith("mcp__demo__weird_name_with_space_")
    assert odd != projected_tool_name("demo", "weird name/with_space")
    long = projected_tool_name("s" * 64, "t" * 100)
    assert len(long) <= 128


def test_side_effect_from_annotations() -> None:
    assert side_effect_from_annotations(None) == "execute"
    assert side_effect_from_annotations({"readOnlyHint": True}) == "read_only"
    assert side_effect_from_annotations({"readOnlyHint": True, "openWorldHint": True}) == "network"
    assert side_effect_from_annotations({"openWorldHint": True}) == "network"
    assert side_effect_from_annotations({"destructiveHint": True}) == "execute"


# ----- in-process server -----


def test_in_process_tools_results_and_artifacts(tmp_path: Path) -> None:
    # the MCP server SDK (~1 s of imports) is imported by the tests that use it, not at collection (issue 29)
    from tests.support.mcp_servers.demo import TINY_PNG, build_server

    async def main() -> None:
        async with McpConnectionManager([], {}, tmp_path, in_process={"demo": build_server()}) as m:
            names = {t.spec.name for t in m.tools()}
            assert {"mcp__demo__echo", "mcp__demo__add", "mcp__demo__image"} <= names
            add = tool_named(m, "mcp__demo__add")
            assert add.spec.side_effect == "read_only"
            assert tool_named(m, "mcp__demo__fetchish").spec.side_effect == "network"
            assert tool_named(m, "mcp__demo__slow").spec.side_effect == "execute"
            schema = dict(add.spec.input_schema)
            assert schema["required"] == ("a", "b")  # passed through (frozen)

            r = await call(m, "mcp__demo__add", {"a": 2, "b": 40}, tmp_path)
            assert r.status == "succeeded" and r.content == "42"
            assert r.data is not None and r.data["result"] == 42

            r = await call(m, "mcp__demo__fail", {"reason": "disk full"}, tmp_path)
            assert r.status == "failed" and r.error is not None
            assert r.error.code == "mcp.tool_error" and "cannot do it: disk full" in r.content

            r = await call(m, "mcp__demo__image", {}, tmp_path)
            assert r.status == "succeeded" and len(r.artifacts) == 1
            art = r.artifacts[0]
            assert art.kind == "image" and art.media_type == "image/png"
            assert art.sha256 == hashlib.sha256(TINY_PNG).hexdigest()
            assert art.path.startswith(f".bearagent/artifacts/{RUN}/")
            assert (tmp_path / art.path).read_bytes() == TINY_PNG
            assert art.path in r.content

            # without a run or a session: metadata only, nothing written
            img = tool_named(m, "mcp__demo__image")
            r = await img.execute(frozen_json({}), ToolContext(workspace_root=tmp_path / "none"))
            assert r.artifacts == () and "not stored" in r.content and art.sha256 in r.content
            assert not (tmp_path / "none").exists()

            r = await call(m, "mcp__demo__huge", {"kib": 300}, tmp_path)
            assert r.status == "succeeded" and r.truncated
            assert len(r.content) <= tool_named(m, "mcp__demo__huge").spec.max_output_chars
            assert "[output truncated: showing" in r.content and "of 307200 characters" in r.content
            assert r.data is None and "[structured content dropped: 307214 characters exceed" in r.content

            weird = tool_named(m, projected_tool_name("demo", "weird name/with space"))
            assert weird.remote_name == "weird name/with space"
            assert weird.exact_name == "mcp__demo__weird name/with space"
            r = await weird.execute(frozen_json({}), ctx(tmp_path))
            assert r.status == "succeeded" and r.content == "weird ok"
            assert r.tool_name == weird.spec.name

            # what the invocation projection takes: specs named by the exact server-side tool name
            pairs = dict((spec.name, (server, spec)) for server, spec in m.projection_inputs())
            assert pairs["weird name/with space"][0] == "demo"
            assert pairs["add"][1].input_schema == add.spec.input_schema
            assert m.find_tool("demo", "weird name/with space") is weird
            assert m.find_tool("demo", "nope") is None and m.find_tool("other", "add") is None

    run(main)


def test_call_timeout_is_bounded_and_session_survives(tmp_path: Path) -> None:
    from tests.support.mcp_servers.demo import build_server

    async def main() -> None:
        spec = McpServerSpec(name="demo", transport="stdio", command="(in-process)", call_timeout_s=0.5)
        async with McpConnectionManager([spec], {}, tmp_path, in_process={"demo": build_server()}) as m:
            started = time.monotonic()
            r = await call(m, "mcp__demo__slow", {"seconds": 30}, tmp_path)
            assert time.monotonic() - started < 30  # the call timeout, not the tool's end, ended it
            assert r.error is not None and r.error.code == "mcp.call_timeout"
            assert "did not answer within 0.5s" in r.content and "call_timeout_s" in r.content
            r = await call(m, "mcp__demo__echo", {"message": "still here"}, tmp_path)
            assert r.content == "echo: still here"

    run(main)


# ----- stdio subprocesses -----


def test_parallel_start_failures_are_isolated_and_explained(tmp_path: Path) -> None:
    async def main() -> None:
        specs = [
            stdio_spec("demo", DEMO),
            stdio_spec("dead", MISBEHAVING, "exit-at-start"),
            stdio_spec("mute", MISBEHAVING, "never-answers", startup_timeout_s=1.5),
            stdio_spec("nocmd", DEMO, command="/nonexistent/bin/mcp-thing"),
            stdio_spec("noenv", DEMO, args=("${BEARAGENT_TEST_UNSET_VAR}",)),
        ]
        m = McpConnectionManager(specs, {"PATH": os.environ["PATH"]}, tmp_path)
        started = time.monotonic()
        await m.start_all()
        elapsed = time.monotonic() - started
        try:
            status = {s.name: s for s in m.status()}
            assert status["demo"].state == "ready" and status["demo"].tool_count >= 10
            assert {s.name for s in m.status() if s.state == "failed"} == {"dead", "mute", "nocmd", "noenv"}

            dead = status["dead"]
            assert dead.last_error is not None and dead.hint is not None
            assert "exited" in dead.last_error and "fatal: DEMO_TOKEN is not configured" in dead.last_error
            # the command as the shell needs it (quoted: the checkout may live at a path with spaces)
            assert "by hand" in dead.hint and shlex.join([str(MISBEHAVING), "exit-at-start"]) in dead.hint

            mute = status["mute"]
            assert mute.last_error is not None and "within 1.5s" in mute.last_error
            assert mute.hint is not None and "startup_timeout_s" in mute.hint
            assert elapsed < 15, elapsed  # bounded by the slowest startup, not hanging on `mute`

            nocmd = status["nocmd"]
            assert nocmd.last_error is not None and "'/nonexistent/bin/mcp-thing' was not found" in nocmd.last_error
            assert nocmd.hint is not None and "test: mcp_servers.nocmd" in nocmd.hint

            noenv = status["noenv"]
            assert noenv.last_error is not None and "BEARAGENT_TEST_UNSET_VAR" in noenv.last_error
            assert "mcp_servers.noenv.args[0]" in noenv.last_error

            assert all(t.spec.name.startswith("mcp__demo__") for t in m.tools())
            summary = m.unavailable_summary()
            for name in ("dead", "mute", "nocmd", "noenv"):
                assert f"- {name}: " in summary
            assert "demo" not in summary.replace("DEMO_TOKEN", "")
        finally:
            await m.aclose()

    run(main)


def test_env_is_inherited_whole_and_cwd_defaults_to_workspace(tmp_path: Path) -> None:
    """A stdio server is trusted code: it gets the whole environment (CA bundles, proxies: `uvx` servers need
    them), with its entry's `env` on top."""

    async def main() -> None:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "SSL_CERT_FILE": "/etc/ssl/ca.pem",
            "HTTPS_PROXY": "http://127.0.0.1:3128",
            "GREETING": "hi",
            "OVERRIDDEN": "from-env",
        }
        spec = stdio_spec(
            "demo", DEMO, env={"FROM_ENTRY": "${GREETING}-${MISSING:-fallback}", "OVERRIDDEN": "from-entry"}
        )
        async with McpConnectionManager([spec], env, tmp_path) as m:
            r = await call(m, "mcp__demo__env", {"name": "FROM_ENTRY"}, tmp_path)
            assert r.content == "hi-fallback"
            for name, value in (
                ("SSL_CERT_FILE", "/etc/ssl/ca.pem"),
                ("HTTPS_PROXY", "http://127.0.0.1:3128"),
                ("OVERRIDDEN", "from-entry"),
            ):
                r = await call(m, "mcp__demo__env", {"name": name}, tmp_path)
                assert r.content == value, name
            r = await call(m, "mcp__demo__env", {"name": "HOME"}, tmp_path)
            assert r.content == str(tmp_path)
            r = await call(m, "mcp__demo__cwd", {}, tmp_path)
            assert Path(r.content).resolve() == tmp_path.resolve()
            # 2 MiB over stdio: received, then bounded for the model
            r = await call(m, "mcp__demo__huge", {"kib": 2048}, tmp_path)
            assert r.status == "succeeded" and r.truncated and len(r.content) <= 100_000
            assert "of 2097152 characters from MCP server 'demo'" in r.content
            assert r.data is None and "[structured content dropped:" in r.content  # 2 MiB string > JSON bounds

    run(main)


@pytest.mark.slow
def test_garbage_on_stdout_is_tolerated_or_explained(tmp_path: Path) -> None:
    async def main() -> None:
        specs = [
            stdio_spec("garb", MISBEHAVING, "garbage-then-serve"),
            stdio_spec("chatty", MISBEHAVING, "garbage-only", startup_timeout_s=2.0),
        ]
        async with McpConnectionManager(specs, os.environ, tmp_path) as m:
            r = await call(m, "mcp__garb__echo", {"message": "through the noise"}, tmp_path)
            assert r.content == "echo: through the noise"
            chatty = m.server_status("chatty")
            assert chatty.state == "failed" and chatty.last_error is not None
            assert "within 2s" in chatty.last_error and "not JSON-RPC" in chatty.last_error
            assert "chatty banner" in chatty.last_error

    run(main)


@pytest.mark.slow
def test_crash_mid_call_fails_the_call_then_next_call_restarts(tmp_path: Path) -> None:
    async def main() -> None:
        async with McpConnectionManager([stdio_spec("demo", DEMO)], os.environ, tmp_path) as m:
            crash = tool_named(m, "mcp__demo__crash")
            echo = tool_named(m, "mcp__demo__echo")
            r = await crash.execute(frozen_json({}), ctx(tmp_path))
            assert r.status == "failed" and r.error is not None
            assert r.error.code == "mcp.connection_lost" and r.error.category == "mcp"
            assert "died during the call to 'crash'" in r.content and "next call restarts it" in r.content
            assert m.server_status("demo").state == "failed"
            assert m.tools() == []
            # the model still holds the old tool object: calling it reconnects
            r = await echo.execute(frozen_json({"message": "again"}), ctx(tmp_path))
            assert r.status == "succeeded" and r.content == "echo: again"
            status = m.server_status("demo")
            assert status.state == "ready" and status.restarts == 1
            assert len(m.tools()) == status.tool_count

    run(main)


@pytest.mark.slow
def test_restarts_are_bounded(tmp_path: Path) -> None:
    async def main() -> None:
        m = McpConnectionManager(
            [stdio_spec("demo", DEMO)], os.environ, tmp_path, max_restarts=1, backoff_s=0.01, max_backoff_s=0.05
        )
        await m.start_all()
        try:
            crash = tool_named(m, "mcp__demo__crash")
            r1 = await crash.execute(frozen_json({}), ctx(tmp_path))
            r2 = await crash.execute(frozen_json({}), ctx(tmp_path))  # restart 1, crashes again
            assert r1.error is not None and r1.error.code == "mcp.connection_lost"
            assert r2.error is not None and r2.error.code == "mcp.connection_lost"
            r3 = await crash.execute(frozen_json({}), ctx(tmp_path))  # restart 2 > max
            assert r3.error is not None and r3.error.code == "mcp.server_unavailable"
            assert "gave up after" in r3.content and "Fix:" in r3.content
            assert await m.retry_failed() == []  # out of attempts: nothing is retried any more
        finally:
            await m.aclose()

    run(main)


def test_server_that_comes_up_later_adds_its_tools(tmp_path: Path) -> None:
    launcher = tmp_path / "bin" / "late-server"
    spec = stdio_spec("late", DEMO, command=str(launcher), args=())

    async def main() -> None:
        # the workspace is a sibling of the launcher's directory: a launcher created *inside* the workspace during
        # the run would be refused (its code changed since the start: docs/security.md, "Hooks and the model's
        # writes")
        workspace = tmp_path / "ws"
        workspace.mkdir()
        m = McpConnectionManager([spec], os.environ, workspace, backoff_s=0.01, max_connect_attempts=100)
        await m.start_all(retry_interval_s=0.2)  # failed servers are retried in the background
        try:
            assert m.server_status("late").state == "failed"
            assert m.tools() == [] and "late" in m.unavailable_summary()
            assert "It will be retried." in m.unavailable_summary()
            launcher.parent.mkdir()
            launcher.write_text(f"#!/bin/sh\nexec {shlex.join([sys.executable, str(DEMO)])} stdio\n")
            launcher.chmod(0o755)
            deadline = time.monotonic() + 30
            while not m.tools() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert any(t.spec.name == "mcp__late__echo" for t in m.tools())
            assert m.server_status("late").state == "ready"
            assert m.unavailable_summary() == ""
        finally:
            await m.aclose()

    run(main)


def test_background_retry_stops_after_bounded_attempts(tmp_path: Path) -> None:
    async def main() -> None:
        spec = stdio_spec("never", DEMO, command=str(tmp_path / "missing"))
        m = McpConnectionManager([spec], os.environ, tmp_path, max_connect_attempts=3, backoff_s=0.01)
        await m.start_all()
        m.start_background_retry(interval_s=0.05)
        deadline = time.monotonic() + 10
        while m.server_status("never").connect_attempts < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert m.server_status("never").connect_attempts == 3
        assert "It will be retried" not in m.unavailable_summary()
        await m.aclose()

    run(main)


# ----- streamable HTTP -----


@pytest.mark.slow
def test_http_server_calls_and_mid_call_death(tmp_path: Path) -> None:
    with http_server([sys.executable, str(DEMO), "http", "{port}"]) as server:

        async def main() -> None:
            specs = [
                http_spec("web", server.url, headers={"X-Token": "${TOKEN}"}),
                http_spec("wrongpath", server.url.replace("/mcp", "/nope")),
            ]
            m = McpConnectionManager(specs, {"TOKEN": "s3cr3t-value"}, tmp_path)
            await m.start_all()
            try:
                assert m.server_status("web").state == "ready"
                r = await call(m, "mcp__web__add", {"a": 1, "b": 2}, tmp_path)
                assert r.content == "3"
                wrong = m.server_status("wrongpath")
                assert wrong.state == "failed" and wrong.last_error is not None and wrong.hint is not None
                assert "Not Found" in wrong.last_error and "/mcp" in wrong.hint

                slow = asyncio.create_task(call(m, "mcp__web__slow", {"seconds": 10}, tmp_path))
                await asyncio.sleep(1.0)
                killed_at = time.monotonic()
                server.kill()
                r = await slow
                assert time.monotonic() - killed_at < 8
                assert r.status == "failed" and r.error is not None
                assert r.error.code in ("mcp.connection_lost", "mcp.call_failed"), r.content
                assert "s3cr3t-value" not in r.content
            finally:
                await m.aclose()

        run(main)


def test_http_connection_refused_is_one_clear_message(tmp_path: Path) -> None:
    async def main() -> None:
        url = f"http://127.0.0.1:{free_port()}/mcp"
        async with McpConnectionManager([http_spec("gone", url)], {}, tmp_path) as m:
            st = m.server_status("gone")
            assert st.state == "failed" and st.last_error is not None and st.hint is not None
            assert f"could not connect to {url}" in st.last_error
            assert "start the server" in st.hint
            assert "ExceptionGroup" not in st.last_error

    run(main)


def test_tools_list_changed_adds_the_new_tool(tmp_path: Path) -> None:
    async def main() -> None:
        async with McpConnectionManager([stdio_spec("demo", DEMO)], os.environ, tmp_path) as m:
            assert not any(t.spec.name == "mcp__demo__extra" for t in m.tools())
            r = await call(m, "mcp__demo__grow", {}, tmp_path)
            assert r.content == "grown"
            for _ in range(100):
                if any(t.spec.name == "mcp__demo__extra" for t in m.tools()):
                    break
                await asyncio.sleep(0.05)
            r = await call(m, "mcp__demo__extra", {}, tmp_path)
            assert r.content == "extra ok"

    run(main)

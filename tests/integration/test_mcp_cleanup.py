"""No orphaned MCP server processes: after a normal close, a cancel mid-call, an owner that never closes, and an owner
that is SIGKILLed (the server must exit when its stdin closes). Processes are found by a unique marker argument in
/proc/<pid>/cmdline."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from tests.support.mcp_helpers import DEMO, MISBEHAVING, REPO, pids_with_arg, stdio_spec, wait_until_gone

from bearagent.domain._base import frozen_json
from bearagent.mcp.manager import McpConnectionManager
from bearagent.ports import ToolContext

pytestmark = pytest.mark.timeout(120)


def marker() -> str:
    return f"bearagent-test-{uuid.uuid4().hex}"


@pytest.mark.slow
def test_normal_close_and_cancel_mid_call_leave_no_process(tmp_path: Path) -> None:
    tag = marker()

    async def main() -> None:
        specs = [stdio_spec("a", DEMO, "stdio", tag), stdio_spec("b", DEMO, "stdio", tag)]
        m = McpConnectionManager(specs, os.environ, tmp_path)
        await m.start_all()
        pids = pids_with_arg(tag)
        assert len(pids) == 2, pids
        slow = next(t for t in m.tools() if t.spec.name == "mcp__a__slow")
        task = asyncio.create_task(slow.execute(frozen_json({"seconds": 30}), ToolContext(workspace_root=tmp_path)))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the session survives a cancelled call
        echo = next(t for t in m.tools() if t.spec.name == "mcp__a__echo")
        r = await echo.execute(frozen_json({"message": "x"}), ToolContext(workspace_root=tmp_path))
        assert r.content == "echo: x"
        await m.aclose()
        assert wait_until_gone(pids, 10) == []

    asyncio.run(main())


@pytest.mark.slow
def test_server_ignoring_eof_and_sigterm_is_killed_with_its_group_on_close(tmp_path: Path) -> None:
    tag = marker()

    async def main() -> None:
        spec = stdio_spec("stubborn", MISBEHAVING, "linger", tag)
        m = McpConnectionManager([spec], os.environ, tmp_path)
        await m.start_all()
        assert m.server_status("stubborn").state == "ready"
        pids = pids_with_arg(tag)
        assert len(pids) == 2, pids  # the server and its grandchild
        await m.aclose()
        assert wait_until_gone(pids, 10) == []

    asyncio.run(main())


OWNER = textwrap.dedent(
    """
    import asyncio, os, sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from bearagent.domain._base import frozen_json
    from bearagent.mcp.manager import McpConnectionManager
    from bearagent.ports import ToolContext
    from tests.support.mcp_helpers import DEMO, stdio_spec

    async def main(mode: str) -> None:
        specs = [stdio_spec("a", DEMO, "stdio", {tag!r}), stdio_spec("b", DEMO, "stdio", {tag!r})]
        m = McpConnectionManager(specs, os.environ, Path({ws!r}))
        await m.start_all()
        assert len(m.tools()) > 10
        slow = next(t for t in m.tools() if t.spec.name == "mcp__a__slow")
        call = asyncio.create_task(slow.execute(frozen_json({{"seconds": 60}}), ToolContext(workspace_root=Path("."))))
        await asyncio.sleep(0.5)
        print("READY", flush=True)
        if mode == "wait":
            await asyncio.sleep(120)
        elif mode == "cancel-and-return":
            call.cancel()
            await asyncio.sleep(0.1)
            return  # never calls aclose(): asyncio.run's teardown cancels the connection tasks
        elif mode == "raise":
            raise RuntimeError("owner crashed")

    asyncio.run(main(sys.argv[1]))
    """
)


def _owner(tmp_path: Path, tag: str, mode: str) -> subprocess.Popen[str]:
    script = tmp_path / "owner.py"
    script.write_text(OWNER.format(repo=str(REPO), tag=tag, ws=str(tmp_path)))
    return subprocess.Popen(
        [sys.executable, str(script), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )


def _wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "READY":
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"owner did not get ready: {line!r}\n{err[-3000:]}")


@pytest.mark.slow
def test_sigkilled_owner_leaves_no_server(tmp_path: Path) -> None:
    tag = marker()
    proc = _owner(tmp_path, tag, "wait")
    try:
        _wait_ready(proc)
        pids = pids_with_arg(tag)
        assert len(pids) == 2, pids
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # nobody closes anything: each server sees its stdin close and exits on its own
        assert wait_until_gone(pids, 15) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


@pytest.mark.parametrize("mode", ["cancel-and-return", "raise"])
@pytest.mark.slow
def test_owner_that_never_closes_leaves_no_server(tmp_path: Path, mode: str) -> None:
    tag = marker()
    proc = _owner(tmp_path, tag, mode)
    try:
        _wait_ready(proc)
        pids = pids_with_arg(tag)
        assert len(pids) == 2, pids
        proc.wait(timeout=30)
        assert wait_until_gone(pids, 15) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)

"""`service.closing.close_all` and the close chains built on it: a part that fails to close does not keep the
others open, and its failure is not swallowed."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bearagent.service.closing import close_all


def test_every_closer_runs_and_the_first_failure_is_raised(caplog: pytest.LogCaptureFixture) -> None:
    closed: list[str] = []

    async def mcp() -> None:
        closed.append("mcp")
        raise RuntimeError("the server would not stop")

    def provider() -> None:
        closed.append("provider")
        raise OSError("pool")

    def store() -> None:
        closed.append("store")

    with caplog.at_level(logging.WARNING), pytest.raises(RuntimeError, match="would not stop"):
        asyncio.run(close_all([mcp, provider, store]))
    assert closed == ["mcp", "provider", "store"]
    assert "also failed" in caplog.text and "pool" in caplog.text


def test_a_cancel_while_closing_still_closes_the_rest_then_propagates() -> None:
    closed: list[str] = []

    async def slow() -> None:
        closed.append("slow")
        await asyncio.sleep(30)

    def store() -> None:
        closed.append("store")

    async def main() -> None:
        task = asyncio.create_task(close_all([slow, store]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert closed == ["slow", "store"]


def test_a_runtime_whose_mcp_servers_fail_to_close_still_closes_its_store(tmp_path: Path) -> None:
    """A real workspace runtime after a real run: its MCP manager's close raises; the failure reaches the caller
    and the store is closed all the same."""
    from tests.support.run_ws import agent_md, open_ws, scripted_workspace

    from bearagent.api import runtime_of
    from bearagent.store.errors import StoreError

    root = scripted_workspace(
        tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents={"main": agent_md("Main.", mode="primary")}
    )

    class FailingManager:
        async def aclose(self) -> None:
            raise RuntimeError("mcp close failed")

    async def main() -> None:
        workspace = open_ws(root, tmp_path / "home")
        done = await workspace.run("hello")
        assert done.status == "succeeded"
        resources = runtime_of(workspace).resources
        store = resources.store
        assert store.list_runs()
        resources._mcp = FailingManager()  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
        with pytest.raises(RuntimeError, match="mcp close failed"):
            await workspace.aclose()
        with pytest.raises(StoreError, match="closed database"):
            store.list_runs()

    asyncio.run(main())

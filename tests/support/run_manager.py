"""The server's run manager over one small workspace, for tests that drive its worker in-process (no HTTP)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

from bearagent.server.registry import DEFAULT_CONCURRENCY, RunManager, WorkspaceEntry
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace


def done_workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A workspace whose one agent answers "done" at once, and an isolated user environment."""
    main = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    root = scripted_workspace(tmp_path / "ws", 'turns:\n  - text: "done"\n', agents=main)
    return root, isolated_env(tmp_path / "home")


@contextlib.asynccontextmanager
async def serving(
    root: Path,
    env: dict[str, str],
    *,
    workers: int,
    concurrency: int = DEFAULT_CONCURRENCY,
    poll_s: float = 0.5,
    resume_interrupted: bool = False,
) -> AsyncGenerator[RunManager]:
    """The server's run manager over the workspace (`ws`), its in-process worker started when it has one."""
    entry = WorkspaceEntry(id="ws", name="ws", root_path=root)
    manager = RunManager(
        {"ws": entry},
        env,
        workers=workers,
        concurrency=concurrency,
        poll_s=poll_s,
        resume_interrupted=resume_interrupted,
    )
    if workers:
        manager.start_worker()
    try:
        yield manager
    finally:
        await manager.aclose()

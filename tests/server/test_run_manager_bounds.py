"""What a long-lived server keeps per run it accepted is bounded: the subject that started a run is remembered for
the latest `OWNERS_KEPT` runs only (a fallback for logs that do not record their initiator; every run the server
starts records it), not for every run it ever accepted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.run_manager import done_workspace, serving

from bearagent.domain.ids import RunId
from bearagent.server import registry
from bearagent.service.run_types import RunOptions


def test_the_server_remembers_the_starters_of_its_latest_runs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, env = done_workspace(tmp_path)
    monkeypatch.setattr(registry, "OWNERS_KEPT", 3)

    async def scenario() -> tuple[list[RunId], list[str | None], int]:
        async with serving(root, env, workers=0) as manager:  # API only: the runs stay queued
            runs = [(await manager.start("ws", f"local:caller-{n}", "hello", RunOptions())).run_id for n in range(5)]
            kept = len(manager._owner)  # pyright: ignore[reportPrivateUsage]
            return runs, [manager.owner_of(r) for r in runs], kept

    runs, owners, kept = asyncio.run(scenario())
    assert kept == 3, kept
    assert owners == [None, None, "local:caller-2", "local:caller-3", "local:caller-4"], (runs, owners)

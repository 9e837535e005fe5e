"""What a long-lived server keeps per run it accepted is bounded: the subject that started a run is remembered for
the latest `OWNERS_KEPT` runs only (a fallback for logs that do not record their initiator; every run the server
starts records it), not for every run it ever accepted. And how many submissions it records at once: at most
`ADMITTING_AT_ONCE`, the others waiting their turn."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from tests.support.run_manager import done_workspace, serving

from bearagent.domain.ids import RunId
from bearagent.domain.state import RunProjection
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


def test_a_burst_of_submissions_is_recorded_a_few_at_a_time_and_every_one_is_accepted(tmp_path: Path) -> None:
    root, env = done_workspace(tmp_path)

    async def scenario() -> tuple[int, list[str], int]:
        async with serving(root, env, workers=0) as manager:  # API only: the runs stay queued
            runtime = manager.runtime("ws")
            real = runtime.enqueue
            recording, most = 0, 0

            async def enqueue(prompt: str, options: RunOptions | None = None) -> RunProjection:
                nonlocal recording, most
                recording += 1
                most = max(most, recording)
                try:
                    await asyncio.sleep(0.01)  # a store round trip: the others get the loop meanwhile
                    return await real(prompt, options)
                finally:
                    recording -= 1

            runtime.enqueue = enqueue  # pyright: ignore[reportAttributeAccessIssue]
            runs = await asyncio.gather(
                *(
                    manager.start("ws", "local:burst", f"message {n}", RunOptions())
                    for n in range(3 * registry.ADMITTING_AT_ONCE)
                )
            )
            stored = await runtime.store.fetch_runs(status="queued", limit=100)
            return most, [r.status for r in runs], len({r.run_id for r in stored})

    most, statuses, stored = asyncio.run(scenario())
    assert most == registry.ADMITTING_AT_ONCE, most
    assert statuses == ["queued"] * (3 * registry.ADMITTING_AT_ONCE)
    assert stored == 3 * registry.ADMITTING_AT_ONCE


def test_a_submission_cancelled_while_it_waits_its_turn_records_nothing(tmp_path: Path) -> None:
    root, env = done_workspace(tmp_path)

    async def scenario() -> int:
        async with serving(root, env, workers=0) as manager:
            runtime = manager.runtime("ws")
            real = runtime.enqueue
            release = asyncio.Event()

            async def enqueue(prompt: str, options: RunOptions | None = None) -> RunProjection:
                await release.wait()
                return await real(prompt, options)

            runtime.enqueue = enqueue  # pyright: ignore[reportAttributeAccessIssue]
            first = [
                asyncio.ensure_future(manager.start("ws", "local:burst", f"m{n}", RunOptions()))
                for n in range(registry.ADMITTING_AT_ONCE)
            ]
            waiting = asyncio.ensure_future(manager.start("ws", "local:burst", "late", RunOptions()))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            waiting.cancel()
            release.set()
            await asyncio.gather(*first)
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            return len(await runtime.store.fetch_runs(status="queued", limit=100))

    assert asyncio.run(scenario()) == registry.ADMITTING_AT_ONCE

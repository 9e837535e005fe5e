"""`store/postgres/io_loop.IoLoop` on a process's own loop (`use_this_loop`), without a database: a call from that
loop runs inline (no thread of its own), a synchronous call on that loop's thread runs on a one-shot thread instead
of waiting for itself, and closing never stops the process's loop (with or without a last step, from its own thread
or another)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from bearagent.store.postgres import io_loop
from bearagent.store.postgres.io_loop import ONE_SHOT, IoLoop


@pytest.fixture(autouse=True)
def _no_home_loop_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(io_loop, "_HOME", [])
    yield


async def _where() -> tuple[str, asyncio.AbstractEventLoop]:
    return threading.current_thread().name, asyncio.get_running_loop()


def test_calls_from_the_named_loop_run_on_it_and_synchronous_ones_on_a_one_shot_thread() -> None:
    async def go() -> None:
        io_loop.use_this_loop()
        here = asyncio.get_running_loop()
        io = IoLoop("bearagent-pg-test")
        name, loop = await io.call(_where())
        assert (name, loop) == (threading.current_thread().name, here)
        name, loop = await io.call_shielded(_where())
        assert loop is here
        name, loop = io.run(_where())  # would wait for itself on the named loop's thread
        assert name.startswith(ONE_SHOT) and loop is not here
        name, loop = await asyncio.to_thread(io.run, _where())  # another thread waits for the named loop
        assert loop is here
        assert not any(t.name == "bearagent-pg-test" for t in threading.enumerate())
        io.close()  # no last step: returns, the loop goes on
        await asyncio.sleep(0)
        assert here.is_running()
        with pytest.raises(RuntimeError, match="closed"):
            await io.call(_where())

    asyncio.run(go())


def test_closing_on_the_named_loop_runs_the_last_step_there_and_leaves_the_loop_running() -> None:
    async def go() -> None:
        io_loop.use_this_loop()
        here = asyncio.get_running_loop()
        ran: list[asyncio.AbstractEventLoop] = []

        async def last() -> None:
            ran.append(asyncio.get_running_loop())

        from_loop, from_thread, awaited = IoLoop("a"), IoLoop("b"), IoLoop("c")
        for io in (from_loop, from_thread, awaited):
            await io.call(_where())  # started: on the named loop
        from_loop.close(last())  # on the loop's thread: scheduled there, not waited for
        await asyncio.to_thread(from_thread.close, last())  # another thread: waits for it
        await awaited.aclose(last())
        for _ in range(10):
            await asyncio.sleep(0)
        assert ran == [here, here, here]
        assert here.is_running()

    asyncio.run(go())


def test_without_a_named_loop_a_synchronous_call_on_the_stores_own_thread_is_refused() -> None:
    io = IoLoop("bearagent-pg-own")
    try:

        async def nested() -> str:
            inner = _where()
            try:
                io.run(inner)
            except RuntimeError as exc:
                return str(exc)
            return "ran"

        assert "wait for itself" in io.run(nested())
        name, _ = io.run(_where())
        assert name == "bearagent-pg-own"
    finally:
        io.close()

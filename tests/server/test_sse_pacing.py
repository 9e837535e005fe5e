"""`sse.Paced`: keep-alives during silence without tearing the source down, and the idle timeout (in process,
with short intervals)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from bearagent.server.sse import Beat, Paced, StreamSlots, frame


async def _slow(gaps: list[float]) -> AsyncIterator[int]:
    for n, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield n


async def _collect(paced: Paced[int]) -> list[object]:
    return [item async for item in paced]


def test_beats_in_silence_do_not_end_the_source() -> None:
    got = asyncio.run(_collect(Paced(_slow([0.0, 0.35, 0.0]), idle_s=5, keepalive_s=0.1)))
    items = [g for g in got if not isinstance(g, Beat)]
    assert items == [0, 1, 2]  # a cancelled read would have closed the generator after the first beat
    assert 2 <= sum(isinstance(g, Beat) for g in got) <= 4
    assert got[0] == 0 and isinstance(got[1], Beat)


def test_a_stream_without_items_ends_after_the_idle_timeout() -> None:
    started = time.monotonic()
    got = asyncio.run(_collect(Paced(_slow([10.0]), idle_s=0.3, keepalive_s=0.1)))
    took = time.monotonic() - started
    assert all(isinstance(g, Beat) for g in got) and 1 <= len(got) <= 3
    assert 0.25 <= took < 2.0


def test_an_item_resets_the_idle_clock() -> None:
    got = asyncio.run(_collect(Paced(_slow([0.2, 0.2, 0.2, 10.0]), idle_s=0.35, keepalive_s=1.0)))
    assert [g for g in got if not isinstance(g, Beat)] == [0, 1, 2]


def test_slots_are_per_subject_and_released_once() -> None:
    slots = StreamSlots(1)
    release = slots.take("alice")
    slots.take("bob")
    try:
        slots.take("alice")
    except Exception as exc:  # ApiError 429
        assert getattr(exc, "status", None) == 429
    else:
        raise AssertionError("a second stream of alice was allowed")
    release()
    release()
    assert slots.open_count("alice") == 0 and slots.open_count("bob") == 1
    slots.take("alice")


def test_a_frame_is_id_event_and_one_data_line() -> None:
    assert frame("step", '{"a":1}', "3-1") == b'id: 3-1\nevent: step\ndata: {"a":1}\n\n'
    assert frame("token", '{"t":"x"}') == b'event: token\ndata: {"t":"x"}\n\n'

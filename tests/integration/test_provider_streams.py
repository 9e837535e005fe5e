"""Stream lifecycle against the replay server: closing or cancelling the consumer closes the HTTP stream promptly,
and both the request deadline (`ModelRequest.timeout_ms`) and the entry's I/O timeout (`timeout_s`) end a silent
stream as a retryable `timeout` failure."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Iterator
from typing import cast

import pytest
from tests.support.providers import collect, make_provider, simple_request
from tests.support.replay_server import ReplayServer

from bearagent.domain.errors import BearAgentError
from bearagent.domain.models import ModelEvent, TextDelta

PROTOCOLS = ("openai_chat", "openai_responses", "anthropic_messages")


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        yield server


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_closing_the_iterator_closes_the_http_stream(replay: ReplayServer, protocol: str) -> None:
    provider = make_provider(protocol, replay.route_url(f"slow/{protocol}", protocol))

    async def main() -> tuple[list[str], bool]:
        seen: list[str] = []
        stream = cast(AsyncGenerator[ModelEvent, None], provider.stream(simple_request()))
        async for event in stream:
            if isinstance(event, TextDelta):
                seen.append(event.text)
            if len(seen) == 3:
                break
        await stream.aclose()
        # checked before the client is closed: the stream itself must have closed the connection
        closed = await asyncio.to_thread(replay.closed.wait, 3.0)
        await provider.aclose()
        return seen, closed

    seen, closed = asyncio.run(main())
    assert seen == ["t0 ", "t1 ", "t2 "]
    # the server writes every 20 ms; a closed connection makes its next writes fail
    assert closed, "the server kept streaming: the HTTP connection was not closed"


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cancelling_the_consuming_task_closes_the_http_stream(replay: ReplayServer, protocol: str) -> None:
    provider = make_provider(protocol, replay.route_url(f"slow/{protocol}", protocol))

    async def main() -> tuple[int, bool]:
        count = 0
        started = asyncio.Event()

        async def consume() -> None:
            nonlocal count
            async for event in provider.stream(simple_request()):
                if isinstance(event, TextDelta):
                    count += 1
                    started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        closed = await asyncio.to_thread(replay.closed.wait, 3.0)
        await provider.aclose()
        return count, closed

    count, closed = asyncio.run(main())
    assert count >= 1
    assert closed, "the server kept streaming after the consumer was cancelled"


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_request_deadline_ends_a_silent_stream(replay: ReplayServer, protocol: str) -> None:
    provider = make_provider(protocol, replay.route_url("hang", protocol), timeout_s=30)
    started = time.monotonic()
    outcome = collect(provider, simple_request(timeout_ms=400))
    elapsed = time.monotonic() - started
    error = outcome.stream_error
    assert error.info.category == "timeout"
    assert error.info.retryable
    assert "0.4s" in error.info.message and "timeout_s" in error.info.message
    assert elapsed < 5


@pytest.mark.network_local
def test_the_entry_io_timeout_ends_a_silent_stream(replay: ReplayServer) -> None:
    provider = make_provider("openai_chat", replay.route_url("hang", "openai_chat"), timeout_s=0.3)
    started = time.monotonic()
    outcome = collect(provider, simple_request(timeout_ms=60_000))
    assert outcome.stream_error.info.category == "timeout"
    assert time.monotonic() - started < 5


@pytest.mark.network_local
def test_an_unreachable_server_is_a_network_error_naming_the_url() -> None:
    provider = make_provider("openai_chat", "http://127.0.0.1:9/v1")  # discard port: nothing listens
    outcome = collect(provider, simple_request())
    error = outcome.stream_error
    assert error.info.category == "network"
    assert error.info.retryable
    assert "http://127.0.0.1:9/v1" in error.info.message and "base_url" in error.info.message


def test_a_provider_error_is_a_bearagent_error() -> None:
    provider = make_provider("openai_chat", "http://127.0.0.1:9/v1")
    assert isinstance(collect(provider, simple_request()).error, BearAgentError)


@pytest.mark.network_local
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_request_deadline_ends_a_stream_that_never_finishes(replay: ReplayServer, protocol: str) -> None:
    """Deltas every 20 ms keep the read timeout happy; the whole-call deadline still ends the call."""
    provider = make_provider(protocol, replay.route_url(f"slow/{protocol}", protocol), timeout_s=30)
    started = time.monotonic()
    outcome = collect(provider, simple_request(timeout_ms=2_000))
    error = outcome.stream_error
    assert error.info.category == "timeout" and error.info.retryable
    assert error.partial_text.startswith("t0 ") and error.partial_text == outcome.text
    assert time.monotonic() - started < 8

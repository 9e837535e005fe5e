"""Adapter overhead per streamed event: a 10,000-delta stream from the local replay server, parsed by the bare SDK
(iterating its stream) and by BearAgent's adapter (SDK + our accumulation + `TextDelta` events + the deadline),
alternately in the same process. Target: adapter <= 1.5x the bare SDK.

Run: `uv run python benchmarks/bench_providers.py [--deltas 10000] [--rounds 5]`
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.providers import make_provider
from tests.support.replay_server import LOCAL_FIXTURES, ReplayServer

from bearagent.domain.messages import Message
from bearagent.domain.models import ModelRequest, TextDelta

PROTOCOLS = ("openai_chat", "openai_responses", "anthropic_messages")


async def bare_sdk(protocol: str, base_url: str) -> int:
    count = 0
    if protocol == "anthropic_messages":
        from anthropic import AsyncAnthropic

        client = AsyncAnthropic(api_key="bench", base_url=base_url, max_retries=0)
        stream = await client.messages.create(
            model="gen-model", max_tokens=16, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for _event in stream:
            count += 1
        await client.close()
        return count
    from openai import AsyncOpenAI

    oclient = AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)
    if protocol == "openai_chat":
        chat_stream = await oclient.chat.completions.create(
            model="gen-model",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for _chunk in chat_stream:
            count += 1
    else:
        resp_stream = await oclient.responses.create(model="gen-model", input="hi", stream=True)
        async for _item in resp_stream:
            count += 1
    await oclient.close()
    return count


async def adapter(protocol: str, base_url: str) -> int:
    provider = make_provider(protocol, base_url, api_key="bench")
    request = ModelRequest(model="gen-model", messages=(Message.user("hi"),), timeout_ms=600_000)
    count = 0
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            count += 1
    await provider.aclose()
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n: int = args.deltas
    print(f"# provider adapter overhead, {n} deltas, {args.rounds} rounds, median")
    print(f"machine: {platform.machine()} {platform.system()} python {platform.python_version()}")
    print("| protocol | bare SDK (s) | adapter (s) | ratio | per-event overhead (µs) |")
    print("|---|---|---|---|---|")
    with ReplayServer({"local": LOCAL_FIXTURES}) as server:
        for protocol in PROTOCOLS:
            url = server.route_url(f"gen/{protocol}/{n}", protocol)
            # warm up imports and the server
            asyncio.run(bare_sdk(protocol, server.route_url(f"gen/{protocol}/10", protocol)))
            asyncio.run(adapter(protocol, server.route_url(f"gen/{protocol}/10", protocol)))
            bare: list[float] = []
            ours: list[float] = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                asyncio.run(bare_sdk(protocol, url))
                bare.append(time.perf_counter() - start)
                start = time.perf_counter()
                got = asyncio.run(adapter(protocol, url))
                ours.append(time.perf_counter() - start)
                assert got == n, f"{protocol}: adapter produced {got} deltas, expected {n}"
            b, o = statistics.median(bare), statistics.median(ours)
            print(f"| {protocol} | {b:.3f} | {o:.3f} | {o / b:.2f}x | {(o - b) / n * 1e6:.1f} |")


if __name__ == "__main__":
    main()

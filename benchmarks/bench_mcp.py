"""MCP benchmarks (issue 9): run with `uv run python benchmarks/bench_mcp.py [--calls N] [--rounds R]`.

1. Per-call overhead: `ping(41)` (an async tool) on one in-process `MCPServer`, through the `ToolGate` + our `McpTool` (manager,
   death watch, result mapping) vs a bare `mcp.Client.call_tool` on its own in-process client to the same server
   object. Both run in the same process, call by call interleaved; the figure is the ratio of the per-call medians
   (target <= 1.3x).
2. Session start with 5 stdio servers: each server started alone (one after the other) vs all five via
   `start_all()` (concurrently). Concurrent total should be close to the slowest single start, not the sum.
   Twice: plain Python SDK servers (their start is CPU-bound: spawning Python and importing `mcp`, so on a 2-core
   machine five of them cannot all overlap), and the same servers waiting 1 s before serving (wait-bound, like a
   server that dials a database or resolves a package first).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mcp import Client  # noqa: E402
from tests.support.mcp_servers.demo import DEMO_PATH, build_server  # noqa: E402

from bearagent.domain._base import frozen_json  # noqa: E402
from bearagent.domain.ids import ToolCallId, Uuid4IdGenerator  # noqa: E402
from bearagent.domain.specs import McpServerSpec  # noqa: E402
from bearagent.domain.tools import ToolRequest  # noqa: E402
from bearagent.mcp.manager import McpConnectionManager  # noqa: E402
from bearagent.ports import ToolContext  # noqa: E402


async def bench_calls(calls: int, rounds: int) -> dict[str, float]:
    server = build_server()
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    ids = Uuid4IdGenerator()
    try:
        from bearagent.tools.gate import ToolGate
    except ImportError:  # pragma: no cover - the gate is another issue's work
        ToolGate = None
    async with Client(server) as bare, McpConnectionManager([], {}, root, in_process={"demo": server}) as manager:
        tool = next(t for t in manager.tools() if t.spec.name == "mcp__demo__ping")
        gate = ToolGate({tool.spec.name: tool}) if ToolGate is not None else None
        args = {"n": 41}
        frozen = frozen_json(args)
        fixed_ctx = ToolContext(workspace_root=root, tool_call_id=ids.new(ToolCallId))

        async def bare_once() -> None:
            result = await bare.call_tool("ping", args)
            assert not result.is_error

        async def tool_once() -> None:
            result = await tool.execute(frozen, fixed_ctx)
            assert result.content == "42", result

        async def gate_once() -> None:
            call_id = ids.new(ToolCallId)
            ctx = ToolContext(workspace_root=root, tool_call_id=call_id)
            request = ToolRequest(tool_call_id=call_id, name=tool.spec.name, arguments=frozen)
            result = await gate.call(request, ctx) if gate is not None else await tool.execute(frozen, ctx)
            assert result.content == "42", result

        paths = {"bare": bare_once, "tool": tool_once, "gate": gate_once}
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(50):  # warm up every path
            for once in paths.values():
                await once()
        # Interleave single calls and take the median of each path's per-call times: robust to load spikes on a
        # shared machine (a block-based mean is not).
        for _ in range(rounds * calls):
            for name, once in paths.items():
                t = time.perf_counter()
                await once()
                samples[name].append(time.perf_counter() - t)
    med = {name: statistics.median(values) * 1e3 for name, values in samples.items()}
    gate_label = "ToolGate + McpTool (+ ToolRequest/ToolContext per call)" if gate is not None else "McpTool (no gate)"
    print(
        f"per call (median of {rounds * calls}): bare Client.call_tool {med['bare']:.3f} ms | "
        f"McpTool.execute {med['tool']:.3f} ms ({med['tool'] / med['bare']:.2f}x) | "
        f"{gate_label} {med['gate']:.3f} ms ({med['gate'] / med['bare']:.2f}x)"
    )
    return med


def _spec(i: int, delay_s: float) -> McpServerSpec:
    return McpServerSpec(
        name=f"s{i}",
        transport="stdio",
        command=sys.executable,
        args=(str(DEMO_PATH), "stdio"),
        env={"DEMO_START_DELAY_S": str(delay_s)},
        startup_timeout_s=60,
    )


async def bench_start(repeats: int, delay_s: float) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    singles: list[float] = []
    for i in range(5):
        best = float("inf")
        for _ in range(repeats):
            m = McpConnectionManager([_spec(i, delay_s)], os.environ, root)
            t = time.perf_counter()
            await m.start_all()
            best = min(best, time.perf_counter() - t)
            assert m.server_status(f"s{i}").state == "ready"
            await m.aclose()
        singles.append(best)
    concurrent = float("inf")
    for _ in range(repeats):
        m = McpConnectionManager([_spec(i, delay_s) for i in range(5)], os.environ, root)
        t = time.perf_counter()
        await m.start_all()
        concurrent = min(concurrent, time.perf_counter() - t)
        assert all(s.state == "ready" for s in m.status())
        await m.aclose()
    total, slowest = sum(singles), max(singles)
    print(
        f"5 stdio servers (start delay {delay_s:g}s): alone {', '.join(f'{s * 1e3:.0f}' for s in singles)} ms "
        f"(sum {total * 1e3:.0f} ms, slowest {slowest * 1e3:.0f} ms) | start_all concurrently {concurrent * 1e3:.0f} ms "
        f"= {concurrent / slowest:.2f}x the slowest, {concurrent / total:.2f}x the sum"
    )
    return {"sum_ms": total * 1e3, "slowest_ms": slowest * 1e3, "concurrent_ms": concurrent * 1e3}


def main() -> None:
    logging.disable(logging.WARNING)  # the SDK server warns about the demo's deliberately odd tool name
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--start-repeats", type=int, default=3)
    parser.add_argument("--calls-only", action="store_true", help="skip the session-start benchmark")
    opts = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    asyncio.run(bench_calls(opts.calls, opts.rounds))
    if not opts.calls_only:
        asyncio.run(bench_start(opts.start_repeats, 0.0))
        asyncio.run(bench_start(opts.start_repeats, 1.0))


if __name__ == "__main__":
    main()

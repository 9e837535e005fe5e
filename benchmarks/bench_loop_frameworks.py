"""Per-step framework cost of the agent loop: BearAgent beside pydantic-ai and openai-agents (issue 7).

The same loop in each framework, in one run: N turns in which a zero-latency scripted model calls a no-op tool
(`{"n": int}` -> "ok"), then one final text turn. The figure is (run time) / (N + 1) model steps, for N in 10, 50
and 200; the median over `--repeat` runs. Repetitions are interleaved across frameworks (for each N, each round runs
every framework once), so load on a shared machine falls on all of them alike.

- BearAgent: `benchmarks/bench_loop.py`'s `run_once` (ScriptedProvider, durable SQLite event log, WAL + NORMAL).
- pydantic-ai: `Agent` + `FunctionModel` (an async function returning a `ToolCallPart` until N calls were made,
  then a `TextPart`) and an async plain tool; `UsageLimits(request_limit=N + 5)`. In-memory history, no log.
- openai-agents: `Agent` + `Runner.run` with a custom `Model` whose `get_response` returns a
  `ResponseFunctionToolCall` until N calls were made, then a `ResponseOutputMessage`; an async `@function_tool`;
  tracing disabled; `max_turns=N + 5`. In-memory history, no log.

Every run is checked after timing: N tool executions counted inside the tool, N + 1 model calls, the final text
"done" (for BearAgent: the run succeeded and the durable log holds N succeeded tool calls). The other frameworks
come from the optional `bench` dependency group; a framework that is not installed is skipped with a message.

Run: `uv run --group bench python benchmarks/bench_loop_frameworks.py [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_loop

from bearagent.domain._base import JsonMapping
from bearagent.domain.tools import ToolResult
from bearagent.ports import ToolContext
from bearagent.store.sqlite import SqliteEventStore

SIZES = (10, 50, 200)
FINAL_TEXT = "done"


class BenchError(Exception):
    """A framework did not run the loop it was asked to run (the figures would be meaningless)."""


@dataclass
class Counter:
    tool_calls: int = 0
    model_calls: int = 0


RunOnce = Callable[[int], float]


@dataclass
class Framework:
    name: str
    version: str
    run_once: RunOnce
    notes: str
    cleanup: Callable[[], None] = field(default=lambda: None)


def _check(framework: str, n: int, counter: Counter, final: object) -> None:
    if counter.tool_calls != n or counter.model_calls != n + 1 or final != FINAL_TEXT:
        raise BenchError(
            f"{framework} at N={n}: expected {n} tool calls, {n + 1} model calls and final text {FINAL_TEXT!r}, got "
            f"{counter.tool_calls} tool calls, {counter.model_calls} model calls and {final!r}; the benchmark loop "
            "is not doing what it measures, fix the adapter in benchmarks/bench_loop_frameworks.py"
        )


# --- BearAgent ---------------------------------------------------------------------------------------------------

_BEAR_COUNTER = Counter()


class _CountingNoopTool(bench_loop.NoopTool):
    """bench_loop's no-op tool, counting its executions (installed in bench_loop so that `run_once` uses it)."""

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        _BEAR_COUNTER.tool_calls += 1
        return await super().execute(arguments, context)


def bearagent_framework(tmp: Path) -> Framework:
    bench_loop.NoopTool = _CountingNoopTool  # type: ignore[misc]  # count calls without changing bench_loop.py
    root = tmp / "bearagent"
    root.mkdir()
    store = SqliteEventStore(root / "state.db", durability="normal")

    def run_once(n: int) -> float:
        _BEAR_COUNTER.tool_calls = 0
        elapsed = bench_loop.run_once(n, store, root)  # asserts the run succeeded
        run = store.list_runs(limit=1)[0]
        activities = store.list_activities(run.run_id)
        tools = [a for a in activities if a.kind == "tool_call" and a.status == "succeeded"]
        models = [a for a in activities if a.kind == "model_call" and a.status == "succeeded"]
        counter = Counter(tool_calls=_BEAR_COUNTER.tool_calls, model_calls=len(models))
        if len(tools) != _BEAR_COUNTER.tool_calls:
            raise BenchError(f"BearAgent at N={n}: {len(tools)} tool calls in the log, {counter.tool_calls} executed")
        _check("BearAgent", n, counter, run.final_text)
        return elapsed

    return Framework(
        name="BearAgent",
        version=importlib.metadata.version("bearagent"),
        run_once=run_once,
        notes="durable SQLite log (WAL, synchronous=NORMAL)",
        cleanup=store.close,
    )


# --- pydantic-ai -------------------------------------------------------------------------------------------------


def pydantic_ai_framework() -> Framework:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    counter = Counter()
    target = [0]

    # async on purpose: FunctionModel runs a plain `def` in a worker thread, which would add thread hops.
    async def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        i = counter.model_calls
        counter.model_calls += 1
        if i < target[0]:
            return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={"n": i}, tool_call_id=f"call_{i}")])
        return ModelResponse(parts=[TextPart(content=FINAL_TEXT)])

    async def noop(n: int) -> str:
        """Does nothing."""
        counter.tool_calls += 1
        return "ok"

    agent = Agent(FunctionModel(scripted), instructions="You are a benchmark.", tools=[noop])

    def run_once(n: int) -> float:
        counter.tool_calls = counter.model_calls = 0
        target[0] = n
        limits = UsageLimits(request_limit=n + 5)
        started = time.perf_counter()
        result = asyncio.run(agent.run("benchmark", usage_limits=limits))
        elapsed = time.perf_counter() - started
        _check("pydantic-ai", n, counter, result.output)
        return elapsed

    return Framework(
        name="pydantic-ai",
        version=importlib.metadata.version("pydantic-ai-slim"),
        run_once=run_once,
        notes="FunctionModel, in-memory history",
    )


# --- openai-agents -----------------------------------------------------------------------------------------------


def openai_agents_framework() -> Framework:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    counter = Counter()
    target = [0]

    class ScriptedModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            i = counter.model_calls
            counter.model_calls += 1
            usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
            if i < target[0]:
                call = ResponseFunctionToolCall(
                    type="function_call", name="noop", arguments=f'{{"n": {i}}}', call_id=f"call_{i}", id=f"fc_{i}"
                )
                return ModelResponse(output=[call], usage=usage, response_id=None)
            text = ResponseOutputText(type="output_text", text=FINAL_TEXT, annotations=[])
            message = ResponseOutputMessage(
                type="message", id=f"msg_{i}", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark only uses Runner.run (non-streamed)")

    @function_tool
    async def noop(n: int) -> str:
        """Does nothing."""
        counter.tool_calls += 1
        return "ok"

    agent = Agent(name="bench", instructions="You are a benchmark.", model=ScriptedModel(), tools=[noop])

    def run_once(n: int) -> float:
        counter.tool_calls = counter.model_calls = 0
        target[0] = n
        started = time.perf_counter()
        result = asyncio.run(Runner.run(agent, "benchmark", max_turns=n + 5))
        elapsed = time.perf_counter() - started
        _check("openai-agents", n, counter, cast(object, result.final_output))
        return elapsed

    return Framework(
        name="openai-agents",
        version=importlib.metadata.version("openai-agents"),
        run_once=run_once,
        notes="custom Model, tracing disabled, in-memory history",
    )


# --- main --------------------------------------------------------------------------------------------------------


def machine_facts() -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return [
        f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"platform: {platform.platform()}  Python {platform.python_version()}",
        f"cpu: {cpu}  ({os.cpu_count()} logical CPUs)",
        f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=5, help="runs per framework and N (median reported)")
    args = parser.parse_args()
    repeat = max(1, args.repeat)

    print("# bench_loop_frameworks")
    for line in machine_facts():
        print(f"# {line}")
    with tempfile.TemporaryDirectory() as tmp:
        frameworks: list[Framework] = [bearagent_framework(Path(tmp))]
        for name, package, factory in (
            ("pydantic-ai", "pydantic-ai-slim", pydantic_ai_framework),
            ("openai-agents", "openai-agents", openai_agents_framework),
        ):
            try:
                frameworks.append(factory())
            except ImportError as exc:
                print(
                    f"# SKIP {name}: not installed ({exc}); install the bench group: "
                    f"`uv sync --group bench` or `uv run --group bench python {sys.argv[0]}` ({package})"
                )
        for fw in frameworks:
            print(f"# {fw.name} {fw.version}: {fw.notes}")
            fw.run_once(5)  # warm up imports and caches (and check the adapter works)
        print(f"# N tool-call turns + 1 final turn; median of {repeat} runs; per step = run / (N + 1)")
        print()

        medians: dict[tuple[str, int], float] = {}
        best: dict[tuple[str, int], float] = {}
        for n in SIZES:
            times: dict[str, list[float]] = {fw.name: [] for fw in frameworks}
            for _ in range(repeat):
                for fw in frameworks:
                    gc.collect()
                    times[fw.name].append(fw.run_once(n))
            for fw in frameworks:
                medians[fw.name, n] = statistics.median(times[fw.name])
                best[fw.name, n] = min(times[fw.name])

        header = f"{'framework':<24}" + "".join(f"{f'N={n} run ms':>14}{'per step ms':>13}" for n in SIZES)
        print(header + f"{'N=200/N=10':>12}")
        for fw in frameworks:
            row = f"{f'{fw.name} {fw.version}':<24}"
            for n in SIZES:
                run_ms = medians[fw.name, n] * 1000
                row += f"{run_ms:>14.1f}{run_ms / (n + 1):>13.3f}"
            ratio = (medians[fw.name, 200] / 201) / (medians[fw.name, 10] / 11)
            print(row + f"{ratio:>12.2f}")
        print()
        print("fastest run per step ms (less sensitive to load on a shared machine):")
        for fw in frameworks:
            cells = "".join(f"  N={n}: {best[fw.name, n] * 1000 / (n + 1):.3f}" for n in SIZES)
            ratio = (best[fw.name, 200] / 201) / (best[fw.name, 10] / 11)
            print(f"  {f'{fw.name} {fw.version}':<24}{cells}  N=200/N=10: {ratio:.2f}")
        print()
        bear50 = medians["BearAgent", 50] / 51 * 1000
        bear_ratio = (medians["BearAgent", 200] / 201) / (medians["BearAgent", 10] / 11)
        print(f"BearAgent N=50 per step {bear50:.3f} ms (target <= 0.3 ms): {'met' if bear50 <= 0.3 else 'MISSED'}")
        print(f"BearAgent N=200/N=10 per-step ratio {bear_ratio:.2f} (target <= 1.5): ", end="")
        print("met" if bear_ratio <= 1.5 else "MISSED")
        for fw in frameworks[1:]:
            other50 = medians[fw.name, 50] / 51 * 1000
            print(f"{fw.name} / BearAgent per step at N=50: {other50 / bear50:.1f}x")
        print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for fw in frameworks:
            fw.cleanup()


if __name__ == "__main__":
    main()

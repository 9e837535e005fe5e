"""Per-step framework cost of the agent loop (issue 7).

A run of N tool calls (a no-op tool) followed by a final answer, with the scripted provider at zero latency and the
durable event log on (SQLite WAL, synchronous=NORMAL). The figure is (run time) / (N + 1) model steps, so it holds
everything the framework does per step: context, model request, 6 events appended through the reducer, the tool
gate. Run: `uv run python benchmarks/bench_loop.py [--repeat 5]`.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bearagent.domain._base import JsonMapping
from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.ids import ToolCallId, Uuid4IdGenerator
from bearagent.domain.models import ToolDescriptor
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.ports import SystemClock, ToolContext
from bearagent.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from bearagent.runtime.loop import AgentLoop
from bearagent.runtime.plan import AgentPlan, BoundTool, RunSpec
from bearagent.store.sqlite import SqliteEventStore
from bearagent.tools.gate import ToolGate
from bearagent.tools.policy import ToolPolicy

NOOP_SPEC = ToolSpec(
    name="Noop",
    description="Does nothing.",
    input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
)


class NoopTool:
    @property
    def spec(self) -> ToolSpec:
        return NOOP_SPEC

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        return arguments

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return ToolResult(
            tool_call_id=context.tool_call_id or ToolCallId.new(), tool_name="Noop", status="succeeded", content="ok"
        )


def script(n: int) -> Script:
    usage = TokenUsage(input_tokens=10, output_tokens=5)
    turns = [
        ScriptedTurn(line=i + 1, tool_calls=(ScriptedToolCall(name="Noop", arguments={"n": i}),), usage=usage)
        for i in range(n)
    ]
    turns.append(ScriptedTurn(line=n + 1, text="done", usage=usage))
    return Script(path=Path("bench.yaml"), turns=tuple(turns))


def run_once(n: int, store: SqliteEventStore, root: Path) -> float:
    tool = NoopTool()
    plan = AgentPlan(
        agent_name="bench",
        system_prompt="You are a benchmark.",
        model_ref="workspace/scripted",
        model_name="scripted",
        provider=ScriptedProvider(script(n)),
        gate=ToolGate({"Noop": tool}, policy=ToolPolicy(root=root)),
        tools={
            "Noop": BoundTool(
                projected_name="Noop",
                internal_name="Noop",
                source="native",
                descriptor=ToolDescriptor(
                    name="Noop", description="Does nothing.", input_schema=NOOP_SPEC.input_schema
                ),
            )
        },
    )
    budgets = BudgetLimits(max_model_iterations=10_000, max_tool_calls=10_000, max_tokens=10**9)
    loop = AgentLoop(store=store, clock=SystemClock(), ids=Uuid4IdGenerator())
    spec = RunSpec(goal="benchmark", workspace_root=root, budgets=budgets)

    async def timed() -> float:
        started = time.perf_counter()
        outcome = await loop.run(spec, plan)
        elapsed = time.perf_counter() - started
        assert outcome.status == "succeeded", outcome.error
        return elapsed

    return asyncio.run(timed())  # the event loop's start and teardown are not the framework's per-step cost


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"# bench_loop  {datetime.now(UTC):%Y-%m-%d}  {platform.machine()}  Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = SqliteEventStore(root / "state.db", durability="normal")
        run_once(5, store, root)  # warm up imports and caches
        per_step: dict[int, float] = {}
        for n in (10, 50, 200):
            times = [run_once(n, store, root) for _ in range(args.repeat)]
            per_step[n] = statistics.median(times) / (n + 1) * 1000
            print(f"N={n:<4} median run {statistics.median(times) * 1000:8.1f} ms   per step {per_step[n]:.3f} ms")
        print(f"N=200 / N=10 per-step ratio: {per_step[200] / per_step[10]:.2f}  (target <= 1.5)")
        print(f"N=50 per step: {per_step[50]:.3f} ms  (target <= 0.3 ms)")
        store.close()


if __name__ == "__main__":
    main()

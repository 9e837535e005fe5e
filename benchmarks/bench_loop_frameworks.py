"""Per-step cost of an agent loop through BearAgent's public API, beside pydantic-ai, openai-agents, simonw/llm and
a hand-written loop that commits every step to SQLite (issue 22; issue 7 measured the internal loop only).

The workload, the same in every framework: N turns in which a zero-latency model written in Python calls one tool
`lookup(i)` (-> "value i"), then one final text turn ("done"); N in 0, 10, 50 and 200. The figure is (run time) /
(N + 1) model steps; the median over `--repeat` runs, interleaved (for each N, each round runs every framework once),
so load on a shared machine falls on all of them alike. The N=0 run (one model call, the final text) is the fixed
cost of a run. Every async framework runs on one long-lived event loop (its start is in no figure).

- BearAgent: `open_workspace` on a workspace made for the benchmark (one agent, `tools: [lookup]`, a model entry of
  provider `bench-fake`), with the plugin `benchmarks/bench_fake_plugin.py` registered in-process through
  `bearagent.plugin.PluginHost`: the fake model (`register_models`) and the tool (`register_tools`, a `BaseTool`)
  are contributed exactly as a third-party plugin's. Each run is `await ws.run(prompt)` in a new session: session,
  plan, hooks, the tool gate, and the durable SQLite event log (WAL, synchronous=NORMAL) are all in the figure.
- pydantic-ai: `Agent` + `FunctionModel` (async) + an async plain tool. In-memory history, no log.
- openai-agents: `Agent` + `Runner.run` with a custom `Model` and an async `@function_tool`; tracing disabled.
  In-memory history, no log.
- simonw/llm: a `llm.Model` subclass that adds a `ToolCall` per turn, driven by `conversation.chain(...,
  tools=[lookup])`. Nothing logged (the CLI's log is not used by the Python API unless asked).
- hand-written: a `for` loop over the same fake model and tool, the history in a list, and one SQLite transaction
  per step (the model's turn and the tool's result as two rows, JSON; WAL, synchronous=NORMAL), like BearAgent's
  durability setting: the floor of "every step durable before the next".

Every run is checked after it is timed: N tool executions counted inside the tool, N + 1 model calls, the final
text; for BearAgent also the run's status and the N succeeded tool calls in its log; for the hand-written loop the
rows it committed. A mismatch stops the script. A peer that is not installed is reported on a `# MISSING` line and
left out; the others are measured.

Run (peers from the `bench` dependency group, `llm` beside it):

    uv run --group bench --with llm==0.36 python benchmarks/bench_loop_frameworks.py --repeat 7
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fake_plugin as fake

SIZES = (0, 10, 50, 200)
FINAL_TEXT = fake.FINAL_TEXT
PROMPT = "benchmark"
_T = TypeVar("_T")


LAST_CPU = [0.0]
"""The CPU time (`time.process_time`: every thread of this process) of the last timed run, set beside its wall time:
on a loaded machine the CPU figures move far less than the wall ones (issue 37 compares both)."""


class BenchError(Exception):
    """A framework did not run the loop it was asked to run (the figures would be meaningless)."""


@dataclass
class Counter:
    tool_calls: int = 0
    model_calls: int = 0
    target: int = 0

    def reset(self, target: int) -> None:
        self.tool_calls = self.model_calls = 0
        self.target = target


@dataclass
class Framework:
    name: str
    version: str
    run_once: Callable[[int], float]
    notes: str
    cleanup: Callable[[], None] = field(default=lambda: None)


class Loop:
    """The one event loop every async framework runs on; `timed` measures only the awaited work."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return self.runner.run(coro)

    def timed(self, make: Callable[[], Coroutine[Any, Any, _T]]) -> tuple[float, _T]:
        async def go() -> tuple[float, _T]:
            started, cpu = time.perf_counter(), time.process_time()
            result = await make()
            elapsed = time.perf_counter() - started
            LAST_CPU[0] = time.process_time() - cpu
            return elapsed, result

        return self.runner.run(go())

    def close(self) -> None:
        self.runner.close()


def _check(framework: str, n: int, counter: Counter | fake.FakeState, final: object) -> None:
    if counter.tool_calls != n or counter.model_calls != n + 1 or final != FINAL_TEXT:
        raise BenchError(
            f"{framework} at N={n}: expected {n} tool calls, {n + 1} model calls and final text {FINAL_TEXT!r}, got "
            f"{counter.tool_calls} tool calls, {counter.model_calls} model calls and {final!r}; the benchmark loop "
            "is not doing what it measures: fix its adapter in benchmarks/bench_loop_frameworks.py"
        )


# --- BearAgent, through the public API ---------------------------------------------------------------------------


def bearagent_framework(tmp: Path, loop: Loop) -> Framework:
    from bearagent import open_workspace
    from bearagent.plugin import PluginHost

    root = tmp / "bearagent"
    root.mkdir()
    fake.make_workspace(root, tmp / "bearagent-home")
    env = {**os.environ, "BEARAGENT_HOME": str(tmp / "bearagent-home"), "BEARAGENT_LOAD_PLUGINS": ""}
    host = PluginHost()
    host.register(fake, "bench-fake", version="0")
    ws = open_workspace(root, env=env, plugins=host)

    def run_once(n: int) -> float:
        fake.STATE.reset(n)
        elapsed, result = loop.timed(lambda: ws.run(PROMPT))
        if result.status != "succeeded":
            raise BenchError(f"BearAgent at N={n}: the run ended {result.status}: {result.error}")
        tools = [a for a in ws.activities(str(result.run_id)) if a.kind == "tool_call" and a.status == "succeeded"]
        if len(tools) != n:
            raise BenchError(f"BearAgent at N={n}: {len(tools)} succeeded tool calls in the log, expected {n}")
        _check("BearAgent", n, fake.STATE, result.final)
        return elapsed

    return Framework(
        name="BearAgent",
        version=importlib.metadata.version("bearagent"),
        run_once=run_once,
        notes="open_workspace + ws.run, plugin model and tool, durable SQLite log (WAL, synchronous=NORMAL)",
        cleanup=lambda: loop.run(ws.aclose()),
    )


# --- hand-written loop, one SQLite commit per step ---------------------------------------------------------------


def hand_framework(tmp: Path, loop: Loop | None = None) -> Framework:
    """The floor: with `loop`, the same loop as a coroutine whose commits run on one worker thread
    (`run_in_executor`), as an async runtime that must not block its event loop on SQLite does."""
    name = "hand-async+SQLite" if loop else "hand+SQLite"
    counter = Counter()
    conn = sqlite3.connect(tmp / f"{name}.db", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, prompt TEXT, status TEXT, final TEXT)")
    conn.execute("CREATE TABLE steps (run_id INTEGER, seq INTEGER, kind TEXT, body TEXT, PRIMARY KEY (run_id, seq))")

    def model(messages: list[dict[str, object]]) -> dict[str, object]:
        i = counter.model_calls
        counter.model_calls += 1
        if i < counter.target:
            return {"role": "assistant", "tool_call": {"id": f"call_{i}", "name": "lookup", "arguments": {"i": i}}}
        return {"role": "assistant", "text": FINAL_TEXT}

    def lookup(i: int) -> str:
        counter.tool_calls += 1
        return f"value {i}"

    tools: dict[str, Callable[..., str]] = {"lookup": lookup}

    def start() -> int:
        return cast(int, conn.execute("INSERT INTO runs (prompt, status) VALUES (?, 'running')", (PROMPT,)).lastrowid)

    def commit_step(run_id: int, seq: int, turn: dict[str, object], result: dict[str, object]) -> None:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO steps VALUES (?, ?, ?, ?)",
            ((run_id, seq + 1, "model", json.dumps(turn)), (run_id, seq + 2, "tool", json.dumps(result))),
        )
        conn.execute("COMMIT")

    def commit_final(run_id: int, seq: int, turn: dict[str, object]) -> None:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO steps VALUES (?, ?, 'model', ?)", (run_id, seq + 1, json.dumps(turn)))
        conn.execute("UPDATE runs SET status = 'succeeded', final = ? WHERE run_id = ?", (turn["text"], run_id))
        conn.execute("COMMIT")

    def step(messages: list[dict[str, object]]) -> tuple[dict[str, object], dict[str, object] | None]:
        turn = model(messages)
        messages.append(turn)
        call = cast(dict[str, Any] | None, turn.get("tool_call"))
        if call is None:
            return turn, None
        result: dict[str, object] = {
            "role": "tool",
            "id": call["id"],
            "content": tools[call["name"]](**call["arguments"]),
        }
        messages.append(result)
        return turn, result

    def run_loop() -> tuple[int, str]:
        run_id = start()
        messages: list[dict[str, object]] = [{"role": "user", "text": PROMPT}]
        seq = 0
        while True:
            turn, result = step(messages)
            if result is None:
                commit_final(run_id, seq, turn)
                return run_id, cast(str, turn["text"])
            commit_step(run_id, seq, turn, result)
            seq += 2

    async def run_loop_async() -> tuple[int, str]:
        running = asyncio.get_running_loop()
        run_id = await running.run_in_executor(executor, start)
        messages: list[dict[str, object]] = [{"role": "user", "text": PROMPT}]
        seq = 0
        while True:
            turn, result = step(messages)
            if result is None:
                await running.run_in_executor(executor, commit_final, run_id, seq, turn)
                return run_id, cast(str, turn["text"])
            await running.run_in_executor(executor, commit_step, run_id, seq, turn, result)
            seq += 2

    executor = ThreadPoolExecutor(max_workers=1)

    def run_once(n: int) -> float:
        counter.reset(n)
        if loop is None:
            started, cpu = time.perf_counter(), time.process_time()
            run_id, final = run_loop()
            elapsed = time.perf_counter() - started
            LAST_CPU[0] = time.process_time() - cpu
        else:
            elapsed, (run_id, final) = loop.timed(run_loop_async)
        rows = cast(tuple[int], conn.execute("SELECT count(*) FROM steps WHERE run_id = ?", (run_id,)).fetchone())[0]
        if rows != 2 * n + 1:
            raise BenchError(f"{name} at N={n}: {rows} rows committed, expected {2 * n + 1}")
        _check(name, n, counter, final)
        return elapsed

    def cleanup() -> None:
        executor.shutdown()
        conn.close()

    return Framework(
        name=name,
        version=f"sqlite {sqlite3.sqlite_version}",
        run_once=run_once,
        notes="a loop, one SQLite transaction per step (WAL, synchronous=NORMAL)"
        + (", as a coroutine whose commits run on a worker thread" if loop else ", all in one thread"),
        cleanup=cleanup,
    )


# --- pydantic-ai -------------------------------------------------------------------------------------------------


def pydantic_ai_framework(loop: Loop) -> Framework:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    counter = Counter()

    # async on purpose: FunctionModel runs a plain `def` in a worker thread, which would add thread hops.
    async def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        i = counter.model_calls
        counter.model_calls += 1
        if i < counter.target:
            return ModelResponse(parts=[ToolCallPart(tool_name="lookup", args={"i": i}, tool_call_id=f"call_{i}")])
        return ModelResponse(parts=[TextPart(content=FINAL_TEXT)])

    async def lookup(i: int) -> str:
        """Look up the value of item i."""
        counter.tool_calls += 1
        return f"value {i}"

    agent = Agent(FunctionModel(scripted), instructions="You are a benchmark.", tools=[lookup])

    def run_once(n: int) -> float:
        counter.reset(n)
        limits = UsageLimits(request_limit=n + 5)
        elapsed, result = loop.timed(lambda: agent.run(PROMPT, usage_limits=limits))
        _check("pydantic-ai", n, counter, result.output)
        return elapsed

    return Framework(
        name="pydantic-ai",
        version=importlib.metadata.version("pydantic-ai-slim"),
        run_once=run_once,
        notes="FunctionModel, in-memory history, no log",
    )


# --- openai-agents -----------------------------------------------------------------------------------------------


def openai_agents_framework(loop: Loop) -> Framework:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    counter = Counter()

    class ScriptedModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            i = counter.model_calls
            counter.model_calls += 1
            usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
            if i < counter.target:
                call = ResponseFunctionToolCall(
                    type="function_call", name="lookup", arguments=f'{{"i": {i}}}', call_id=f"call_{i}", id=f"fc_{i}"
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
    async def lookup(i: int) -> str:
        """Look up the value of item i."""
        counter.tool_calls += 1
        return f"value {i}"

    agent = Agent(name="bench", instructions="You are a benchmark.", model=ScriptedModel(), tools=[lookup])

    def run_once(n: int) -> float:
        counter.reset(n)
        elapsed, result = loop.timed(lambda: Runner.run(agent, PROMPT, max_turns=n + 5))
        _check("openai-agents", n, counter, cast(object, result.final_output))
        return elapsed

    return Framework(
        name="openai-agents",
        version=importlib.metadata.version("openai-agents"),
        run_once=run_once,
        notes="custom Model, tracing disabled, in-memory history, no log",
    )


# --- simonw/llm ----------------------------------------------------------------------------------------------------


def llm_framework() -> Framework:
    import llm

    counter = Counter()

    class FakeLlm(llm.Model):
        model_id = "bench-fake"
        supports_tools = True

        def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
            i = counter.model_calls
            counter.model_calls += 1
            if i < counter.target:
                response.add_tool_call(llm.ToolCall(name="lookup", arguments={"i": i}, tool_call_id=f"call_{i}"))
                return
            yield FINAL_TEXT

    def lookup(i: int) -> str:
        """Look up the value of item i."""
        counter.tool_calls += 1
        return f"value {i}"

    model = FakeLlm()

    def run_once(n: int) -> float:
        counter.reset(n)
        started, cpu = time.perf_counter(), time.process_time()
        text = model.conversation(chain_limit=n + 5).chain(PROMPT, tools=[lookup]).text()
        elapsed = time.perf_counter() - started
        LAST_CPU[0] = time.process_time() - cpu
        _check("llm", n, counter, text)
        return elapsed

    return Framework(
        name="llm",
        version=importlib.metadata.version("llm"),
        run_once=run_once,
        notes="llm.Model subclass, conversation.chain(tools=[lookup]), nothing logged",
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
    load = os.getloadavg()
    return [
        f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC",
        f"platform: {platform.platform()}  Python {platform.python_version()}",
        f"cpu: {cpu}  ({os.cpu_count()} logical CPUs)",
        f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    ]


def peers(tmp: Path, loop: Loop) -> list[Framework]:
    found: list[Framework] = []
    makers: tuple[tuple[str, str, Callable[[], Framework]], ...] = (
        ("pydantic-ai", "pydantic-ai-slim", lambda: pydantic_ai_framework(loop)),
        ("openai-agents", "openai-agents", lambda: openai_agents_framework(loop)),
        ("llm", "llm", llm_framework),
    )
    for name, package, make in makers:
        try:
            found.append(make())
        except ImportError as exc:
            print(
                f"# MISSING {name}: the package {package!r} is not installed ({exc}); it is left out of this run. "
                f"Install it: `uv run --group bench --with llm==0.36 python {sys.argv[0]}`"
            )
    return found


def per_step(seconds: float, n: int) -> float:
    return seconds * 1000 / (n + 1)


def report(
    frameworks: list[Framework],
    sizes: tuple[int, ...],
    medians: dict[tuple[str, int], float],
    fastest: dict[tuple[str, int], float],
    cpu_medians: dict[tuple[str, int], float],
) -> None:
    """The tables, the ratios at N=50 and the targets of issues 22 and 37 (those whose sizes were run)."""
    names = [fw.name for fw in frameworks]
    has_ratio = 10 in sizes and 200 in sizes
    print(
        f"{'per step, ms (median)':<32}"
        + "".join(f"{f'N={n}':>10}" for n in sizes)
        + (f"{'N200/N10':>10}" if has_ratio else "")
    )
    for fw in frameworks:
        cells = "".join(f"{per_step(medians[fw.name, n], n):>10.3f}" for n in sizes)
        if has_ratio:
            cells += f"{per_step(medians[fw.name, 200], 200) / per_step(medians[fw.name, 10], 10):>10.2f}"
        print(f"{f'{fw.name} {fw.version}':<32}{cells}")
    print()
    print(f"{'per step, ms (fastest)':<32}" + "".join(f"{f'N={n}':>10}" for n in sizes))
    for fw in frameworks:
        cells = "".join(f"{per_step(fastest[fw.name, n], n):>10.3f}" for n in sizes)
        print(f"{f'{fw.name} {fw.version}':<32}{cells}")
    print()
    print(f"{'per step, ms CPU (median)':<32}" + "".join(f"{f'N={n}':>10}" for n in sizes))
    for fw in frameworks:
        cells = "".join(f"{per_step(cpu_medians[fw.name, n], n):>10.3f}" for n in sizes)
        print(f"{f'{fw.name} {fw.version}':<32}{cells}")
    print()
    if "BearAgent" not in names:
        return
    bear = {n: per_step(medians["BearAgent", n], n) for n in sizes}
    print("targets (issue 22):")
    if 50 in sizes:
        print(f"  ratios at N=50 (per step, medians): BearAgent = {bear[50]:.3f} ms")
        for fw in frameworks[1:]:
            other = per_step(medians[fw.name, 50], 50)
            print(f"    {fw.name:<22} {other:8.3f} ms   BearAgent / {fw.name} = {bear[50] / other:6.2f}")
        for hand_name in ("hand+SQLite", "hand-async+SQLite"):
            if hand_name in names:
                hand = per_step(medians[hand_name, 50], 50)
                verdict = "met" if bear[50] <= 3 * hand else "MISSED"
                print(f"  N=50 per step <= 3x {hand_name}: {bear[50] / hand:.2f}x  {verdict}")
        if "pydantic-ai" in names:
            pyd = per_step(medians["pydantic-ai", 50], 50)
            verdict = "met" if pyd >= 10 * bear[50] else "MISSED"
            print(f"  N=50 per step >= 10x cheaper than pydantic-ai: {pyd / bear[50]:.2f}x  {verdict}")
            cpu_ratio = cpu_medians["pydantic-ai", 50] / cpu_medians["BearAgent", 50]
            verdict = "met" if pyd >= 5 * bear[50] else "MISSED"
            print(
                f"  N=50 per step >= 5x cheaper than pydantic-ai (issue 37): {pyd / bear[50]:.2f}x  {verdict}"
                f" (by CPU time: {cpu_ratio:.2f}x)"
            )
    if has_ratio:
        ratio = bear[200] / bear[10]
        print(f"  N=200 per step within 1.2x of N=10: {ratio:.2f}x  {'met' if ratio <= 1.2 else 'MISSED'}")
    if 0 in sizes:
        fixed = medians["BearAgent", 0] * 1000
        print(f"  fixed cost of a run <= 5 ms: N=0 run {fixed:.2f} ms  {'met' if fixed <= 5 else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=7, help="runs per framework and N (the median is reported)")
    parser.add_argument("--only", default="", help="comma list of framework names to run (default: all)")
    parser.add_argument("--sizes", default="", help="comma list of N to run instead of 0,10,50,200 (partial report)")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    sizes = tuple(int(n) for n in args.sizes.split(",")) if args.sizes else SIZES

    print("# bench_loop_frameworks")
    for line in machine_facts():
        print(f"# {line}")
    loop = Loop()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        frameworks = [bearagent_framework(tmp, loop), hand_framework(tmp), hand_framework(tmp, loop), *peers(tmp, loop)]
        if args.only:
            wanted = set(args.only.split(","))
            frameworks = [fw for fw in frameworks if fw.name in wanted]
        for fw in frameworks:
            print(f"# {fw.name} {fw.version}: {fw.notes}")
            for _ in range(3):
                fw.run_once(5)  # warm up imports and caches, and check the adapter works
        # every framework's modules are loaded now: keep them out of the collector's older generations, so that a
        # framework allocating a lot does not pay for the others' heaps in its full collections
        gc.collect()
        gc.freeze()
        print(f"# N tool-call turns + 1 final turn; median of {repeat} interleaved runs; per step = run / (N + 1)")
        print()

        medians: dict[tuple[str, int], float] = {}
        fastest: dict[tuple[str, int], float] = {}
        cpu_medians: dict[tuple[str, int], float] = {}
        for n in sizes:
            times: dict[str, list[float]] = {fw.name: [] for fw in frameworks}
            cpu: dict[str, list[float]] = {fw.name: [] for fw in frameworks}
            for _ in range(repeat):
                for fw in frameworks:
                    gc.collect()
                    times[fw.name].append(fw.run_once(n))
                    cpu[fw.name].append(LAST_CPU[0])
            for fw in frameworks:
                medians[fw.name, n] = statistics.median(times[fw.name])
                fastest[fw.name, n] = min(times[fw.name])
                cpu_medians[fw.name, n] = statistics.median(cpu[fw.name])
        report(frameworks, sizes, medians, fastest, cpu_medians)
        load = os.getloadavg()
        print(f"# load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        for fw in frameworks:
            fw.cleanup()
    loop.close()


if __name__ == "__main__":
    main()

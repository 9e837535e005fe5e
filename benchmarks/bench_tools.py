"""Tool benchmarks: gate overhead per call; Grep vs GNU `grep -rn`; Glob vs `find` on a generated 20,000-file tree;
Grep's regex engines side by side; Grep's time limit on a catastrophic pattern.

Run: uv run python benchmarks/bench_tools.py [--files 20000] [--file-kb 10] [--skip-engines]
The tree is generated under /tmp and deleted afterwards. Every comparison interleaves the tool and its baseline in
the same process run, warm cache, and reports the fastest round and the median pairwise ratio.

The engine comparison always measures `regex` (Grep's engine) and Python's `re` (its engine before); it adds RE2
when `google-re2` is importable and ripgrep when `rg` is on PATH. Neither is a project dependency; to include them:
    uv run --with google-re2 --with ripgrep==14.1.0 python benchmarks/bench_tools.py
(ripgrep 14.1.0 is the newest release with Linux wheels; later ones build from source with cargo.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.ports import ToolContext
from bearagent.tools import grep as grep_module
from bearagent.tools.base import NativeTool
from bearagent.tools.builtin import native_tools
from bearagent.tools.gate import ToolGate, tools_by_name
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ToolPolicy

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
]


class NoOp(NativeTool):
    def __init__(self) -> None:
        super().__init__(
            ToolSpec(
                name="NoOp",
                description="does nothing",
                input_schema=frozen_json(
                    {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}, "note": {"type": "string"}},
                        "required": ["x"],
                        "additionalProperties": False,
                    }
                ),
            )
        )

    def normalise(self, arguments: dict[str, JsonValue], context: ToolContext) -> Mapping[str, object]:
        return arguments

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return self.ok(context, "ok")


async def bench_gate(n: int) -> dict[str, float]:
    tool = NoOp()
    policy = ToolPolicy(rules=PermissionRules.parse(allow=["Bash(git status)"], deny=["Read(.env)"]))
    gate = ToolGate(tools_by_name([tool]), policy=policy)
    ctx = ToolContext(workspace_root=Path("/tmp"))
    request = ToolRequest(tool_call_id=ToolCallId.new(), name="NoOp", arguments=frozen_json({"x": 1, "note": "hi"}))
    ctx = ToolContext(workspace_root=Path("/tmp"), tool_call_id=request.tool_call_id)
    for _ in range(500):
        await gate.call(request, ctx)
    gate_runs: list[float] = []
    direct_runs: list[float] = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            await gate.call(request, ctx)
        gate_runs.append((time.perf_counter() - t) / n * 1e6)
        t = time.perf_counter()
        for _ in range(n):
            await tool.execute(request.arguments, ctx)
        direct_runs.append((time.perf_counter() - t) / n * 1e6)
    g, d = min(gate_runs), min(direct_runs)
    return {"gate_us": g, "direct_us": d, "overhead_us": g - d, "gate_median_us": statistics.median(gate_runs)}


def make_tree(root: Path, files: int, file_kb: int) -> int:
    rng = random.Random(42)
    per_dir = 100
    total = 0
    line_pool = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) for _ in range(2000)]
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    exts = [".py", ".txt", ".md", ".js"]
    for i in range(files):
        d = root / f"pkg{i // (per_dir * 20):02}" / f"mod{(i // per_dir) % 20:02}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        lines: list[str] = []
        size = 0
        while size < file_kb * 1024:
            line = rng.choice(line_pool)
            lines.append(line)
            size += len(line) + 1
        if i % 97 == 0:
            lines.insert(len(lines) // 2, f"found NEEDLE_42 in file {i}")
        text = "\n".join(lines) + "\n"
        (d / f"file{i:05}{exts[i % 4]}").write_text(text)
        total += len(text)
    return total


class _EngineShim:
    """Grep calls `search(data, timeout=, concurrent=)` and `finditer(...)`; engines without a timeout ignore it."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled

    def search(self, data: bytes, timeout: float | None = None, concurrent: bool | None = None) -> object:
        return self._compiled.search(data)

    def finditer(self, data: bytes, timeout: float | None = None, concurrent: bool | None = None) -> Iterator[Any]:
        return cast(Iterator[Any], self._compiled.finditer(data))


def _compiler(engine: str) -> Callable[[str, bool], Any] | None:
    """`pattern, ignore_case -> compiled` for one engine, None when it is not installed."""
    if engine == "regex":
        return None  # Grep's own `_compile`
    if engine == "re":
        return lambda pattern, ignore_case: _EngineShim(
            re.compile(pattern.encode(), re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
        )
    if engine == "re2":
        try:
            re2 = cast(Any, importlib.import_module("re2"))
        except ImportError:
            return None
        return lambda pattern, ignore_case: _EngineShim(
            re2.compile(("(?mi)" if ignore_case else "(?m)").encode() + pattern.encode())
        )
    raise ValueError(engine)


@contextlib.contextmanager
def grep_engine(engine: str) -> Generator[None]:
    """Swap the engine behind the Grep tool (everything else, walk, prefilter and output, stays Grep's)."""
    compiler = _compiler(engine)
    if compiler is None:
        yield
        return
    original = grep_module._compile  # pyright: ignore[reportPrivateUsage]
    grep_module._compile = compiler  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    try:
        yield
    finally:
        grep_module._compile = original  # pyright: ignore[reportPrivateUsage]


def engines_available() -> list[str]:
    out = ["regex", "re"]
    if _compiler("re2") is not None:
        out.append("re2")
    return out


def bench_engines_in_memory(root: Path, patterns: list[tuple[str, bool]]) -> None:
    """The engines alone over every file's bytes held in memory (no I/O, no prefilter): one search per file."""
    blobs: list[bytes] = []
    for directory, _, names in os.walk(root):
        for name in names:
            blobs.append(Path(directory, name).read_bytes())
    for pattern, ignore_case in patterns:
        row: list[str] = []
        for engine in engines_available():
            compiler = _compiler(engine)
            compiled = (
                grep_module._compile(pattern, ignore_case)  # pyright: ignore[reportPrivateUsage]
                if compiler is None
                else compiler(pattern, ignore_case)
            )
            best = float("inf")
            hits = 0
            for _ in range(3):
                t = time.perf_counter()
                hits = sum(1 for blob in blobs if compiled.search(blob, timeout=60.0, concurrent=True) is not None)
                best = min(best, time.perf_counter() - t)
            row.append(f"{engine} {best * 1000:.0f} ms ({hits} files)")
        flag = "-i " if ignore_case else ""
        print(f"engine only, {len(blobs)} files in memory, {flag}{pattern!r}: " + ", ".join(row))


def bench_time_limit(deadline_s: float) -> None:
    """A catastrophic pattern over one crafted line: Grep must return its time-limit error at the deadline while the
    event loop keeps running; GNU grep and ripgrep (linear-time engines) for reference."""

    root = Path(tempfile.mkdtemp(prefix="bear-bench-redos-", dir="/tmp"))
    try:
        (root / "crafted.txt").write_text("a" * 5_000 + "!\n")
        gate = ToolGate(tools_by_name(native_tools()), policy=ToolPolicy())
        pattern = "(a|a?)+$"

        async def timed() -> tuple[ToolResult, float, int]:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            task = asyncio.create_task(ticker())
            ctx = ToolContext(workspace_root=root, deadline=time.monotonic() + deadline_s)
            req = ToolRequest(tool_call_id=ToolCallId.new(), name="Grep", arguments=frozen_json({"pattern": pattern}))
            t = time.perf_counter()
            result = await gate.call(req, ctx)
            took = time.perf_counter() - t
            task.cancel()
            return result, took, ticks

        result, took, ticks = asyncio.run(timed())
        code = result.error.code if result.error is not None else result.status
        print(
            f"time limit: Grep {pattern!r} over a 5,000-char crafted line, deadline {deadline_s:g} s: returned "
            f"{code} after {took:.2f} s; event loop ticked {ticks} times (10 ms ticker, {took / 0.01:.0f} possible)"
        )
        for cmd in (["grep", "-rnE", pattern, "."], ["rg", "-n", "--no-require-git", pattern, "."]):
            if shutil.which(cmd[0]) is None:
                continue
            t = time.perf_counter()
            subprocess.run(cmd, cwd=root, capture_output=True, check=False)
            print(
                f"time limit: `{' '.join(cmd[:2])} {pattern}` on the same file: {(time.perf_counter() - t) * 1000:.0f} ms"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--file-kb", type=int, default=10)
    parser.add_argument("--gate-calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--engine-rounds", type=int, default=3)
    parser.add_argument("--skip-engines", action="store_true", help="Skip the engine comparison and time limit.")
    args = parser.parse_args()

    gate_figures = asyncio.run(bench_gate(args.gate_calls))
    print(
        f"gate: {gate_figures['gate_us']:.1f} us/call through the gate, {gate_figures['direct_us']:.1f} us direct "
        f"-> overhead {gate_figures['overhead_us']:.1f} us (target <= 50)"
    )

    root = Path(tempfile.mkdtemp(prefix="bear-bench-tools-", dir="/tmp"))
    try:
        t = time.perf_counter()
        size = make_tree(root, args.files, args.file_kb)
        print(f"tree: {args.files} files, {size / 1e6:.0f} MB, generated in {time.perf_counter() - t:.1f} s at {root}")
        gate = ToolGate(tools_by_name(native_tools()), policy=ToolPolicy())
        ctx = ToolContext(workspace_root=root)

        # one event loop for every call, as in a run (asyncio.run per call would time loop start-up too)
        loop = asyncio.new_event_loop()

        def tool(name: str, arguments: dict[str, object]) -> ToolResult:
            req = ToolRequest(tool_call_id=ToolCallId.new(), name=name, arguments=frozen_json(arguments))
            result = loop.run_until_complete(gate.call(req, ctx))
            assert result.status == "succeeded", result.content
            return result

        grep_args: dict[str, object] = {"pattern": "NEEDLE_42", "output_mode": "content", "head_limit": 5000}
        grep_result = tool("Grep", grep_args)
        gnu = subprocess.run(["grep", "-rn", "NEEDLE_42", "."], cwd=root, capture_output=True, text=True, check=True)
        assert len(grep_result.content.splitlines()) == len(gnu.stdout.splitlines()), "Grep and grep disagree"
        regex_args: dict[str, object] = {"pattern": r"NEEDLE_\d+ in", "output_mode": "content", "head_limit": 5000}
        glob_result = tool("Glob", {"pattern": "**/*.py"})
        assert glob_result.data is not None
        find = subprocess.run(
            ["find", ".", "-name", "*.py", "-type", "f"], cwd=root, capture_output=True, text=True, check=True
        )
        assert glob_result.data["num_files"] == len(find.stdout.splitlines()), "Glob and find disagree"

        def run(cmd: list[str]) -> None:
            subprocess.run(cmd, cwd=root, capture_output=True, check=True)

        cases: list[tuple[str, str, dict[str, object], list[str], float]] = [
            ("grep literal", "Grep", grep_args, ["grep", "-rn", "NEEDLE_42", "."], 3.0),
            ("grep regex", "Grep", regex_args, ["grep", "-rnE", r"NEEDLE_[0-9]+ in", "."], 3.0),
            ("glob **/*.py", "Glob", {"pattern": "**/*.py"}, ["find", ".", "-name", "*.py", "-type", "f"], 2.0),
            # the same work as Glob (mtime of every match, newest 100): for context, not a target
            (
                "glob vs find+mtime sort",
                "Glob",
                {"pattern": "**/*.py"},
                ["bash", "-c", "find . -name '*.py' -type f -printf '%T@ %p\\n' | sort -rn | head -100"],
                2.0,
            ),
        ]
        for label, name, arguments, cmd, target in cases:
            # interleave tool and baseline so both see the same machine load; report min times and median ratio
            ours: list[float] = []
            theirs: list[float] = []
            for _ in range(args.rounds):
                t = time.perf_counter()
                tool(name, arguments)
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                run(cmd)
                theirs.append(time.perf_counter() - t)
            ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
            print(
                f"{label}: {name} {min(ours) * 1000:.0f} ms vs `{' '.join(cmd[:2])}` {min(theirs) * 1000:.0f} ms "
                f"-> min ratio {min(ours) / min(theirs):.2f}x, median pairwise ratio {ratio:.2f}x (target <= {target:g}x)"
            )
        if not args.skip_engines:
            bench_grep_engines(root, tool, args.engine_rounds)
        loop.close()
        if not args.skip_engines:
            bench_engines_in_memory(root, [(case[0], case[1]) for case in ENGINE_CASES])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not args.skip_engines:
        bench_time_limit(2.0)


ENGINE_CASES: list[tuple[str, bool, list[str]]] = [
    # Grep pattern, -i, GNU grep arguments (before the '.')
    ("NEEDLE_42", False, ["-rn", "NEEDLE_42"]),
    (r"NEEDLE_\d+ in", False, ["-rnE", "NEEDLE_[0-9]+ in"]),
    (r"\w+_\d+", False, ["-rnE", r"\w+_[0-9]+"]),  # no literal of 3+ characters: every file is searched
    ("needle_42", True, ["-rni", "needle_42"]),
    (r"^found \w+ in file 1\d*$", False, ["-rnE", r"^found \w+ in file 1[0-9]*$"]),
]


def bench_grep_engines(root: Path, tool: Callable[[str, dict[str, object]], ToolResult], rounds: int) -> None:
    """The whole Grep tool with each engine (same walk, prefilter and output) vs GNU grep and ripgrep."""
    rg = shutil.which("rg")
    for pattern, ignore_case, grep_args in ENGINE_CASES:
        arguments: dict[str, object] = {"pattern": pattern, "output_mode": "content", "head_limit": 5000}
        if ignore_case:
            arguments["-i"] = True
        gnu_cmd = ["grep", *grep_args, "."]
        gnu = subprocess.run(gnu_cmd, cwd=root, capture_output=True, text=True, check=False)
        expected = len(gnu.stdout.splitlines())
        rg_cmd = [rg, "-n", "--no-require-git", *(["-i"] if ignore_case else []), pattern, "."] if rg else None
        timings: dict[str, list[float]] = {"grep": []}
        engines = engines_available()
        for engine in engines:
            with grep_engine(engine):
                try:
                    got = len(tool("Grep", arguments).content.splitlines())
                except Exception as exc:  # an engine that cannot compile the pattern
                    print(f"  {engine} cannot run {pattern!r}: {type(exc).__name__}")
                    continue
            assert got == expected, f"Grep with {engine} found {got} lines, grep {expected}, for {pattern!r}"
            timings[engine] = []
        if rg_cmd is not None:
            found = subprocess.run(rg_cmd, cwd=root, capture_output=True, text=True, check=False)
            assert len(found.stdout.splitlines()) == expected, f"rg disagrees for {pattern!r}"
            timings["rg"] = []
        for _ in range(rounds):
            for name in timings:
                t = time.perf_counter()
                if name == "grep":
                    subprocess.run(gnu_cmd, cwd=root, capture_output=True, check=False)
                elif name == "rg":
                    assert rg_cmd is not None
                    subprocess.run(rg_cmd, cwd=root, capture_output=True, check=False)
                else:
                    with grep_engine(name):
                        tool("Grep", arguments)
                timings[name].append(time.perf_counter() - t)
        base = timings["grep"]
        parts = [f"grep {min(base) * 1000:.0f} ms"]
        for name, runs in timings.items():
            if name == "grep":
                continue
            ratio = statistics.median(o / b for o, b in zip(runs, base, strict=True))
            label = f"Grep[{name}]" if name != "rg" else "rg"
            parts.append(f"{label} {min(runs) * 1000:.0f} ms ({ratio:.2f}x)")
        print(f"engines, {'-i ' if ignore_case else ''}{pattern!r}, {expected} lines: " + ", ".join(parts))


if __name__ == "__main__":
    main()

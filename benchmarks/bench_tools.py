"""Tool benchmarks: gate overhead per call; Grep vs GNU `grep -rn`; Glob vs `find` on a generated 20,000-file tree.

Run: uv run python benchmarks/bench_tools.py [--files 20000] [--file-kb 10]
The tree is generated under /tmp and deleted afterwards. Every comparison runs the baseline in the same process run,
warm cache, best of 3.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from bearagent.domain._base import JsonMapping, JsonValue, frozen_json
from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec
from bearagent.ports import ToolContext
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--file-kb", type=int, default=10)
    parser.add_argument("--gate-calls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
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
        loop.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What the Bash sandbox costs per call (issue 14).

    uv run python benchmarks/bench_sandbox.py [--runs 50] [--command true]

Times one `Bash` tool call (`BashTool.execute`, the whole call: spawn, wait, drain, clean up) in a throwaway git
workspace with a `.bearagent/` dir, three ways in the same run, interleaved so that load on the machine hits all
three alike:

1. `plain`: the Bash tool starting `/bin/bash -c CMD` directly, as it did before the sandbox (same capture, same
   clean-up; only `shell_launch` is replaced): the floor;
2. `off`: the Bash tool with `sandbox: off` (the command runs under the subreaper wrapper, `_reaper.py`);
3. `sandboxed`: the Bash tool in the default sandbox (bubblewrap, workspace-write, network deny).

Prints the median and p90 of N calls for each, and the sandbox's cost over `plain` (target: <= 15 ms). The probe
runs once before timing (it is cached per process in real runs too).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

import bearagent.sandbox.launch as launch_module
from bearagent.domain._base import JsonValue, frozen_json
from bearagent.ports import ToolContext
from bearagent.sandbox.launch import ShellLaunch
from bearagent.sandbox.probe import probe
from bearagent.sandbox.settings import SandboxSettings
from bearagent.tools.bash import BashTool


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _bare_launch(shell_argv: Sequence[str], settings: Mapping[str, object], root: Path) -> ShellLaunch:
    return ShellLaunch(argv=tuple(shell_argv), env=dict(os.environ), status=probe(SandboxSettings(mode="off")))


def tool_call(
    root: Path, command: str, settings: dict[str, JsonValue], *, bare: bool = False
) -> Callable[[], Awaitable[None]]:
    tool = BashTool()
    context = ToolContext(workspace_root=root, settings=settings)
    arguments = frozen_json({"command": command})

    async def call() -> None:
        original = launch_module.shell_launch  # Bash imports it from the module at each call
        if bare:
            launch_module.shell_launch = _bare_launch
        try:
            result = await tool.execute(arguments, context)
        finally:
            launch_module.shell_launch = original
        assert result.status == "succeeded", result.content

    return call


async def measure(runs: int, command: str) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        root = Path(tmp) / "ws"
        (root / ".bearagent").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        variants: dict[str, Callable[[], Awaitable[None]]] = {
            "plain": tool_call(root, command, {}, bare=True),
            "off": tool_call(root, command, {"sandbox": {"mode": "off"}}),
            "sandboxed": tool_call(root, command, {}),
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for call in variants.values():  # warm up: imports, the probe, page cache
            await call()
        for _ in range(runs):
            for name, call in variants.items():
                start = time.perf_counter()
                await call()
                samples[name].append((time.perf_counter() - start) * 1000)
        return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    status = probe(SandboxSettings())
    if not status.active:
        raise SystemExit(f"the sandbox is not available here: {status.reason}")
    samples = asyncio.run(measure(args.runs, args.command))
    version = subprocess.run([str(status.program), "--version"], capture_output=True, text=True).stdout.strip()
    print(f"date {datetime.date.today()}  nproc {os.cpu_count()}  cpu {cpu_model()}  {platform.platform()}")
    print(f"{version}  command {args.command!r}  median of {args.runs} calls (interleaved)")
    medians: dict[str, float] = {}
    for name, values in samples.items():
        medians[name] = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"  {name:<10} median {medians[name]:7.2f} ms   p90 {p90:7.2f} ms   min {min(values):7.2f} ms")
    print(f"  sandbox over plain: {medians['sandboxed'] - medians['plain']:+.2f} ms (target <= 15 ms)")
    print(f"  reaper (sandbox: off) over plain: {medians['off'] - medians['plain']:+.2f} ms")


if __name__ == "__main__":
    main()

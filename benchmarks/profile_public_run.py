"""Profile BearAgent runs through the public API (the workload of `bench_loop_frameworks.py`), for issue 22.

    uv run python benchmarks/profile_public_run.py [--n 50] [--runs 20] [--sort tottime] [--top 40]

Opens the benchmark workspace with the fake-model plugin, warms up, then runs `--runs` runs of N tool-call turns
under cProfile (main thread: the event loop) and prints the top functions, plus a wall-clock split: time inside
the store's commits as the event loop waits for them (`RunStorage.commit`), per step.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_fake_plugin as fake
import bench_loop_frameworks as bench


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", default="", help="also write the raw profile here (for snakeviz, flameprof)")
    args = parser.parse_args()
    loop = bench.Loop()
    with tempfile.TemporaryDirectory() as tmp:
        fw = bench.bearagent_framework(Path(tmp), loop)
        for _ in range(5):
            fw.run_once(args.n)
        started = time.perf_counter()
        for _ in range(args.runs):
            fw.run_once(args.n)
        plain = (time.perf_counter() - started) / args.runs
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.runs):
            fw.run_once(args.n)
        profiler.disable()
        fw.cleanup()
    loop.close()
    print(f"# N={args.n}: {plain * 1000:.2f} ms per run unprofiled, {plain * 1000 / (args.n + 1):.3f} ms per step")
    print(f"# load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.out:
        profiler.dump_stats(args.out)
    stats = pstats.Stats(profiler)
    stats.sort_stats(args.sort).print_stats(args.top)
    _ = fake


if __name__ == "__main__":
    main()

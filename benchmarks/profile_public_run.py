"""Profile BearAgent runs through the public API (the workload of `bench_loop_frameworks.py`), for issue 22.

    uv run python benchmarks/profile_public_run.py [--n 50] [--runs 20] [--sort tottime] [--top 40] [--sample]

Opens the benchmark workspace with the fake-model plugin, warms up, then runs `--runs` runs of N tool-call turns
under cProfile (main thread: the event loop) and prints the top functions, plus a wall-clock split: time inside
the store's commits as the event loop waits for them (`RunStorage.commit`), per step.

`--sample` profiles with a sampler instead (issue 37): a `SIGPROF` every 0.5 ms of the process's CPU time records
the main thread's stack, and the shares of samples in which each function is on the stack (inclusive) and on top
(self) are printed. cProfile's cost per call inflates code made of many small calls several times over; the
sampler's is per sample, so its shares are the CPU's.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

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
    parser.add_argument("--sample", action="store_true", help="a CPU-time sampler instead of cProfile")
    args = parser.parse_args()
    if args.sample:
        sample(args.n, args.runs, args.top)
        return
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


def _where(frame: FrameType) -> str:
    name = frame.f_code.co_filename
    name = name.split("/src/bearagent/")[-1] if "/src/bearagent/" in name else Path(name).name
    return f"{name}:{frame.f_code.co_name}"


def sample(n: int, runs: int, top: int) -> None:
    """`--sample`: inclusive and self shares of the main thread's CPU samples over `runs` runs of N turns."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = [0]

    def on_sample(_signal: int, frame: FrameType | None) -> None:
        total[0] += 1
        seen: set[str] = set()
        if frame is not None:
            own[_where(frame)] += 1
        while frame is not None:
            where = _where(frame)
            if where not in seen:
                inclusive[where] += 1
                seen.add(where)
            frame = frame.f_back

    loop = bench.Loop()
    with tempfile.TemporaryDirectory() as tmp:
        fw = bench.bearagent_framework(Path(tmp), loop)
        for _ in range(5):
            fw.run_once(n)
        previous = signal.signal(signal.SIGPROF, on_sample)
        signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
        cpu = time.process_time()
        try:
            for _ in range(runs):
                fw.run_once(n)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            signal.signal(signal.SIGPROF, previous)
        cpu = time.process_time() - cpu
        fw.cleanup()
    loop.close()
    count = max(1, total[0])
    print(f"# N={n}: {cpu * 1000 / runs / (n + 1):.3f} ms CPU per step (sampled), {total[0]} samples")
    print(f"# load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; the benchmark's post-run check included")
    print("# inclusive share (on the stack)")
    for where, hits in inclusive.most_common(top):
        print(f"{100 * hits / count:6.1f}%  {where}")
    print("# self share (on top of the stack; C functions count for their Python caller)")
    for where, hits in own.most_common(top):
        print(f"{100 * hits / count:6.1f}%  {where}")


if __name__ == "__main__":
    main()

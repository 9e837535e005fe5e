"""Before/after of a change set on a shared, loaded machine: BearAgent's public-API run from two source trees, in
alternating fresh processes, wall time and process CPU time (both threads) per step (issue 22).

    uv run python benchmarks/ab_trees.py BEFORE/src AFTER/src [--rounds 6] [--runs 15] [--sizes 0,10,50,200]

Each round starts one process per tree (the tree first on PYTHONPATH, so it shadows the installed package); a
process warms up, then times `--runs` runs of each N with the workload of `bench_loop_frameworks.py` (its fake
plugin). CPU time moves far less with load than wall time, so the verdict compares CPU medians; the wall figures
are shown beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, {here!r})
import bench_loop_frameworks as bench
import bearagent.runtime.recorder as where
sizes, runs = {sizes!r}, {runs!r}
loop = bench.Loop()
out = {{"module": where.__file__}}
with tempfile.TemporaryDirectory() as tmp:
    fw = bench.bearagent_framework(Path(tmp), loop)
    for _ in range(5):
        fw.run_once(10)
    for n in sizes:
        wall, cpu = [], []
        for _ in range(runs):
            c0 = time.process_time()
            wall.append(fw.run_once(n))  # asserts the run; the checks after timing add a little CPU
            cpu.append(time.process_time() - c0)
        out[str(n)] = {{"wall": wall, "cpu": cpu}}
    fw.cleanup()
loop.close()
print(json.dumps(out))
"""


def run_tree(src: Path, sizes: list[int], runs: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = _CHILD.format(here=str(HERE), sizes=sizes, runs=runs)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(result["module"]).startswith(str(src)):
        raise SystemExit(f"{src} was not imported (got {result['module']}): is it a src/ directory?")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sizes", default="0,50")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    samples: dict[tuple[str, int, str], list[float]] = {}
    print(f"# ab_trees {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory():
        for _ in range(args.rounds):
            for label, src in trees.items():
                result = run_tree(src, sizes, args.runs)
                for n in sizes:
                    data = result[str(n)]
                    assert isinstance(data, dict)
                    for kind in ("wall", "cpu"):
                        samples.setdefault((label, n, kind), []).extend(data[kind])  # type: ignore[arg-type]
    print(f"# load after {os.getloadavg()[0]:.2f}; {args.rounds} rounds x {args.runs} runs per tree and N")
    print(f"{'N':>4} {'tree':<7} {'cpu med ms/step':>16} {'wall med':>10} {'wall min':>10}")
    for n in sizes:
        for label in trees:
            cpu = statistics.median(samples[label, n, "cpu"]) * 1000 / (n + 1)
            wall = samples[label, n, "wall"]
            print(
                f"{n:>4} {label:<7} {cpu:>16.3f} {statistics.median(wall) * 1000 / (n + 1):>10.3f}"
                f" {min(wall) * 1000 / (n + 1):>10.3f}"
            )
        before = statistics.median(samples["before", n, "cpu"])
        after = statistics.median(samples["after", n, "cpu"])
        print(f"{n:>4} after/before CPU: {after / before:.2f}")


if __name__ == "__main__":
    main()

"""What capturing a tool call's file changes costs, and what a rewind costs (issue 34).

    uv run python benchmarks/bench_rewind.py [--files 10000] [--runs 30]

Builds a throwaway workspace of N small files (in directories of 100, a mid-size repository), warms the capture
index once (the first captured call of a workspace reads the whole tree; later calls read only what changed), then
times, interleaved so that load on the machine hits all alike:

1. `baseline`: a shell command as a subprocess (`sh -c CMD`), no capture: the floor a Bash call costs anyway;
2. `noop`: the same command between the capture's two scans (`WorkspaceCapture.before` / `after`), touching nothing;
3. `one`: the same with a command that changes one file.

Prints the median and p90 of each and the capture's cost over the baseline (targets: <= 10 ms touching nothing,
<= 20 ms changing one file), then the time of a rewind of 100 changed files (`plan_rewind` + `apply_rewind`,
target <= 1 s).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bearagent.domain.events import Event
from bearagent.domain.ids import EventId, RunId
from bearagent.rewind.capture import WorkspaceCapture
from bearagent.rewind.restore import apply_rewind, plan_rewind

CALL = "50000000-0000-4000-8000-0000000000a1"


def build(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"mod{i % 100:03d}.py").write_text(f"# module {i}\nVALUE = {i}\n")


def timed(capture: WorkspaceCapture | None, command: str) -> float:
    start = time.perf_counter()
    if capture is not None:
        capture.before("run", CALL, "Bash")
    subprocess.run(["sh", "-c", command], cwd=capture.root if capture else None, check=True)
    if capture is not None:
        capture.after(CALL, "Bash")
    return (time.perf_counter() - start) * 1000


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):6.1f} ms  p90 {ordered[int(len(ordered) * 0.9) - 1]:6.1f} ms"


def rewind_100(root: Path, capture: WorkspaceCapture) -> float:
    capture.before("run", CALL, "Bash")
    for i in range(100):
        (root / f"pkg{i:03d}" / "mod000.py").write_text(f"changed {i}\n")
    changed = capture.after(CALL, "Bash")
    event = Event(
        event_id=EventId.new(),
        run_id=RunId.new(),
        sequence=1,
        event_type="FilesChanged",
        schema_version=1,
        occurred_at=datetime.datetime.now(datetime.UTC),
        payload=changed.model_dump(mode="json"),
    )
    start = time.perf_counter()
    plan = plan_rewind(root, [[event]])
    apply_rewind(root, plan, capture.blobs, force=False)
    took = (time.perf_counter() - start) * 1000
    assert len(plan.steps) == 100 and (root / "pkg000" / "mod000.py").read_text() == "# module 0\nVALUE = 0\n"
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / ".bearagent").mkdir(parents=True)
        build(root, args.files)
        capture = WorkspaceCapture(root)
        start = time.perf_counter()
        capture.before("run", CALL, "Bash")
        capture.after(CALL, "Bash")
        first = (time.perf_counter() - start) * 1000
        baseline: list[float] = []
        noop: list[float] = []
        one: list[float] = []
        for i in range(args.runs):
            baseline.append(timed(None, "true"))
            noop.append(timed(capture, "true"))
            one.append(timed(capture, f"echo {i} > pkg000/mod001.py"))
        rewind = rewind_100(root, capture)
    print(f"python {platform.python_version()} on {platform.machine()}, {args.files} files, {args.runs} runs")
    print(f"first captured call (reads and stores the whole tree once): {first:.0f} ms")
    print(f"baseline (sh -c, no capture) {stats(baseline)}")
    print(f"noop     (capture, no change) {stats(noop)}")
    print(f"one      (capture, one file)  {stats(one)}")
    base = statistics.median(baseline)
    print(
        f"capture cost: noop +{statistics.median(noop) - base:.1f} ms, one file +{statistics.median(one) - base:.1f} ms"
    )
    print(f"rewind of 100 changed files: {rewind:.0f} ms")


if __name__ == "__main__":
    main()

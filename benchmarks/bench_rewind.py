"""What capturing a tool call's file changes costs, and what a rewind costs (issue 34).

    uv run python benchmarks/bench_rewind.py [--files 10000] [--runs 30]

Builds a throwaway workspace of N small files (in directories of 100, a mid-size repository), warms the capture
index once (the first captured call of a workspace reads the whole tree; later calls read only what changed), then
times, interleaved so that load on the machine hits all alike:

1. `baseline`: a shell command as a subprocess (`sh -c CMD`), no capture: the floor a Bash call costs anyway;
2. `noop`: the same command between the capture's two looks (`WorkspaceCapture.before` / `after`), touching nothing;
3. `one`: the same with a command that changes one file;

each with the default capture (`watch`: inotify watches name what changed; the process's first look scans the whole
tree) and with `scan` (a full metadata scan of the tree at every look, what the capture falls back to without
inotify). Prints the median and p90 of each and the capture's cost over the baseline (targets: <= 10 ms touching
nothing, <= 20 ms changing one file), the cost of the first look of a new workspace (stores the whole tree once) and
of a new process on a known workspace, then the time of a rewind of 100 changed files (`plan_rewind` +
`apply_rewind`, target <= 1 s).
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


def first_look(root: Path, watch: bool) -> tuple[WorkspaceCapture, float]:
    capture = WorkspaceCapture(root, watch=watch)
    start = time.perf_counter()
    capture.before("run", CALL, "Bash")
    capture.after(CALL, "Bash")
    return capture, (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        (root / ".bearagent").mkdir(parents=True)
        build(root, args.files)
        _, new_workspace = first_look(root, watch=True)
        watch, new_process = first_look(root, watch=True)
        scan, _ = first_look(root, watch=False)
        rows: dict[str, list[float]] = {
            "baseline": [],
            "noop/watch": [],
            "one/watch": [],
            "noop/scan": [],
            "one/scan": [],
        }
        for i in range(args.runs):
            rows["baseline"].append(timed(None, "true"))
            rows["noop/watch"].append(timed(watch, "true"))
            rows["one/watch"].append(timed(watch, f"echo {i} > pkg000/mod001.py"))
            rows["noop/scan"].append(timed(scan, "true"))
            rows["one/scan"].append(timed(scan, f"echo s{i} > pkg000/mod002.py"))
        rewind = rewind_100(root, watch)
    print(f"python {platform.python_version()} on {platform.machine()}, {args.files} files, {args.runs} runs")
    print(f"first look of a new workspace (reads and stores the whole tree once): {new_workspace:.0f} ms")
    print(f"first look of a new process (scans the tree, adds the watches): {new_process:.0f} ms")
    base = statistics.median(rows["baseline"])
    for name, values in rows.items():
        extra = "" if name == "baseline" else f"  capture cost +{statistics.median(values) - base:.1f} ms"
        print(f"{name:<11} {stats(values)}{extra}")
    print(f"rewind of 100 changed files: {rewind:.0f} ms")


if __name__ == "__main__":
    main()

"""Where a scripted `bearagent run` spends its time, by kind of work, sampled with py-spy.

    uv run --group bench python benchmarks/startup_profile.py [--runs N] [--rate HZ] [--keep DIR]

Runs README's quickstart command (`bearagent run -w <fresh copy of examples/quickstart> "Read docs/project.md and
write a summary to outputs/intro.md"`: offline, the scripted model, plugins off, an isolated user dir) N times under
`py-spy record` (a sampling profiler: it reads the process from outside, so unlike cProfile it does not slow the
Python-level work it measures more than the C-level work), and sorts every sample by the innermost kind of work on
its stack:

- creating dataclasses (`dataclasses._process_class`: the generated `__init__`, `__repr__`, `__eq__`, ... each
  compiled with `exec`), pydantic models (its metaclass), TypedDicts, compiling regexes;
- the rest of importing: finding modules, reading and unmarshalling bytecode, running module bodies;
- everything after the imports (the run itself, the store, the exit).

py-spy samples with `--nonblocking`: its default stops the process for every sample, which on the 2-core VM made a
~0.9 s run last ~40 s (~78,000 samples a run at 2,000 Hz instead of ~1,800) and skewed the shares. Without stopping,
a stack is sometimes read while it changes: samples with no readable Python frame (those, and threads waiting) are
counted apart. The printed table
is the share of all samples; `--keep DIR` keeps py-spy's raw files (one line per stack) for a flame graph. py-spy is
in the `bench` dependency group; bytecode caches are written before the first sampled run, so no run compiles
sources.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_cli import QUICKSTART_PROMPT, REPO, cpu_model  # the script's own directory is first on sys.path

# (kind, a frame that marks it), the first match from the top of this list wins
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("creating dataclasses", ("_process_class (dataclasses.py",)),
    ("creating pydantic models", ("__new__ (pydantic/_internal/_model_construction.py",)),
    ("creating TypedDicts", ("_TypedDictMeta", "__new__ (typing_extensions.py")),
    ("compiling regexes", ("_compile (re/__init__.py",)),
)
IMPORTING = "_find_and_load"


def kind_of(stack: str) -> str:
    if not stack.strip():
        return "no Python frame (waiting, or unreadable)"
    for kind, marks in KINDS:
        if any(mark in stack for mark in marks):
            return kind
    if IMPORTING in stack:
        if "find_spec" in stack:
            return "importing: finding modules"
        if "get_code" in stack or "get_data" in stack or "_compile_bytecode" in stack:
            return "importing: reading and unmarshalling bytecode"
        return "importing: module bodies and the rest"
    return "after the imports: the run, the store, the exit"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate", type=int, default=2000, help="samples per second (py-spy --rate)")
    parser.add_argument("--keep", type=Path, help="keep py-spy's raw output files here")
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("py-spy not found: run this with `uv run --group bench python benchmarks/startup_profile.py`")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(BEARAGENT_HOME=str(base / "home"), BEARAGENT_LOAD_PLUGINS="", NO_COLOR="1")
        command = [sys.executable, "-m", "bearagent", "run", "-w"]
        kinds: collections.Counter[str] = collections.Counter()
        for i in range(args.runs + 1):  # the first run writes the bytecode caches and is not sampled
            workspace = base / f"qs{i}"
            shutil.copytree(REPO / "examples" / "quickstart", workspace, ignore=shutil.ignore_patterns("state.db*"))
            if i == 0:
                subprocess.run([*command, str(workspace), QUICKSTART_PROMPT], env=env, check=True, capture_output=True)
                continue
            raw = base / f"run{i}.txt"
            subprocess.run(
                [
                    spy,
                    "record",
                    "-r",
                    str(args.rate),
                    "-f",
                    "raw",
                    "--nonblocking",
                    "-o",
                    str(raw),
                    "--",
                    *command,
                    str(workspace),
                    QUICKSTART_PROMPT,
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            for line in raw.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if not count.isdigit():  # py-spy ends some files with a blank line
                    continue
                kinds[kind_of(stack)] += int(count)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(raw, args.keep / raw.name)
    total = sum(kinds.values())
    cpu = cpu_model()
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, {cpu}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}; {args.runs} runs at {args.rate} Hz, "
        f"{total} samples\n"
    )
    print("| kind of work | share of samples |\n|---|---:|")
    for kind, count in kinds.most_common():
        print(f"| {kind} | {100 * count / total:.1f}% |")
    importing = sum(c for k, c in kinds.items() if k.startswith(("creating", "compiling", "importing")))
    print(f"\nimporting in all (class creation and regexes included): {100 * importing / total:.1f}%")


if __name__ == "__main__":
    main()

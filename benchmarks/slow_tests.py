"""Which tests of the inner loop take 2 s or more, and so should carry `@pytest.mark.slow` (docs/testing.md).

    uv run python benchmarks/slow_tests.py [--threshold 2.0] [-- PYTEST ARGS]

Runs `pytest -m "not slow"` in this checkout (as the README's inner loop does, in parallel) with this file loaded as
a pytest plugin (`-p slow_tests`): each xdist worker records, for every test, its wall time (setup, call and
teardown), its own CPU and the CPU of the child processes it waited for, and writes them to a temporary directory
when its session ends. Then it prints the run's wall time, the test time and CPU per worker, and every test function
whose median wall time over its parameters is at least the threshold: the candidates for the mark. The median, not
the maximum, so that one case paying a first import does not mark a whole table of fast cases.

Figures depend on the machine and its load; compare within one run, and measure the threshold on the 2-core machine
the targets are set for.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
_DIR_VARIABLE = "BEARAGENT_SLOW_TESTS_DIR"


# ---- the pytest plugin (loaded in each worker with `-p slow_tests`) ---------------------------------------------

_rows: list[dict[str, Any]] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    wall = time.perf_counter()
    own, kids = _cpu()
    yield
    own_after, kids_after = _cpu()
    _rows.append(
        {
            "id": item.nodeid,
            "wall": time.perf_counter() - wall,
            "own": own_after - own,
            "kids": kids_after - kids,
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get(_DIR_VARIABLE)
    if not out:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(out, f"{worker}-{os.getpid()}.json").write_text(json.dumps(_rows))


# ---- the script ---------------------------------------------------------------------------------------------------


def _function(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def report(rows: list[dict[str, Any]], threshold: float) -> list[tuple[str, float, int]]:
    """The test functions whose median wall time is at least `threshold`: (function, median, number of cases)."""
    walls: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        walls[_function(row["id"])].append(row["wall"])
    found = [(name, statistics.median(times), len(times)) for name, times in walls.items()]
    return sorted((item for item in found if item[1] >= threshold), key=lambda item: -item[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=2.0, help="seconds of wall time (default 2.0)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slow-tests-") as out:
        env = dict(os.environ)
        env[_DIR_VARIABLE] = out
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
        command = [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "slow_tests", *args.pytest_args]
        print("$", " ".join(command), flush=True)
        start = time.perf_counter()
        code = subprocess.run(command, cwd=REPO, env=env, check=False).returncode
        wall = time.perf_counter() - start
        rows: list[dict[str, Any]] = []
        print(f"\npytest exit {code}, {wall:.0f} s wall")
        for path in sorted(Path(out).glob("*.json")):
            worker_rows: list[dict[str, Any]] = json.loads(path.read_text())
            if not worker_rows:
                continue  # the xdist controller runs no test
            rows.extend(worker_rows)
            test_time = sum(row["wall"] for row in worker_rows)
            cpu = sum(row["own"] + row["kids"] for row in worker_rows)
            print(f"  {path.stem}: {len(worker_rows)} tests, {test_time:.0f} s of test time, {cpu:.0f} s CPU")
    slow = report(rows, args.threshold)
    print(f"\n{len(slow)} functions with a median of {args.threshold:g} s or more (not marked slow):")
    for name, median, cases in slow:
        print(f"  {median:5.1f} s  {name}" + (f"  ({cases} cases)" if cases > 1 else ""))
    sys.exit(code)


if __name__ == "__main__":
    main()

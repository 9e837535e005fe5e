"""The test modules' assert rewrites, done once, in parallel, before the workers start (`prepare`).

pytest rewrites the asserts of every test module it imports and caches the result beside the module's bytecode
(`<name>.cpython-311-pytest-<version>.pyc`, hash-based: valid for as long as the source is unchanged). In a fresh
clone there is no cache, and every xdist worker collects every module: three workers each rewrote all ~300 test
modules at once, ~7 s of CPU apiece on the 2-core machine, ~45% of a cold collection (py-spy, 2026-12-07,
docs/testing.md). `prepare` gives the modules without a cached rewrite to one process per core, which write the same
files pytest's import hook would (its own functions, `_rewrite_test` and `_write_pyc`); the workers then find them.
Beside them, one more process fills the checkout's other first-run caches (`warm_caches`: the environment's
bytecode linked, BearAgent's modules compiled, hypothesis's constants), which the collecting process did after the
rewrites while one core idled.

Only ever an early start of pytest's own work: a module this misses, or a file it writes that pytest does not accept
(another pytest version names or checks them differently), is rewritten by pytest as before. It runs only where
pytest rewrites and writes its cache (`--assert=rewrite`, bytecode writing allowed, no assertion pass hook, which
would change the rewritten code).

    python -m tests.support.assert_rewrite FILE...   (what `prepare` starts: rewrite and cache these modules)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import warm_caches

SMALL_BATCH = 16
"""Fewer modules than this to rewrite (a warm checkout, or one file edited): pytest's own import does it."""


def cached_rewrite(module: Path) -> Path:
    """Where pytest's import hook reads and writes `module`'s rewritten code (its `get_cache_dir` and `PYC_TAIL`)."""
    from _pytest.assertion.rewrite import PYC_TAIL, get_cache_dir

    return get_cache_dir(module) / (module.name[:-3] + PYC_TAIL)


def _test_modules(config: pytest.Config) -> list[Path]:
    """The test modules and conftest files below the paths this run collects (`config.args`: the command line's, or
    `testpaths`)."""
    patterns = [str(p) for p in config.getini("python_files")] or ["test_*.py"]
    found: set[Path] = set()
    for arg in config.args:
        path = config.invocation_params.dir / arg.split("::", 1)[0]
        if path.is_file() and path.suffix == ".py":
            found.add(path)
        elif path.is_dir():
            found.update(path.rglob("conftest.py"))
            for pattern in patterns:
                found.update(path.rglob(pattern))
    return sorted(found)


def prepare(config: pytest.Config) -> None:
    """Rewrite the test modules that have no cached rewrite, one process per usable core, unless there are few of
    them or pytest would not read what the processes write."""
    if (
        os.environ.get("PYTEST_XDIST_WORKER")  # a worker: the controller did it already
        or sys.dont_write_bytecode
        or config.getoption("assertmode") != "rewrite"
        or config.getini("enable_assertion_pass_hook")
    ):
        return
    try:
        todo = [m for m in _test_modules(config) if not cached_rewrite(m).exists()]
    except (ImportError, OSError):
        return
    if len(todo) < SMALL_BATCH:
        return
    cores = max(1, len(os.sched_getaffinity(0)))
    todo.sort(key=lambda m: m.stat().st_size, reverse=True)  # largest first, dealt round the processes
    batches = [todo[i::cores] for i in range(cores)]
    path = [str(config.rootpath), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}  # `tests.support` importable from the checkout
    children = [
        warm_caches.start(config.rootpath, config.invocation_params.dir, env),
        *(
            subprocess.Popen(
                [sys.executable, "-m", "tests.support.assert_rewrite", *map(str, batch)],
                cwd=config.rootpath,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # whatever fails here, pytest does (and reports) itself
            )
            for batch in batches
            if batch
        ),
    ]
    for child in children:
        child.wait()  # a failed child leaves its modules to pytest, which rewrites them on import as before


class _Trace:
    """The `state` `_write_pyc` tells of a failed write (the module is then left to pytest)."""

    def trace(self, message: str) -> None:
        print(message, file=sys.stderr)


def main(files: list[str]) -> int:
    """Rewrite and cache each of `files`; one that does not parse is left to pytest, which reports it on import.
    Returns 1 when a module could not be cached."""
    from _pytest.assertion.rewrite import _rewrite_test, _write_pyc, try_makedirs  # pyright: ignore[reportPrivateUsage]

    state, failed = _Trace(), 0
    for name in files:
        module = Path(name)
        target = cached_rewrite(module)
        try:
            source_hash, code = _rewrite_test(module, None)  # pyright: ignore[reportArgumentType]  # None: no pass hook
        except (SyntaxError, ValueError, OSError):
            failed = 1
            continue
        if not (try_makedirs(target.parent) and _write_pyc(state, code, source_hash, target)):  # pyright: ignore[reportArgumentType]
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

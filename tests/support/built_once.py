"""`built_once`: something costly that several tests read but none changes (a virtual environment with the repository
installed, a large generated workspace) built once per test run, not once per xdist worker.

A module- or session-scoped fixture runs once in every worker that runs one of its tests, and xdist cannot keep a
module's tests on one worker (`--dist worksteal` spreads them; `xdist_group` is ignored with pytest 9.2,
docs/testing.md): on the 2-core machine the plugins' venv (`tests/integration/test_plugins_install.py`, the whole
repository built and installed) was built twice per run. Here the first worker builds it under a file lock in the run's
shared base directory (the parent of each worker's `basetemp`, new for every run, so nothing carries over from an
earlier run) and the others wait for it, then reuse it. A build that fails leaves no mark, so the next test to ask
builds again and fails with its own message."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".built"


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The directory `<run's base temp>/built-once-<name>`, filled by `build(directory)` in the first process of
    this run that asks for it; every later caller (another worker, another module) gets it as built. Callers must
    only read it."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # popen-gwN's parent: one per run, shared by its workers
    target = base / f"built-once-{name}"
    with open(base / f"built-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here while the first builds
        if not (target / DONE).exists():
            shutil.rmtree(target, ignore_errors=True)  # a failed build's leftovers
            target.mkdir()
            build(target)
            (target / DONE).write_text("")
    return target

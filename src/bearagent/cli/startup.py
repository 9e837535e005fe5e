"""Start-up stages of one `bearagent` process (`start_up_over`, `importing`): a leaf, so `cli/main.py` (the command table) and
the commands that start a run both call it without importing each other."""

from __future__ import annotations

import gc
from collections.abc import Generator
from contextlib import contextmanager
from typing import Literal

_FROZEN_AT: set[str] = set()


Stage = Literal["cli", "command", "run_imports", "run", "serving"]

FULL_COLLECTION_AFTER = 100
"""A long-lived process (`serve`, `worker`: `long_lived`) collects its oldest generation after this many collections
of the middle one (Python's default: 10). A full collection traverses every object the process keeps, and a server
with a thousand runs in flight keeps ~0.3 M of them: 15 full collections of 200-390 ms each (on a loaded machine)
stopped its event loop during one 1,000-run round of `benchmarks/bench_serve.py`, each holding every stream's next
frame, while each freed about a thousand objects (the young collections free the rest). At 100, one did
(docs/benchmarks.md). What the young generations miss is still freed, only later."""


def start_up_over(stage: Stage) -> None:
    """Start-up is over up to `stage` (`cli`: click and the command table are loaded; `command`: its module is loaded; `run_imports`: what a run imports is loaded;
    `run`: the workspace is loaded and the run about to start; `serving`: a server's or worker's app is built). What exists now (modules, classes, pydantic's validators, the loaded workspace) lives as long
    as the process, so it is moved out of the cyclic collector's way (`gc.freeze`): collections traverse only what
    is made from here on, and the collection at exit skips it. A scripted `bearagent run` builds ~0.3 M such
    objects; collecting through them again and again was ~70 ms of its ~0.43 s (docs/benchmarks.md). Each stage
    freezes once per process, so a test runner invoking the CLI in-process keeps collecting its own garbage."""
    if stage not in _FROZEN_AT:
        _FROZEN_AT.add(stage)
        gc.freeze()


def long_lived() -> None:
    """A process that serves until stopped (`serve`, `worker`), once its app is built: what start-up built is frozen
    (`start_up_over("serving")`) and full collections come `FULL_COLLECTION_AFTER` middle ones apart."""
    start_up_over("serving")
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_AFTER)


@contextmanager
def importing(stage: Stage) -> Generator[None]:
    """The cyclic collector is paused while a command imports its modules; what they built is then frozen
    (`start_up_over(stage)`) and the collector resumed (if it was on). Importing builds long-lived objects (classes,
    pydantic validators, module dictionaries) and next to no garbage, yet every ~700 allocations would trigger a
    collection that traverses the young ones again, and the first collections after would traverse all of it.
    Scoped to the imports, so no command does its own work without collection (issue 37: a scripted run's start-up
    made ~150 collections, docs/benchmarks.md)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        start_up_over(stage)
        if was_enabled:
            gc.enable()

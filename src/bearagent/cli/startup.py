"""Start-up stages of one `bearagent` process (`start_up_over`): a leaf, so `cli/main.py` (the command table) and
the commands that start a run both call it without importing each other."""

from __future__ import annotations

import gc
from typing import Literal

_FROZEN_AT: set[str] = set()


def start_up_over(stage: Literal["command", "run"]) -> None:
    """Start-up is over up to `stage` (`command`: its module is loaded; `run`: the workspace is loaded and the run
    about to start). What exists now (modules, classes, pydantic's validators, the loaded workspace) lives as long
    as the process, so it is moved out of the cyclic collector's way (`gc.freeze`): collections traverse only what
    is made from here on, and the collection at exit skips it. A scripted `bearagent run` builds ~0.3 M such
    objects; collecting through them again and again was ~70 ms of its ~0.43 s (docs/benchmarks.md). Each stage
    freezes once per process, so a test runner invoking the CLI in-process keeps collecting its own garbage."""
    if stage not in _FROZEN_AT:
        _FROZEN_AT.add(stage)
        gc.freeze()

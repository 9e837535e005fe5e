"""The run a piece of code executes in (a context variable), so runtime tools like `Task` can reach their parent."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import RunSpec
from bearagent.runtime.recorder import RunRecorder


@dataclass(frozen=True, slots=True)
class CurrentRun:
    recorder: RunRecorder
    spec: RunSpec
    observer: RunObserver
    agent_name: Callable[[], str]
    tool_names: Callable[[], frozenset[str]]
    model_ref: Callable[[], str] = lambda: ""
    extend_deadline: Callable[[float], None] = lambda _seconds: None
    """Move the run's wall-time deadline later by this many seconds (the time it waited for a person)."""


current_run: ContextVar[CurrentRun | None] = ContextVar("bearagent_current_run", default=None)

"""bearagent-reviewers: agents and skills shipped as files inside the package."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bearagent import hookimpl

_HERE = Path(__file__).resolve().parent


@hookimpl
def register_agent_dirs(register: Callable[[Path], None]) -> None:
    register(_HERE / "agents")


@hookimpl
def register_skill_dirs(register: Callable[[Path], None]) -> None:
    register(_HERE / "skills")

"""bearagent-reviewers: agents and skills shipped as files inside the package."""

from __future__ import annotations

from pathlib import Path

from bearagent.plugin import RegisterDir, hookimpl

_HERE = Path(__file__).resolve().parent


@hookimpl
def register_agent_dirs(register: RegisterDir) -> None:
    register(_HERE / "agents")


@hookimpl
def register_skill_dirs(register: RegisterDir) -> None:
    register(_HERE / "skills")

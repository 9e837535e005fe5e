"""`bearagent plugins install` / `uninstall`: into BearAgent's own environment, however BearAgent was installed.

A plugin is a Python package with an entry point in the `bearagent` group, so it must be installed where BearAgent's
own interpreter (`sys.executable`) imports from. `pip install` in a shell finds another interpreter when BearAgent
came from `uv tool install` or `pipx` (their environments are private, and uv's have no pip), so, as `llm install`
does, BearAgent runs the installer against its own interpreter:

- with `uv` on PATH: `uv pip install --python <sys.executable> PKG...` (works for uv tool, pipx, venv and system
  environments alike, and needs no pip inside the environment);
- else `<sys.executable> -m pip install PKG...`.

A PKG that names an existing directory or file (`./my-plugin`, a wheel) is passed as an absolute path. Uninstall
takes a plugin name (`guard`, its entry-point name) or a distribution name (`bearagent-guard`), and refuses to remove
BearAgent itself. After `uv tool upgrade bearagent` (or `pipx reinstall`) the environment is rebuilt without the
plugins: reinstall them, or install BearAgent with them (`uv tool install bearagent --with PKG`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

EnvKind: TypeAlias = Literal["uv-tool", "pipx", "venv", "system"]
PROTECTED = frozenset({"bearagent", "pip", "uv", "pluggy", "click", "pydantic"})
"""Distributions `plugins uninstall` never removes (BearAgent itself and what it needs to run)."""


@dataclass(frozen=True, slots=True)
class Environment:
    """Where BearAgent runs: its interpreter, that environment's prefix and kind, and the uv to install with."""

    python: str
    prefix: str
    kind: EnvKind
    uv: str | None

    def describe(self) -> str:
        names = {
            "uv-tool": "a uv tool environment",
            "pipx": "a pipx environment",
            "venv": "a virtual environment",
            "system": "the system Python",
        }
        return f"{names[self.kind]} ({self.prefix})"


def detect_environment(
    *,
    executable: str | None = None,
    prefix: str | None = None,
    base_prefix: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Environment:
    """BearAgent's own environment (defaults: this process's `sys.executable`, `sys.prefix`, `sys.base_prefix`)."""
    python = executable or sys.executable
    root = prefix or sys.prefix
    base = base_prefix or sys.base_prefix
    parts = Path(root).parts
    kind: EnvKind
    if (Path(root) / "uv-receipt.toml").is_file() or _contains(parts, ("uv", "tools")):
        kind = "uv-tool"
    elif _contains(parts, ("pipx", "venvs")):
        kind = "pipx"
    elif os.path.realpath(root) != os.path.realpath(base):
        kind = "venv"
    else:
        kind = "system"
    return Environment(python=python, prefix=root, kind=kind, uv=which("uv"))


def _contains(parts: Sequence[str], pair: tuple[str, str]) -> bool:
    return any(parts[i : i + 2] == pair for i in range(len(parts) - 1))


def _target(spec: str, cwd: Path) -> str:
    """An existing path as an absolute path (the installer may run elsewhere); anything else as given."""
    candidate = Path(spec).expanduser()
    if not candidate.is_absolute():
        candidate = cwd / candidate
    looks_like_path = spec.startswith((".", "/", "~")) or os.sep in spec or spec.endswith((".whl", ".tar.gz", ".zip"))
    return str(candidate.resolve()) if looks_like_path and candidate.exists() else spec


def install_command(
    env: Environment, packages: Sequence[str], *, upgrade: bool = False, editable: bool = False, cwd: Path
) -> list[str]:
    """The argv that installs `packages` into `env` (see the module docstring)."""
    targets: list[str] = []
    for spec in packages:
        if editable:
            targets.append("-e")
        targets.append(_target(spec, cwd))
    flags = ["--upgrade"] if upgrade else []
    if env.uv is not None:
        return [env.uv, "pip", "install", "--python", env.python, *flags, *targets]
    return [env.python, "-m", "pip", "install", *flags, *targets]


def uninstall_command(env: Environment, distributions: Sequence[str]) -> list[str]:
    if env.uv is not None:
        return [env.uv, "pip", "uninstall", "--python", env.python, *distributions]
    return [env.python, "-m", "pip", "uninstall", "--yes", *distributions]


def distribution_of(name: str, plugins: dict[str, str | None]) -> str:
    """The distribution to uninstall for `name`: the distribution of the plugin of that entry-point name, else
    `name` itself (a distribution name). `plugins` maps plugin name -> distribution."""
    found = plugins.get(name)
    return found or name


def is_protected(distribution: str) -> bool:
    return distribution.lower().replace("_", "-") in PROTECTED

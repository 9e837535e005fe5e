"""`bearagent plugins install` / `uninstall` for real: into a `uv tool install`-ed BearAgent (uv on PATH) and into a
plain virtualenv without uv (pip). Offline: uv and pip only read their caches and local files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow]
OFFLINE = {"UV_OFFLINE": "1", "UV_LINK_MODE": "copy", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _sh(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=600, check=False, env=env, cwd=cwd)


def _env(tmp_path: Path, path: str) -> dict[str, str]:
    cache = subprocess.run([_uv(), "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    return {
        "PATH": path,
        "HOME": str(tmp_path),
        "BEARAGENT_HOME": str(tmp_path / "user"),
        "NO_COLOR": "1",
        "UV_CACHE_DIR": cache,  # the build backend (hatchling) comes from uv's cache, offline
        **OFFLINE,
    }


def _uv() -> str:
    uv = shutil.which("uv")
    assert uv is not None, "uv is required to build the test environments"
    return uv


def test_install_and_uninstall_in_a_uv_tool_environment(tmp_path: Path) -> None:
    uv = _uv()
    env = {**os.environ, **OFFLINE, "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    env.pop("VIRTUAL_ENV", None)
    made = _sh(uv, "tool", "install", "--python", sys.executable, str(REPO), env=env, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    bear = str(tmp_path / "bin" / "bearagent")
    cli_env = _env(tmp_path, f"{Path(uv).parent}:/usr/bin:/bin")

    installed = _sh(bear, "plugins", "install", "./plugins/bearagent-guard", env=cli_env, cwd=REPO)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert f"installing into a uv tool environment ({tmp_path / 'tools' / 'bearagent'})" in installed.stderr
    assert f"pip install --python {tmp_path / 'tools' / 'bearagent' / 'bin' / 'python'}" in installed.stderr
    assert "installed plugin: guard" in installed.stdout
    assert "`uv tool upgrade bearagent` rebuilds this environment" in installed.stderr
    listed = _sh(bear, "plugins", "list", env=cli_env, cwd=tmp_path)
    assert "guard" in listed.stdout and "FileHash" in listed.stdout

    refused = _sh(bear, "plugins", "uninstall", "bearagent", env=cli_env, cwd=tmp_path)
    assert refused.returncode == 2 and "is part of BearAgent" in refused.stderr
    removed = _sh(bear, "plugins", "uninstall", "guard", env=cli_env, cwd=tmp_path)
    assert removed.returncode == 0 and "uninstalled plugin: guard" in removed.stdout, removed.stderr
    assert "no plugins installed" in _sh(bear, "plugins", "list", env=cli_env, cwd=tmp_path).stdout


def test_install_with_pip_when_uv_is_not_on_path(tmp_path: Path) -> None:
    uv = _uv()
    base = Path(getattr(sys, "_base_executable", sys.executable))
    venv = tmp_path / "venv"
    made = subprocess.run([str(base), "-m", "venv", str(venv)], capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    env = {**os.environ, **OFFLINE}
    env.pop("VIRTUAL_ENV", None)
    python = str(venv / "bin" / "python")
    assert _sh(uv, "pip", "install", "--python", python, str(REPO), env=env, cwd=tmp_path).returncode == 0
    wheels = tmp_path / "wheels"
    built = _sh(
        uv,
        "build",
        "--wheel",
        "--out-dir",
        str(wheels),
        str(REPO / "plugins" / "bearagent-reviewers"),
        env=env,
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(wheels.glob("*.whl"))
    cli_env = _env(tmp_path, f"{venv / 'bin'}:/usr/bin:/bin")  # no uv here
    bear = str(venv / "bin" / "bearagent")
    installed = _sh(bear, "plugins", "install", str(wheel), env=cli_env, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (
        f"$ {python} -m pip install {wheel}" in installed.stderr and "installed plugin: reviewers" in installed.stdout
    )
    agents = _sh(bear, "agents", "list", env=cli_env, cwd=tmp_path)
    assert "security-reviewer" in agents.stdout
    removed = _sh(bear, "plugins", "uninstall", "reviewers", env=cli_env, cwd=tmp_path)
    assert removed.returncode == 0 and "uninstalled plugin: reviewers" in removed.stdout, removed.stderr

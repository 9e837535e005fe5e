"""The built wheel is a complete product: installed into a fresh venv it runs `bearagent --version` and carries the
built-in agents and skills (`builtin_agents/`, `builtin_skills/` -> `bearagent/_builtin/...`, see the hatch
force-include in pyproject.toml)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import cast

import pytest

from bearagent import __version__
from bearagent.builtin import builtin_agents_dir, builtin_skills_dir

ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv")

PROBE = """
import json, sys
from bearagent.builtin import builtin_agents_dir, builtin_skills_dir
agents, skills = builtin_agents_dir(), builtin_skills_dir()
print(json.dumps({
    "agents_dir": str(agents),
    "skills_dir": str(skills),
    "agents": sorted(p.name for p in agents.glob("*.md")),
    "skills": sorted(p.parent.name for p in skills.glob("*/SKILL.md")),
    "prefix": sys.prefix,
}))
"""


def _run(args: list[str], *, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_NO_PROGRESS"] = "1"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _check(done: subprocess.CompletedProcess[str], what: str) -> str:
    assert done.returncode == 0, f"{what} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_source_checkout_uses_the_top_level_dirs() -> None:
    # In this checkout (editable install) there is no bearagent/_builtin: the repo's own folders are used.
    assert builtin_agents_dir() == ROOT / "builtin_agents"
    assert builtin_skills_dir() == ROOT / "builtin_skills"
    assert any(builtin_agents_dir().glob("*.md")), "builtin_agents/ has no agent file"
    assert any(builtin_skills_dir().glob("*/SKILL.md")), "builtin_skills/ has no <name>/SKILL.md"


@pytest.mark.slow
@pytest.mark.skipif(UV is None, reason="uv is not on PATH; install uv to build the wheel")
def test_wheel_installs_into_a_fresh_venv_with_builtins(tmp_path: Path) -> None:
    assert UV is not None
    dist = tmp_path / "dist"
    _check(_run([UV, "build", "--wheel", "--out-dir", str(dist)], cwd=ROOT, timeout=180), "uv build --wheel")
    wheels = list(dist.glob("bearagent-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {dist}, got {wheels}"
    wheel = wheels[0]

    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("bearagent/_builtin/agents/") and n.endswith(".md") for n in names), names
    assert any(n.startswith("bearagent/_builtin/skills/") and n.endswith("/SKILL.md") for n in names), names
    assert not any(n.startswith(("builtin_agents/", "builtin_skills/")) for n in names), "builtins outside the package"

    venv = tmp_path / "venv"
    _check(_run([UV, "venv", "--python", sys.executable, str(venv)]), "uv venv")
    python = venv / "bin" / "python"
    # Pin the dependencies to the lock so uv's cache can serve them; fall back to the index if the cache lacks one.
    requirements = tmp_path / "requirements.txt"
    exported = _check(
        _run([UV, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "-q"], cwd=ROOT), "uv export"
    )
    requirements.write_text(exported, encoding="utf-8")
    install = [UV, "pip", "install", "--python", str(python), "-r", str(requirements), str(wheel)]
    done = _run([*install, "--offline"], timeout=180)
    if done.returncode != 0:
        done = _run(install, timeout=300)
    _check(done, "uv pip install of the wheel")

    version = _check(_run([str(venv / "bin" / "bearagent"), "--version"]), "bearagent --version")
    assert version.strip() == f"bearagent, version {__version__}"

    probe = json.loads(_check(_run([str(python), "-c", PROBE], cwd=tmp_path), "the builtin probe"))
    found = cast(dict[str, object], probe)
    site = Path(cast(str, found["prefix"]))
    agents_dir, skills_dir = Path(cast(str, found["agents_dir"])), Path(cast(str, found["skills_dir"]))
    assert agents_dir.is_relative_to(site) and agents_dir.parts[-3:] == ("bearagent", "_builtin", "agents")
    assert skills_dir.is_relative_to(site) and skills_dir.parts[-3:] == ("bearagent", "_builtin", "skills")
    assert found["agents"], f"no *.md agent in the installed {agents_dir}"
    assert found["skills"], f"no */SKILL.md skill in the installed {skills_dir}"
    # Exactly what the checkout ships.
    assert found["agents"] == sorted(p.name for p in (ROOT / "builtin_agents").glob("*.md"))
    assert found["skills"] == sorted(p.parent.name for p in (ROOT / "builtin_skills").glob("*/SKILL.md"))

"""`run -a NAME` for an agent file that was skipped or duplicated says why and where, not "there is no agent"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import load, write

from bearagent.domain.errors import BearAgentError

BEARAGENT = str(Path(sys.executable).parent / "bearagent")


def _project(root: Path, home: Path) -> Path:
    write(home, "bearagent/script.yaml", "turns:\n  - text: done\n")
    write(
        home,
        "bearagent/config.yaml",
        f"default_model: s\nmodels:\n  s: {{provider: scripted, script: {home / 'bearagent' / 'script.yaml'}}}\n",
    )
    write(root, ".claude/agents/broken.md", "---\ndescription: One.\ndescription: Two.\n---\nbody\n")
    write(root, ".claude/agents/renamed-file.md", "---\nname: Fancy_Name\ndescription: x\n---\nbody\n")
    write(root, ".claude/agents/twin-a.md", "---\nname: twin\ndescription: A.\n---\nbody\n")
    write(root, ".claude/agents/twin-b.md", "---\nname: twin\ndescription: B.\n---\nbody\n")
    return root


def bear(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "NO_COLOR": "1",
    }
    return subprocess.run([BEARAGENT, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_run_a_skipped_agent_says_why_and_where(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = _project(tmp_path / "ws", home)
    result = bear(ws, home, "run", "-a", "broken", "hello")
    assert result.returncode == 2, result.stderr
    assert f"error: agent 'broken' was not loaded: {ws.resolve() / '.claude/agents/broken.md'}:3: invalid YAML" in (
        result.stderr
    ), result.stderr
    assert "duplicate key 'description'" in result.stderr and "there is no agent" not in result.stderr
    twin = bear(ws, home, "run", "-a", "twin", "hello")
    assert twin.returncode == 2 and "agent 'twin' is defined twice in one source: " in twin.stderr
    assert "twin-a.md" in twin.stderr and "twin-b.md" in twin.stderr
    nobody = bear(ws, home, "run", "-a", "nobody", "hello")
    assert nobody.returncode == 2 and "no agent named 'nobody'" in nobody.stderr


def test_the_registry_knows_a_skipped_file_by_its_stem_and_its_declared_name(tmp_path: Path) -> None:
    ws = load(_project(tmp_path / "ws", tmp_path / "home"), tmp_path / "home")
    for name in ("renamed-file", "Fancy_Name"):
        try:
            ws.agents.require(name)
        except BearAgentError as exc:
            assert exc.info.code == "configuration.agent_skipped"
            assert "renamed-file.md:2: agent name 'Fancy_Name' is invalid" in exc.info.message
            assert exc.hint == "rename it to 'fancy-name'"
        else:
            raise AssertionError(f"{name} should not load")

"""Issue 31's smaller items through the CLI: `models list` shows that `workspace/m` takes the bare name `m` from
`platform/m`; the invalid skill name warning suggests a real, valid, different name; a `bearagent run` refused in a
plain directory writes nothing there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, skill_file, write

from bearagent.cli import main
from bearagent.registries.skills import SKILL_NAME_RE, valid_skill_name

BEARAGENT = str(Path(sys.executable).parent / "bearagent")


def invoke(args: list[str], home: Path) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), prog_name="bearagent")


def test_models_list_shows_the_bare_name_shadowing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".bearagent/config.yaml", "models:\n  m: {provider: scripted, script: a.yaml}\n")
    write(tmp_path, "bearagent/config.yaml", "models:\n  m: {provider: scripted, script: b.yaml}\n")
    table = invoke(["models", "list", "-w", str(root)], tmp_path)
    assert table.exit_code == 0, table.output
    lines = {
        line.split()[0]: line for line in table.output.splitlines() if line.startswith(("workspace/", "platform/"))
    }
    assert "platform/m (bare name)" in lines["workspace/m"]
    assert "bare name is workspace/m" in lines["platform/m"]
    data = json.loads(invoke(["models", "list", "-w", str(root), "--json"], tmp_path).output)
    by_ref = {m["ref"]: m for m in data["models"]}
    assert by_ref["workspace/m"]["bare_name_shadows"] == "platform/m"
    assert by_ref["platform/m"]["bare_name_resolves_to"] == "workspace/m"


def test_the_skill_name_warning_suggests_a_valid_different_name(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, ".bearagent/skills/repo.explorer/SKILL.md", skill_file("repo.explorer"))
    result = invoke(["doctor", "-w", str(root)], tmp_path)
    assert "rename the folder to 'repo-explorer'" in result.output, result.output
    for bad in ("repo.explorer", "Bad--Name", "__x__", "...", "a" * 80 + ".b"):
        fixed = valid_skill_name(bad)
        assert fixed != bad and SKILL_NAME_RE.match(fixed) and len(fixed) <= 64, (bad, fixed)


def test_a_refused_run_in_a_plain_directory_writes_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = isolated_env(tmp_path / "home")
    for args in (["run", "hi"], ["run", "-a", "nope", "hi"], ["run", "--json", "hi"], ["run", "--stream-json", "hi"]):
        result = subprocess.run([BEARAGENT, *args], cwd=plain, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "error:" in result.stderr and "fix:" in result.stderr
        assert list(plain.iterdir()) == [], (args, list(plain.rglob("*")))

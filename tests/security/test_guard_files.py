"""Fail closed (issue 28, item 7): a guard file that is there and does not load stops the run, whatever it is.

`.claude/settings.json` with `deny: [Bash]` that is a symlink into the user's dotfiles used to be skipped with a
note, and its deny rules dropped. Each variant here is a real `bearagent run` that would run a Bash `touch` if the
file were skipped: a symlink out of the workspace (to a valid file), a symlink to nothing, a directory, a FIFO, and
invalid content, for each guard file a workspace can have. The run must refuse (exit 2) naming the file and the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
DENY = json.dumps({"permissions": {"deny": ["Bash"]}})
GUARD_FILES = (".claude/settings.json", ".claude/settings.local.json", ".mcp.json")
KINDS = ("symlink_out", "dangling_symlink", "directory", "fifo", "invalid")


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    script = "turns:\n  - tool_calls: [{name: Bash, arguments: {command: 'touch bash-ran'}}]\n  - text: done\n"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Bash]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=CONFIG)
    user = tmp_path / "home" / "bearagent"
    user.mkdir(parents=True)
    (user / "config.yaml").write_text("permissions: {allow: [Bash]}\n")  # the user's own: Bash runs unless denied
    return root, root / "bash-ran"


def _plant(root: Path, rel: str, kind: str, outside: Path) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink_out":  # a valid file in the user's dotfiles
        outside.write_text(DENY if rel != ".mcp.json" else json.dumps({"mcpServers": {}}))
        path.symlink_to(outside)
    elif kind == "dangling_symlink":
        path.symlink_to(outside.parent / "nothing-here.json")
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text('{"permissions": {"deny": ["Bash"]},}')  # a trailing comma


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rel", GUARD_FILES)
def test_a_guard_file_that_does_not_load_stops_the_run(tmp_path: Path, rel: str, kind: str) -> None:
    root, marker = _workspace(tmp_path)
    _plant(root, rel, kind, tmp_path / "dotfiles-settings.json")
    result = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "go"],
        env=isolated_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,  # generous: a loaded machine starts the CLI slowly; a FIFO must never block it
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert str(root / rel) in result.stderr or rel in result.stderr, result.stderr
    assert "will not run without it" in result.stderr
    assert "fix:" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists(), "nothing ran"


def test_the_control_a_regular_deny_file_loads_and_denies(tmp_path: Path) -> None:
    root, marker = _workspace(tmp_path)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(DENY)
    result = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "go"],
        env=isolated_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "the deny rule held"
    (root / ".claude" / "settings.json").unlink()  # and without it the Bash call runs: the marker can appear
    again = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "go"],
        env=isolated_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert again.returncode == 0 and marker.exists(), again.stderr


def _plant_variant(root: Path, kind: str, outside: Path) -> None:
    claude = root / ".claude"
    if kind == "claude_dir_symlink":  # the directory, not the file, leads into the user's dotfiles
        outside.mkdir()
        (outside / "settings.json").write_text(DENY)
        claude.symlink_to(outside)
        return
    claude.mkdir(exist_ok=True)
    settings = claude / "settings.json"
    if kind == "bad_utf8":
        settings.write_bytes(b'{"permissions": {"deny": ["Bash\xff"]}}')
    elif kind == "top_level_list":
        settings.write_text(json.dumps([{"permissions": {"deny": ["Bash"]}}]))
    elif kind == "deny_not_a_list":
        settings.write_text(json.dumps({"permissions": {"deny": "Bash"}}))
    elif kind == "permissions_not_an_object":
        settings.write_text(json.dumps({"permissions": [{"deny": ["Bash"]}]}))
    elif kind == "too_big":
        settings.write_text(json.dumps({"permissions": {"deny": ["Bash"]}, "pad": "x" * (9 << 20)}))
    else:  # the workspace's own config.yaml (a guard section) broken
        (root / ".bearagent" / "config.yaml").write_text(CONFIG + "permissions: {deny: [Bash]\n")


@pytest.mark.parametrize(
    "kind",
    [
        "claude_dir_symlink",
        "bad_utf8",
        "top_level_list",
        "deny_not_a_list",
        "permissions_not_an_object",
        "too_big",
        "config_yaml_broken",
    ],
)
def test_a_guard_that_does_not_load_whatever_its_shape_stops_the_run(tmp_path: Path, kind: str) -> None:
    root, marker = _workspace(tmp_path)
    _plant_variant(root, kind, tmp_path / "dotfiles")
    result = subprocess.run(
        [BEARAGENT, "run", "-w", str(root), "go"],
        env=isolated_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert not marker.exists(), f"Bash ran past a guard that did not load: {result.stderr}"
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr

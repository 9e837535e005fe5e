"""`Workspace` is made only by `open_workspace(path)`: calling `Workspace()` directly (with or without the private
run service) raises a `TypeError` that names the function to call instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.run_ws import open_ws, scripted_workspace

import bearagent
from bearagent.api import Workspace, runtime_of

SCRIPT = """
turns:
  - text: hello
"""


@pytest.mark.parametrize("args", [(), (object(),)])
def test_direct_construction_names_open_workspace(args: tuple[object, ...]) -> None:
    with pytest.raises(TypeError) as raised:
        Workspace(*args)
    message = str(raised.value)
    assert "bearagent.open_workspace(path)" in message
    assert "Workspace() cannot be constructed directly" in message


def test_public_workspace_name_is_the_same_class() -> None:
    assert bearagent.Workspace is Workspace
    with pytest.raises(TypeError, match=r"open_workspace"):
        bearagent.Workspace()


def test_open_workspace_still_builds_one(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT)
    with open_ws(root, tmp_path / "home") as ws:
        assert isinstance(ws, Workspace)
        assert ws.root == root.resolve()
        assert runtime_of(ws).root == ws.root

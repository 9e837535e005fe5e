"""ActionRegistry and rendering of action templates."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.config_ws import load, only, write

from bearagent.domain.errors import BearAgentError
from bearagent.registries.actions import render_action

REVIEW = """\
---
description: Review a file.
agent: plan
inputs:
  type: object
  properties:
    path: {type: string}
    depth: {type: integer, minimum: 1}
  required: [path]
---
Review $path at depth $depth. All: $ARGUMENTS. Keep $HOME literal.
"""


def test_action_loads_and_renders(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/actions/review.md", REVIEW)
    ws = load(tmp_path, tmp_path / "home")
    action = ws.actions.require("review")
    assert action.agent == "plan"
    text = render_action(action, {"path": "src/a.py", "depth": 2})
    assert text == "Review src/a.py at depth 2. All: path=src/a.py depth=2. Keep $HOME literal."


def test_render_validates_inputs_with_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/actions/review.md", REVIEW)
    ws = load(tmp_path, tmp_path / "home")
    with pytest.raises(BearAgentError) as info:
        render_action(ws.actions.require("review"), {"path": "a", "depth": 0})
    assert "input depth" in info.value.info.message and info.value.info.category == "validation"
    assert info.value.hint and "review" in info.value.hint
    with pytest.raises(BearAgentError) as info:
        render_action(ws.actions.require("review"), {})
    assert "'path' is a required property" in info.value.info.message


def test_default_inputs_take_free_arguments(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/actions/test.md", "---\ndescription: Run tests.\n---\nRun the tests: $ARGUMENTS\n")
    ws = load(tmp_path, tmp_path / "home")
    assert render_action(ws.actions.require("test"), {"arguments": "-k fast"}) == "Run the tests: -k fast"


def test_invalid_schema_and_unknown_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/actions/bad.md",
        "---\ndescription: x\ninputs: {type: object, properties: {a: {type: wrong}}}\n---\nb\n",
    )
    write(tmp_path, ".bearagent/actions/typo.md", "---\ndescription: x\nagnet: plan\n---\nb\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.actions.diagnostics, "action.invalid_inputs")
    assert d.line == 3 and "JSON Schema" in d.message
    assert "did you mean 'agent'" in only(ws.actions.diagnostics, "config.unknown_key").message
    assert ws.actions.get("bad") is None and ws.actions.get("typo") is not None


def test_unknown_action_suggests(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/actions/review.md", REVIEW)
    ws = load(tmp_path, tmp_path / "home")
    with pytest.raises(BearAgentError) as info:
        ws.actions.require("reveiw")
    assert "did you mean 'review'" in info.value.info.message


def test_user_actions_are_shadowed_by_workspace(tmp_path: Path) -> None:
    write(tmp_path, "home/bearagent/actions/review.md", "---\ndescription: user\n---\nu\n")
    write(tmp_path, "ws/.bearagent/actions/review.md", REVIEW)
    ws = load(tmp_path / "ws", tmp_path / "home")
    r = ws.actions.resolved("review")
    assert r and r.source.id == "workspace" and [c.source.id for c in r.shadows] == ["user"]

"""Additional directories (`permissions.additionalDirectories`) are extra roots of the file tools: reachable by an
absolute path, `~/...` or `../...`, resolved race-safely from their own root, and nothing else opens up: a symlink
out of one, or into the workspace, is refused, their control files ask, and deny rules still apply."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.support.tools import call, native_gate

from bearagent.domain._base import JsonValue
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ToolPolicy
from bearagent.tools.roots import ADDITIONAL_DIRECTORIES_SETTING, WorkspaceRoots

SECRET = "OUTSIDE-SENTINEL-7"


class Dirs:
    def __init__(self, base: Path) -> None:
        self.ws = base / "ws"
        self.shared = base / "shared"
        self.outside = base / "outside"
        for d in (self.ws, self.shared, self.outside):
            d.mkdir()
        (self.shared / "notes.md").write_text("shared notes\n")
        (self.shared / "sub").mkdir()
        (self.shared / "sub" / "deep.txt").write_text("deep\n")
        (self.outside / "secret.txt").write_text(SECRET + "\n")
        (self.ws / ".bearagent").mkdir()
        (self.ws / ".bearagent" / "config.yaml").write_text("kind: project\n")
        os.symlink(self.outside / "secret.txt", self.shared / "link_out")
        os.symlink(self.ws / ".bearagent", self.shared / "link_into_ws")
        (self.shared / ".git" / "hooks").mkdir(parents=True)

    @property
    def settings(self) -> dict[str, JsonValue]:
        return {ADDITIONAL_DIRECTORIES_SETTING: [str(self.shared)]}


@pytest.fixture
def dirs(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


def run(dirs: Dirs, name: str, arguments: Mapping[str, object], policy: ToolPolicy | None = None) -> tuple[bool, str]:
    gate = native_gate(policy) if policy is not None else None
    result = asyncio.run(call(dirs.ws, name, arguments, gate=gate, **dirs.settings))
    return result.status == "succeeded", result.content


def test_every_spelling_of_a_path_in_an_additional_directory_reaches_it(
    dirs: Dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(dirs.shared.parent))
    for spelling in (str(dirs.shared / "notes.md"), "../shared/notes.md", "~/shared/notes.md"):
        ok, text = run(dirs, "Read", {"file_path": spelling})
        assert ok and "shared notes" in text, (spelling, text)
    ok, text = run(dirs, "Write", {"file_path": "../shared/new/out.md", "content": "written\n"})
    assert ok, text
    assert (dirs.shared / "new" / "out.md").read_text() == "written\n" and str(dirs.shared.resolve()) in text
    ok, text = run(
        dirs, "Edit", {"file_path": str(dirs.shared / "notes.md"), "old_string": "shared", "new_string": "S"}
    )
    assert ok and (dirs.shared / "notes.md").read_text() == "S notes\n", text
    ok, text = run(dirs, "Glob", {"pattern": "**/*.txt", "path": str(dirs.shared)})
    assert ok and text.strip() == str(dirs.shared.resolve() / "sub" / "deep.txt"), text
    ok, text = run(dirs, "Grep", {"pattern": "deep", "path": "../shared"})
    assert ok and str(dirs.shared.resolve() / "sub" / "deep.txt") in text, text


def test_nothing_else_opens_up(dirs: Dirs) -> None:
    for name, arguments in (
        ("Read", {"file_path": str(dirs.outside / "secret.txt")}),  # another directory
        ("Read", {"file_path": "../outside/secret.txt"}),
        ("Read", {"file_path": str(dirs.shared / "link_out")}),  # a symlink out of the additional directory
        ("Write", {"file_path": str(dirs.shared / "link_out"), "content": "x"}),
        ("Write", {"file_path": str(dirs.shared / "link_into_ws" / "config.yaml"), "content": "kind: chat\n"}),
        ("Read", {"file_path": str(dirs.shared / "link_into_ws" / "config.yaml")}),
        ("Read", {"file_path": str(dirs.shared / ".." / "outside" / "secret.txt")}),
    ):
        ok, text = run(dirs, name, arguments)
        assert not ok and SECRET not in text, (name, arguments, text)
    assert (dirs.outside / "secret.txt").read_text() == SECRET + "\n"
    assert (dirs.ws / ".bearagent" / "config.yaml").read_text() == "kind: project\n"
    refused = run(dirs, "Read", {"file_path": str(dirs.outside / "secret.txt")})[1]
    assert "additional directories" in refused and str(dirs.shared.resolve()) in refused


def test_control_files_of_an_additional_directory_ask_and_deny_rules_reach_it(dirs: Dirs) -> None:
    policy = ToolPolicy(
        mode="acceptEdits",
        rules=PermissionRules.parse(deny=["Read(*.secret)", "Edit(/notes.md)"], root=dirs.ws),
        extra_roots=(str(dirs.shared.resolve()),),
    )
    ok, text = run(
        dirs, "Write", {"file_path": str(dirs.shared / ".git" / "hooks" / "pre-commit"), "content": "x"}, policy
    )
    assert not ok and "control file" in text and not (dirs.shared / ".git" / "hooks" / "pre-commit").exists()
    (dirs.shared / "key.secret").write_text("k\n")
    ok, text = run(dirs, "Read", {"file_path": str(dirs.shared / "key.secret")}, policy)
    assert not ok and "Read(*.secret)" in text  # a rule that matches at any depth reaches additional directories
    ok, text = run(
        dirs, "Edit", {"file_path": str(dirs.shared / "notes.md"), "old_string": "notes", "new_string": "t"}, policy
    )
    assert ok, text  # a rule anchored to the workspace root (`/notes.md`) does not


def test_an_additional_directory_inside_the_workspace_adds_nothing(dirs: Dirs) -> None:
    roots = WorkspaceRoots(dirs.ws, [dirs.ws / ".bearagent", dirs.shared])
    assert roots.extra_roots == (str(dirs.shared.resolve()),)
    assert roots.normalise(str(dirs.ws / "a.txt")) == "a.txt"  # workspace paths stay workspace paths

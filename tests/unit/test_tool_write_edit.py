"""Write and Edit: atomic, artifacts with sha256, clear failures."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

from tests.support.tools import call

from bearagent.domain.tools import ToolResult


def tool(root: Path, name: str, **arguments: object) -> ToolResult:
    return asyncio.run(call(root, name, arguments))


def test_write_creates_parents_and_returns_an_artifact(tmp_path: Path) -> None:
    result = tool(tmp_path, "Write", file_path="outputs/intro.md", content="BearAgent summary\n")
    assert result.status == "succeeded"
    assert (tmp_path / "outputs" / "intro.md").read_text() == "BearAgent summary\n"
    (artifact,) = result.artifacts
    assert artifact.path == "outputs/intro.md" and artifact.size_bytes == 18 and artifact.kind == "text"
    assert artifact.sha256 == "ea27e78a25443e983ec458621fa8017963c69e5d598c368a16c9d5cd65b5ccb6"
    assert "BearAgent summary" not in result.content
    assert result.data is not None and result.data["created"] is True


def test_write_overwrites_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("old")
    os.chmod(target, 0o755)
    inode = target.stat().st_ino
    result = tool(tmp_path, "Write", file_path=str(target), content="#!/bin/sh\necho new\n")
    assert result.status == "succeeded" and result.data is not None and result.data["created"] is False
    assert target.read_text() == "#!/bin/sh\necho new\n"
    assert target.stat().st_mode & 0o777 == 0o755
    assert target.stat().st_ino != inode  # replaced, not written in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_write_into_a_file_used_as_directory_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = tool(tmp_path, "Write", file_path="f/child.txt", content="")
    assert result.status == "failed" and "'f' is not a directory" in result.content


def test_edit_replaces_once_and_returns_an_artifact(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    result = tool(tmp_path, "Edit", file_path="a.py", old_string="y = 2", new_string="y = 3")
    assert result.status == "succeeded", result.content
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3\n"
    assert result.artifacts[0].sha256 == hashlib.sha256(b"x = 1\ny = 3\n").hexdigest()


def test_edit_not_found_and_not_unique(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a = 1\na = 1\n    indented\n")
    missing = tool(tmp_path, "Edit", file_path="a.py", old_string="zzz", new_string="q")
    assert missing.error is not None and missing.error.code == "tool.edit_not_found"
    assert "was not found in 'a.py'" in missing.content and "exact text" in missing.content
    spaces = tool(tmp_path, "Edit", file_path="a.py", old_string="indented\n", new_string="q")
    assert spaces.status == "succeeded"
    ws = tool(tmp_path, "Edit", file_path="a.py", old_string="a=1", new_string="q")
    assert "whitespace is ignored" in ws.content
    twice = tool(tmp_path, "Edit", file_path="a.py", old_string="a = 1", new_string="b = 2")
    assert twice.error is not None and twice.error.code == "tool.edit_not_unique"
    assert "occurs 2 times" in twice.content and "replace_all" in twice.content
    assert (tmp_path / "a.py").read_text().startswith("a = 1\na = 1\n")
    every = tool(tmp_path, "Edit", file_path="a.py", old_string="a = 1", new_string="b = 2", replace_all=True)
    assert every.status == "succeeded" and every.data is not None and every.data["replacements"] == 2


def test_edit_failures(tmp_path: Path) -> None:
    same = tool(tmp_path, "Edit", file_path="a.py", old_string="x", new_string="x")
    assert same.error is not None and same.error.category == "validation" and "identical" in same.content
    missing = tool(tmp_path, "Edit", file_path="nope.py", old_string="x", new_string="y")
    assert missing.status == "failed" and "Use Write to create" in missing.content
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe\x00")
    binary = tool(tmp_path, "Edit", file_path="bin.dat", old_string="x", new_string="y")
    assert binary.status == "failed" and "not valid UTF-8" in binary.content


def test_non_ascii_names_are_fine(tmp_path: Path) -> None:
    result = tool(tmp_path, "Write", file_path="docs/café/naïve 文档.md", content="ok\n")
    assert result.status == "succeeded", result.content
    assert (tmp_path / "docs" / "café" / "naïve 文档.md").read_text() == "ok\n"
    read = tool(tmp_path, "Read", file_path="docs/café/naïve 文档.md")
    assert read.status == "succeeded"

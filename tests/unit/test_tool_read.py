"""Read: line pages, total_lines/next_offset, long lines, binary and non-UTF-8 files."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.tools import call

from bearagent.domain.tools import ToolResult


def read(root: Path, **arguments: object) -> ToolResult:
    return asyncio.run(call(root, "Read", arguments))


def test_reads_a_page_cat_n_style(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "project.md").write_text("# Project\nBearAgent is local-first.\nEvents record facts.\n")
    result = read(tmp_path, file_path="docs\\project.md")
    assert result.status == "succeeded"
    assert result.content == "     1\t# Project\n     2\tBearAgent is local-first.\n     3\tEvents record facts."
    assert result.data is not None
    assert dict(result.data) == {
        "path": "docs/project.md",
        "text": "# Project\nBearAgent is local-first.\nEvents record facts.\n",
        "start_line": 1,
        "end_line": 3,
        "total_lines": 3,
        "next_offset": None,
        "truncated": False,
    }


def test_paging_reports_next_offset(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    first = read(tmp_path, file_path="big.txt", limit=10)
    assert first.data is not None and first.data["next_offset"] == 11 and first.data["total_lines"] == 100
    assert first.truncated and "call Read with offset=11" in first.content
    second = read(tmp_path, file_path=str(tmp_path / "big.txt"), offset=95, limit=10)
    assert second.data is not None and second.data["end_line"] == 100 and second.data["next_offset"] is None
    assert second.content.splitlines()[0] == "    95\tline 95"
    beyond = read(tmp_path, file_path="big.txt", offset=500)
    assert (
        beyond.status == "failed" and "offset 500 is past the end of 'big.txt', which has 100 lines" in beyond.content
    )


def test_long_lines_are_cut(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * 5_000 + "\nshort\n")
    result = read(tmp_path, file_path="min.js")
    assert "[line cut: 3000 more characters]" in result.content
    assert result.data is not None and result.data["lines_cut"] == 1


def test_binary_refused(tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = read(tmp_path, file_path="img.png")
    assert result.error is not None and result.error.code == "tool.binary_file"
    assert "binary file" in result.content and "Use Bash" in result.content


def test_non_utf8_clear_error(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    result = read(tmp_path, file_path="latin.txt")
    assert result.error is not None and result.error.code == "tool.not_utf8"
    assert "not valid UTF-8 (line 2" in result.content and "iconv" in result.content


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = read(tmp_path, file_path="nope.txt")
    assert missing.error is not None and missing.error.code == "tool.not_found"
    assert "does not exist" in missing.content and "Glob" in missing.content
    (tmp_path / "d").mkdir()
    directory = read(tmp_path, file_path="d")
    assert directory.status == "failed" and "a directory" in directory.content


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    result = read(tmp_path, file_path="e.txt")
    assert result.status == "succeeded" and "empty" in result.content
    assert result.data is not None and result.data["total_lines"] == 0

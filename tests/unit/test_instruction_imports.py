"""CLAUDE.md / AGENTS.md `@path` imports: relative to the importing file, nested at most 5 deep, each file once,
never from code, never outside the workspace (no `..`, absolute, `~` or symlink escapes), bounded in size."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.config_ws import codes, load, write

from bearagent.config.instructions import MAX_IMPORT_BYTES, MAX_IMPORT_DEPTH, import_refs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_project"


def test_the_fixture_claude_md_imports_its_conventions_and_what_they_import(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    ws = load(root, tmp_path / "home")
    assert ws.instructions is not None and ws.instructions.path.name == "CLAUDE.md"
    assert ws.instructions.imports == ("docs/conventions.md", "docs/testing.md")
    text = ws.instructions.text
    assert text.startswith("# Project notes")
    assert '<imported path="docs/conventions.md">\n# Conventions' in text and "FIXTURE-TESTING-MARKER" in text
    assert "NOT-IMPORTED-MARKER" not in text  # `@` in a code block is text
    assert "instructions.import_missing" not in codes(ws.diagnostics())  # `@maintainers` is prose, not a path


def test_import_refs_skip_code_and_emails() -> None:
    text = "See @a.md and `@b.md`, mail me@example.com, @./c/d.md.\n```\n@e.md\n```\n"
    assert import_refs(text) == ["a.md", "./c/d.md"]


def test_escapes_and_symlinks_out_are_refused_and_never_read(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(tmp_path, "secret.md", "SECRET-MARKER\n")
    write(root, "AGENTS.md", "@../secret.md @/etc/hostname @~/x.md @link.md @docs/ok.md\n")
    write(root, "docs/ok.md", "OK-MARKER\n")
    (root / "link.md").symlink_to(tmp_path / "secret.md")
    ws = load(root, tmp_path / "home")
    assert ws.instructions is not None and ws.instructions.imports == ("docs/ok.md",)
    assert "SECRET-MARKER" not in ws.instructions.text and "OK-MARKER" in ws.instructions.text
    found = codes(ws.diagnostics())
    assert found.count("instructions.import_refused") == 3 and "workspace.path_refused" in found


def test_depth_cycles_and_size_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "CLAUDE.md", "@l1.md\n")
    for i in range(1, MAX_IMPORT_DEPTH + 3):
        write(root, f"l{i}.md", f"level {i} @l{i + 1}.md @CLAUDE.md\n")
    ws = load(root, tmp_path / "home")
    assert ws.instructions is not None
    assert ws.instructions.imports == tuple(f"l{i}.md" for i in range(1, MAX_IMPORT_DEPTH + 1))
    assert "instructions.import_too_deep" in codes(ws.diagnostics())

    big = tmp_path / "big"
    write(big, "CLAUDE.md", "@a.md @b.md\n")
    write(big, "a.md", "x" * (MAX_IMPORT_BYTES - 10) + "\n")
    write(big, "b.md", "B-MARKER\n" * 10)
    ws = load(big, tmp_path / "home")
    assert ws.instructions is not None and ws.instructions.imports == ("a.md",)
    assert "instructions.imports_cut" in codes(ws.diagnostics())

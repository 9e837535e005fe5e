"""MultiEdit, LS, NotebookRead and NotebookEdit: Claude Code's schemas, atomic writes with artifacts, bounded
output, permission-rule spellings and the workspace's control files."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from tests.support.tools import call, native_gate

from bearagent.domain.tools import ToolResult
from bearagent.tools.gate import ToolGate
from bearagent.tools.ls import MAX_ENTRIES
from bearagent.tools.permissions import PermissionRules
from bearagent.tools.policy import ToolPolicy, suggest_rule


def tool(root: Path, name: str, gate: ToolGate | None = None, **arguments: object) -> ToolResult:
    return asyncio.run(call(root, name, arguments, gate=gate))


def ruled(*, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> ToolGate:
    return native_gate(ToolPolicy(rules=PermissionRules.parse(allow=allow, deny=deny), mode="acceptEdits"))


# ----- MultiEdit -----


def test_multi_edit_applies_edits_in_order_and_returns_an_artifact(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\nz = 1\n")
    result = tool(
        tmp_path,
        "MultiEdit",
        file_path="a.py",
        edits=[
            {"old_string": "y = 2", "new_string": "y = 20"},
            {"old_string": "y = 20\n", "new_string": "y = 20\nw = 3\n"},  # sees the first edit's result
            {"old_string": "1", "new_string": "one", "replace_all": True},
        ],
    )
    assert result.status == "succeeded", result.content
    expected = b"x = one\ny = 20\nw = 3\nz = one\n"
    assert (tmp_path / "a.py").read_bytes() == expected
    assert result.artifacts[0].sha256 == hashlib.sha256(expected).hexdigest()
    assert result.data is not None and list(result.data["replacements"]) == [1, 1, 2]  # type: ignore[call-overload]
    assert "applied 3 edits" in result.content


def test_multi_edit_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("a = 1\na = 1\nb = 2\n")
    before = target.stat().st_ino
    missing = tool(
        tmp_path,
        "MultiEdit",
        file_path="a.py",
        edits=[{"old_string": "b = 2", "new_string": "b = 3"}, {"old_string": "zzz", "new_string": "q"}],
    )
    assert missing.error is not None and missing.error.code == "tool.edit_not_found"
    assert "edits[1]" in missing.content and "none of the 2 edits was applied" in missing.content
    twice = tool(
        tmp_path,
        "MultiEdit",
        file_path="a.py",
        edits=[{"old_string": "b = 2", "new_string": "b = 3"}, {"old_string": "a = 1", "new_string": "c"}],
    )
    assert twice.error is not None and twice.error.code == "tool.edit_not_unique" and "edits[1]" in twice.content
    assert target.read_text() == "a = 1\na = 1\nb = 2\n" and target.stat().st_ino == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]  # no temp file left behind


def test_multi_edit_validation(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x\n")
    empty = tool(tmp_path, "MultiEdit", file_path="a.py", edits=[])
    assert empty.error is not None and empty.error.code == "validation.invalid_arguments" and "edits" in empty.content
    same = tool(tmp_path, "MultiEdit", file_path="a.py", edits=[{"old_string": "x", "new_string": "x"}])
    assert same.error is not None and "edits[0]" in same.content and "identical" in same.content
    extra = tool(tmp_path, "MultiEdit", file_path="a.py", edits=[{"old_string": "x", "new_string": "y", "z": 1}])
    assert extra.error is not None and extra.error.category == "validation"
    new_file = tool(tmp_path, "MultiEdit", file_path="new.py", edits=[{"old_string": "x", "new_string": "y"}])
    assert new_file.status == "failed" and "Use Write to create" in new_file.content
    outside = tool(tmp_path, "MultiEdit", file_path="../x.py", edits=[{"old_string": "x", "new_string": "y"}])
    assert outside.error is not None and outside.error.category == "permission"


# ----- LS -----


def test_ls_lists_a_tree_directories_first_skipping_git_and_ignored(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "m.py").write_text("")
    (tmp_path / "src" / "a.pyc").write_text("")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / "link").symlink_to("/etc/passwd")
    result = tool(tmp_path, "LS", path=".", ignore=["node_modules", "*.pyc"])
    assert result.status == "succeeded", result.content
    assert result.content.splitlines() == [
        "- ./",
        "  - src/",
        "    - pkg/",
        "      - m.py",
        "  - README.md",
        "  - link@",
    ]
    assert result.data is not None and result.data["files"] == 3 and result.data["directories"] == 2
    sub = tool(tmp_path, "LS", path=str(tmp_path / "src"))
    assert sub.content.splitlines()[0] == "- src/" and "a.pyc" in sub.content


def test_ls_is_bounded_and_refuses_escapes(tmp_path: Path) -> None:
    for i in range(MAX_ENTRIES + 50):
        (tmp_path / f"f{i:05}").write_text("")
    result = tool(tmp_path, "LS", path="")
    assert result.truncated and len(result.content.splitlines()) <= MAX_ENTRIES + 3
    assert f"stopped at {MAX_ENTRIES} entries" in result.content
    outside = tool(tmp_path, "LS", path="/etc")
    assert outside.error is not None and outside.error.category == "permission"
    a_file = tool(tmp_path, "LS", path="f00001")
    assert a_file.status == "failed"


def test_ls_hides_what_a_read_deny_hides(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.pem").write_text("")
    (tmp_path / ".env").write_text("")
    (tmp_path / "ok.txt").write_text("")
    result = tool(tmp_path, "LS", gate=ruled(deny=("Read(.env)", "Read(/secrets/**)")), path=".")
    assert result.status == "succeeded", result.content
    assert ".env" not in result.content and "key.pem" not in result.content and "ok.txt" in result.content
    denied = tool(tmp_path, "LS", gate=ruled(deny=("LS(/secrets)",)), path="secrets")
    assert denied.error is not None and "LS(/secrets)" in denied.content


# ----- notebooks -----


def notebook(minor: int = 5) -> dict[str, object]:
    def with_id(cell: dict[str, object], cid: str) -> dict[str, object]:
        return {"id": cid, **cell} if minor >= 5 else cell

    return {
        "nbformat": 4,
        "nbformat_minor": minor,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            with_id({"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "Intro"]}, "intro"),
            with_id(
                {
                    "cell_type": "code",
                    "metadata": {},
                    "execution_count": 2,
                    "source": "print(1)",
                    "outputs": [
                        {"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                        {"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": ["<Figure>"]}},
                        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []},
                    ],
                },
                "code1",
            ),
        ],
    }


def write_nb(path: Path, nb: dict[str, object]) -> None:
    path.write_text(json.dumps(nb, indent=1))


def test_notebook_read_shows_cells_ids_and_outputs(tmp_path: Path) -> None:
    write_nb(tmp_path / "n.ipynb", notebook())
    result = tool(tmp_path, "NotebookRead", notebook_path="n.ipynb")
    assert result.status == "succeeded", result.content
    assert '<cell id="intro" index="0" type="markdown">\n# Title\nIntro\n</cell>' in result.content
    assert '<cell id="code1" index="1" type="code" execution_count="2">\nprint(1)\n</cell>' in result.content
    assert "1\n<Figure>\n[image/png output not shown]\nValueError: bad" in result.content
    assert "AAAA" not in result.content
    assert result.data is not None and result.data["total_cells"] == 2 and result.data["language"] == "python"
    one = tool(tmp_path, "NotebookRead", notebook_path="n.ipynb", cell_id="code1")
    assert "print(1)" in one.content and "Title" not in one.content
    write_nb(tmp_path / "old.ipynb", notebook(minor=4))
    old = tool(tmp_path, "NotebookRead", notebook_path="old.ipynb", cell_id="cell-1")
    assert '<cell id="cell-1" index="1"' in old.content


def test_notebook_read_errors_say_what_is_wrong(tmp_path: Path) -> None:
    write_nb(tmp_path / "n.ipynb", notebook())
    missing = tool(tmp_path, "NotebookRead", notebook_path="n.ipynb", cell_id="nope")
    assert missing.error is not None and missing.error.code == "tool.cell_not_found"
    assert "intro, code1" in missing.content and "NotebookRead" in missing.content
    (tmp_path / "bad.ipynb").write_text('{"cells": [}')
    bad = tool(tmp_path, "NotebookRead", notebook_path="bad.ipynb")
    assert bad.error is not None and bad.error.code == "tool.invalid_notebook" and "line 1" in bad.content
    (tmp_path / "v3.ipynb").write_text('{"nbformat": 3, "cells": []}')
    v3 = tool(tmp_path, "NotebookRead", notebook_path="v3.ipynb")
    assert v3.error is not None and "nbconvert" in v3.content


def test_notebook_read_is_bounded(tmp_path: Path) -> None:
    nb = notebook()
    big = "x" * 15_000
    nb["cells"] = [
        {"id": f"c{i}", "cell_type": "code", "metadata": {}, "source": big, "outputs": []} for i in range(20)
    ]
    write_nb(tmp_path / "big.ipynb", nb)
    result = tool(tmp_path, "NotebookRead", notebook_path="big.ipynb")
    assert result.truncated and len(result.content) < 100_000
    assert "more cells not shown" in result.content and "cell_id" in result.content


def test_notebook_edit_replace_insert_delete(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    write_nb(path, notebook())
    replaced = tool(tmp_path, "NotebookEdit", notebook_path="n.ipynb", cell_id="code1", new_source="x = 2\nx")
    assert replaced.status == "succeeded", replaced.content
    nb = json.loads(path.read_text())
    code = nb["cells"][1]
    assert code["source"] == ["x = 2\n", "x"] and code["outputs"] == [] and code["execution_count"] is None
    assert replaced.artifacts[0].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    first = tool(
        tmp_path, "NotebookEdit", notebook_path="n.ipynb", new_source="import os", cell_type="code", edit_mode="insert"
    )
    assert first.status == "succeeded", first.content
    after = tool(
        tmp_path,
        "NotebookEdit",
        notebook_path="n.ipynb",
        cell_id="intro",
        new_source="## More",
        cell_type="markdown",
        edit_mode="insert",
    )
    nb = json.loads(path.read_text())
    assert [c["cell_type"] for c in nb["cells"]] == ["code", "markdown", "markdown", "code"]
    assert nb["cells"][2]["source"] == ["## More"] and "outputs" not in nb["cells"][2]
    assert after.data is not None and nb["cells"][2]["id"] == after.data["cell_id"] and after.data["index"] == 2
    assert len({c["id"] for c in nb["cells"]}) == 4
    retyped = tool(
        tmp_path, "NotebookEdit", notebook_path="n.ipynb", cell_id="intro", new_source="1+1", cell_type="code"
    )
    assert retyped.status == "succeeded"
    assert json.loads(path.read_text())["cells"][1]["outputs"] == []
    deleted = tool(
        tmp_path, "NotebookEdit", notebook_path="n.ipynb", cell_id="code1", new_source="", edit_mode="delete"
    )
    assert deleted.status == "succeeded" and "3 cells" in deleted.content
    nb = json.loads(path.read_text())
    assert "code1" not in [c["id"] for c in nb["cells"]] and nb["metadata"]["language_info"]["name"] == "python"


def test_notebook_edit_failures_leave_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "n.ipynb"
    write_nb(path, notebook())
    before = path.read_bytes()
    no_type = tool(tmp_path, "NotebookEdit", notebook_path="n.ipynb", new_source="x", edit_mode="insert")
    assert no_type.error is not None and no_type.error.code == "validation.cell_type_required"
    no_id = tool(tmp_path, "NotebookEdit", notebook_path="n.ipynb", new_source="x")
    assert no_id.error is not None and no_id.error.code == "validation.cell_id_required"
    bad_mode = tool(tmp_path, "NotebookEdit", notebook_path="n.ipynb", new_source="x", cell_id="a", edit_mode="move")
    assert bad_mode.error is not None and bad_mode.error.category == "validation"
    unknown = tool(tmp_path, "NotebookEdit", notebook_path="n.ipynb", new_source="x", cell_id="zzz")
    assert unknown.error is not None and unknown.error.code == "tool.cell_not_found"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.ipynb"]


# ----- permission rules and control files -----


@pytest.mark.parametrize(
    ("rules", "name", "arguments"),
    [
        (
            ["MultiEdit(secret.py)"],
            "MultiEdit",
            {"file_path": "secret.py", "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        (
            ["Edit(secret.py)"],
            "MultiEdit",
            {"file_path": "secret.py", "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        (
            ["Read(secret.py)"],
            "MultiEdit",
            {"file_path": "secret.py", "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        (["NotebookEdit(*.ipynb)"], "NotebookEdit", {"notebook_path": "n.ipynb", "new_source": "", "cell_id": "intro"}),
        (["Edit(/n.ipynb)"], "NotebookEdit", {"notebook_path": "n.ipynb", "new_source": "", "cell_id": "intro"}),
        (["Read(n.ipynb)"], "NotebookEdit", {"notebook_path": "n.ipynb", "new_source": "", "cell_id": "intro"}),
        (["Read(n.ipynb)"], "NotebookRead", {"notebook_path": "n.ipynb"}),
        (["NotebookRead"], "NotebookRead", {"notebook_path": "n.ipynb"}),
    ],
)
def test_deny_rules_spelled_as_claude_code_does(
    tmp_path: Path, rules: list[str], name: str, arguments: dict[str, object]
) -> None:
    (tmp_path / "secret.py").write_text("a\n")
    write_nb(tmp_path / "n.ipynb", notebook())
    result = tool(tmp_path, name, gate=ruled(deny=tuple(rules)), **arguments)
    assert result.status == "failed" and result.error is not None
    assert result.error.category == "permission", result.content
    assert (tmp_path / "secret.py").read_text() == "a\n"


def test_allow_rules_cover_the_editing_tools_in_default_mode(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    policy = ToolPolicy(rules=PermissionRules.parse(allow=["Edit(/a.py)"]), mode="default")
    result = tool(
        tmp_path,
        "MultiEdit",
        gate=native_gate(policy),
        file_path="a.py",
        edits=[{"old_string": "a", "new_string": "b"}],
    )
    assert result.status == "succeeded", result.content
    other = tool(
        tmp_path,
        "MultiEdit",
        gate=native_gate(policy),
        file_path="b.py",
        edits=[{"old_string": "a", "new_string": "b"}],
    )
    assert other.status == "failed" and "Edit(/b.py)" in other.content
    assert suggest_rule("NotebookEdit", {"notebook_path": "x/n.ipynb"}, tmp_path) == "Edit(/x/n.ipynb)"
    assert suggest_rule("MultiEdit", {"file_path": "a.py"}, tmp_path) == "Edit(/a.py)"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("MultiEdit", {"file_path": ".claude/settings.json", "edits": [{"old_string": "{}", "new_string": "[]"}]}),
        ("MultiEdit", {"file_path": "AGENTS.md", "edits": [{"old_string": "x", "new_string": "y"}]}),
        ("NotebookEdit", {"notebook_path": ".bearagent/n.ipynb", "new_source": "x", "cell_id": "intro"}),
    ],
)
def test_control_files_are_refused_without_a_person(tmp_path: Path, name: str, arguments: dict[str, object]) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    (tmp_path / "AGENTS.md").write_text("x")
    (tmp_path / ".bearagent").mkdir()
    write_nb(tmp_path / ".bearagent" / "n.ipynb", notebook())
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    result = tool(tmp_path, name, gate=ruled(allow=("Edit", name)), **arguments)
    assert result.status == "failed" and result.error is not None and result.error.category == "permission"
    assert "control file" in result.content
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before

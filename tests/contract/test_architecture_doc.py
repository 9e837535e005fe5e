"""docs/architecture.md is drawn from the code: its layer table is `LAYERS` of the import-graph test, row for row,
and every module of `service/` and `app/` (the rooms issue 30 made) is named in its tree."""

from __future__ import annotations

import re
from pathlib import Path

from tests.contract.test_import_graph import LAYERS, PACKAGE

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
_ROW = re.compile(r"^\| (\d+) \| (.+) \|$")


def doc_layers(text: str) -> list[tuple[str, int]]:
    """The rows of the layer table: `| rank | `room`, `room` |`."""
    out: list[tuple[str, int]] = []
    for line in text.splitlines():
        match = _ROW.match(line.strip())
        if match:
            out.extend((room, int(match.group(1))) for room in re.findall(r"`([^`]+)`", match.group(2)))
    return out


def test_layer_table_is_layers() -> None:
    documented = doc_layers(DOC.read_text(encoding="utf-8"))
    assert documented, "docs/architecture.md has no layer table (`| rank | rooms |`)"
    assert sorted(documented) == sorted(LAYERS), (
        "docs/architecture.md's layer table and LAYERS in tests/contract/test_import_graph.py disagree: "
        f"only in the doc {sorted(set(documented) - set(LAYERS))}, only in LAYERS {sorted(set(LAYERS) - set(documented))}"
    )


def test_every_service_and_app_module_is_in_the_tree() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [
        f"{room}/{path.name}"
        for room in ("service", "app")
        for path in sorted((PACKAGE / room).glob("*.py"))
        if path.name != "__init__.py" and not re.search(rf"^\s+{re.escape(path.name)}\s", text, re.MULTILINE)
    ]
    assert not missing, f"docs/architecture.md's tree does not name {missing}: add a line for each"


def test_doc_layers_reads_a_table() -> None:
    table = "| layer | rooms |\n|---|---|\n| 0 | `a`, `b` |\n| 3 | `c` |\n"
    assert doc_layers(table) == [("a", 0), ("b", 0), ("c", 3)]

"""Jupyter notebooks (nbformat 4 JSON) for NotebookRead and NotebookEdit: parsing with errors that say what is
wrong, cell ids (the cell's `id`, or `cell-N` by position for notebooks older than nbformat 4.5), bounded rendering
of cells and their outputs, and the on-disk form (`indent=1`, as Jupyter writes it)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, cast

from bearagent.tools.base import tool_error

MAX_SOURCE_CHARS = 20_000
MAX_OUTPUT_CHARS = 5_000
MAX_RENDER_CHARS = 90_000
CELL_TYPES = ("code", "markdown", "raw")

Notebook = dict[str, Any]
Cell = dict[str, Any]


def parse_notebook(raw: bytes, rel: str) -> Notebook:
    """The notebook in `raw`; a tool error naming the problem when it is not nbformat 4 JSON."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise tool_error(
            "tool", "not_utf8", f"{rel!r} is not UTF-8, so it is not a Jupyter notebook.", path=rel
        ) from None
    except json.JSONDecodeError as exc:
        raise tool_error(
            "tool",
            "invalid_notebook",
            f"{rel!r} is not valid notebook JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). Fix or "
            "regenerate the file in Jupyter, or use Read/Edit on it as text.",
            path=rel,
            line=exc.lineno,
        ) from None
    if not isinstance(data, dict) or not isinstance(cast(dict[str, Any], data).get("cells"), list):
        raise tool_error(
            "tool",
            "invalid_notebook",
            f"{rel!r} is JSON but not a Jupyter notebook: it has no top-level 'cells' list.",
            path=rel,
        )
    notebook = cast(Notebook, data)
    if notebook.get("nbformat") != 4:
        raise tool_error(
            "tool",
            "unsupported_notebook",
            f"{rel!r} is nbformat {notebook.get('nbformat')!r}; the notebook tools read and write nbformat 4. "
            "Convert it with `jupyter nbconvert --to notebook --nbformat 4`.",
            path=rel,
        )
    for i, cell in enumerate(cells(notebook)):
        if not isinstance(cell, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise tool_error("tool", "invalid_notebook", f"{rel!r}: cells[{i}] is not an object.", path=rel)
    return notebook


def cells(notebook: Notebook) -> list[Cell]:
    return cast(list[Cell], notebook["cells"])


def cell_id(cell: Cell, index: int) -> str:
    value = cell.get("id")
    return value if isinstance(value, str) and value else f"cell-{index}"


def find_cell(notebook: Notebook, wanted: str, rel: str) -> int:
    """The index of the cell `wanted` names (its id, or `cell-N`); a tool error listing the ids otherwise."""
    all_cells = cells(notebook)
    for i, cell in enumerate(all_cells):
        if cell.get("id") == wanted:
            return i
    if wanted.startswith("cell-") and wanted[5:].isdigit() and int(wanted[5:]) < len(all_cells):
        return int(wanted[5:])
    known = [cell_id(c, i) for i, c in enumerate(all_cells[:20])]
    more = f" (and {len(all_cells) - 20} more)" if len(all_cells) > 20 else ""
    raise tool_error(
        "tool",
        "cell_not_found",
        f"{rel!r} has no cell {wanted!r}. Its cells: {', '.join(known) or '(none)'}{more}. Use NotebookRead to "
        "see them.",
        path=rel,
    )


def uses_ids(notebook: Notebook) -> bool:
    """Whether cells carry ids (nbformat 4.5 and later, or any cell already has one)."""
    minor = notebook.get("nbformat_minor")
    return (isinstance(minor, int) and minor >= 5) or any("id" in c for c in cells(notebook))


def new_cell(notebook: Notebook, cell_type: str, source: str) -> Cell:
    cell: Cell = {"cell_type": cell_type, "metadata": {}, "source": split_source(source)}
    if uses_ids(notebook):
        taken = {c.get("id") for c in cells(notebook)}
        new_id = secrets.token_hex(4)
        while new_id in taken:
            new_id = secrets.token_hex(4)
        cell = {"id": new_id, **cell}
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def set_source(cell: Cell, source: str, cell_type: str | None) -> None:
    """Replace a cell's source (and type); a code cell's old outputs no longer describe it, so they go."""
    cell["source"] = split_source(source)
    kind = cell_type or cell.get("cell_type")
    cell["cell_type"] = kind
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    else:
        cell.pop("execution_count", None)
        cell.pop("outputs", None)


def split_source(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def text_of(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "".join(v for v in cast(Sequence[object], value) if isinstance(v, str))
    return ""


def dump(notebook: Notebook) -> bytes:
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters]"


def render_outputs(cell: Cell) -> str:
    parts: list[str] = []
    raw = cell.get("outputs")
    for output in cast(list[object], raw) if isinstance(raw, list) else []:
        if not isinstance(output, Mapping):
            continue
        out = cast(Mapping[str, object], output)
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(text_of(out.get("text")))
        elif kind == "error":
            parts.append(f"{text_of(out.get('ename'))}: {text_of(out.get('evalue'))}")
        elif kind in ("execute_result", "display_data"):
            data = out.get("data")
            bundle: Mapping[str, object] = cast(Mapping[str, object], data) if isinstance(data, Mapping) else {}
            if "text/plain" in bundle:
                parts.append(text_of(bundle["text/plain"]))
            for mime in bundle:
                if mime != "text/plain":
                    parts.append(f"[{mime} output not shown]")
    return _cut("\n".join(p.rstrip("\n") for p in parts if p), MAX_OUTPUT_CHARS)


def render_cell(cell: Cell, index: int) -> str:
    kind = cell.get("cell_type")
    head = f'<cell id="{cell_id(cell, index)}" index="{index}" type="{kind}"'
    count = cell.get("execution_count")
    if kind == "code" and isinstance(count, int):
        head += f' execution_count="{count}"'
    text = f"{head}>\n{_cut(text_of(cell.get('source')), MAX_SOURCE_CHARS)}\n</cell>"
    outputs = render_outputs(cell) if kind == "code" else ""
    if outputs:
        text += f"\n<outputs>\n{outputs}\n</outputs>"
    return text

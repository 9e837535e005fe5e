"""The ```python blocks of a docs page, for the tests that run the docs' examples as written: one owner for finding
a block by its first line (exactly one must start so, or the test names the page and the line) and for importing
one as a module."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def python_blocks(page: str) -> list[str]:
    """Every python block of `page` (a path from the repository root, e.g. "docs/plugins.md"), in order."""
    return PYTHON_BLOCK.findall((REPO / page).read_text(encoding="utf-8"))


def doc_block(page: str, first_line: str) -> str:
    """The one python block of `page` that starts with `first_line`."""
    blocks = [b for b in python_blocks(page) if b.startswith(first_line)]
    assert len(blocks) == 1, f"{page} must have one python block starting with {first_line!r}"
    return blocks[0]


def import_doc_block(page: str, first_line: str, directory: Path, name: str) -> ModuleType:
    """That block written to `directory`/`name`.py and imported as the module `name`."""
    path = directory / f"{name}.py"
    path.write_text(doc_block(page, first_line), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

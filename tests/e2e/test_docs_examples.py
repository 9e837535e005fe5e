"""Every ```python block of the user docs runs, in a fresh copy of the quickstart workspace."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = ["docs/python-api.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _blocks() -> list[tuple[str, int, str]]:
    out: list[tuple[str, int, str]] = []
    for doc in DOCS:
        text = (REPO / doc).read_text(encoding="utf-8")
        for index, match in enumerate(BLOCK.finditer(text)):
            out.append((doc, index, match.group(1)))
    return out


@pytest.mark.parametrize(("doc", "index", "code"), _blocks(), ids=lambda v: str(v) if isinstance(v, int) else None)
def test_doc_example_runs(doc: str, index: int, code: str, tmp_path: Path) -> None:
    ws = tmp_path / "quickstart"
    shutil.copytree(
        REPO / "examples" / "quickstart",
        ws,
        ignore=shutil.ignore_patterns("state.db*", "outputs", "locks", "transcripts"),
    )
    env = dict(os.environ)
    env.update({"BEARAGENT_HOME": str(tmp_path / "home"), "BEARAGENT_LOAD_PLUGINS": ""})
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{doc} example #{index} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{doc} example #{index} printed nothing"

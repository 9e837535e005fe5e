"""Write docs/cli.md from the click help of every command (`--check` exits 1 when the file is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

from bearagent.cli import main
from bearagent.cli.docs import render_cli_docs

TARGET = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def run() -> int:
    text = render_cli_docs(main)
    if "--check" in sys.argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print("docs/cli.md is stale: run `uv run python scripts/gen_cli_docs.py`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run())

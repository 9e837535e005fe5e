"""Regenerate the committed JSON Schemas after a deliberate change of a public data shape.

    uv run python scripts/update_schemas.py          # write the files
    uv run python scripts/update_schemas.py --check  # exit 1 if a file is out of date (what CI checks)

Writes tests/contract/snapshots/domain_schemas.json (every public domain model) and schemas/stream.schema.json (the
live stream protocol). Review the diff before committing it: it is the change other components will see.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bearagent.domain.schema import domain_schemas, render_schemas
from bearagent.domain.stream import stream_json_schema

ROOT = Path(__file__).resolve().parent.parent
DOMAIN_SNAPSHOT = ROOT / "tests" / "contract" / "snapshots" / "domain_schemas.json"
STREAM_SCHEMA = ROOT / "schemas" / "stream.schema.json"


def expected_files() -> dict[Path, str]:
    return {
        DOMAIN_SNAPSHOT: render_schemas(domain_schemas()),
        STREAM_SCHEMA: render_schemas(stream_json_schema()),
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale: list[Path] = []
    for path, text in expected_files().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if check and stale:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date", file=sys.stderr)
        print("run: uv run python scripts/update_schemas.py (then review and commit the diff)", file=sys.stderr)
        return 1
    if not stale:
        print("schemas are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

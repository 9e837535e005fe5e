"""Regenerate the snapshot of the public API after a deliberate change of a public name or signature.

    uv run python scripts/update_public_api.py          # write the file
    uv run python scripts/update_public_api.py --check  # exit 1 if it is out of date (what the test checks)

Writes tests/contract/snapshots/public_api.json: every name exported by `bearagent` (the user namespace) and
`bearagent.plugin` (the plugin-author namespace), with its signature, fields or members. Review the diff before
committing it: it is the change users and plugin authors will see (docs/plugins.md, "The public API").
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.public_api import SNAPSHOT, public_api, render  # noqa: E402


def main(argv: list[str]) -> int:
    text = render(public_api())
    current = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else None
    if current == text:
        print("the public API snapshot is up to date")
        return 0
    if "--check" in argv:
        print(f"{SNAPSHOT.relative_to(ROOT)} is out of date", file=sys.stderr)
        print("run: uv run python scripts/update_public_api.py (then review and commit the diff)", file=sys.stderr)
        return 1
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

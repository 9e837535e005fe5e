"""A trust item's file fingerprint: the sha256 of its first 16 MiB (a leaf: `collector` and `reach` both use it)."""

from __future__ import annotations

import hashlib
from pathlib import Path

MAX_HASHED_FILE_BYTES = 16 * 1024 * 1024


def hash_file(path: Path) -> str:
    """The hex sha256 of `path`'s first `MAX_HASHED_FILE_BYTES`, or `unreadable: <why>` (a change either way)."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            remaining = MAX_HASHED_FILE_BYTES
            while remaining > 0:
                chunk = handle.read(min(1 << 20, remaining))
                if not chunk:
                    break
                digest.update(chunk)
                remaining -= len(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return digest.hexdigest()

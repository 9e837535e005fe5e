"""A caller's subject as the server keeps it: whole, or hashed when long, never cut.

Sessions, runs and approvals are owned by `subject_ref` (stored in fields of at most 256 characters). Cutting a long
`sub` (a JWT's, a gateway header's) at 256 would give two callers who share that prefix one owner. So a subject up
to `KEEP` characters is kept as is; a longer one, or one that could be mistaken for a hashed one (it contains the
marker), becomes its first `PREFIX` characters (for people reading logs) + the marker + the SHA-256 of the whole
subject. No kept subject can equal a hashed one, and two hashed ones are equal only if the subjects are.
"""

from __future__ import annotations

import hashlib

KEEP = 200
PREFIX = 120
MARKER = "#sha256:"


def subject_ref(subject: str) -> str:
    """The subject's stored form (at most 200 characters; see the module docstring)."""
    if len(subject) <= KEEP and MARKER not in subject:
        return subject
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{subject[:PREFIX]}{MARKER}{digest}"

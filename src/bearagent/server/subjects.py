"""A caller's subject as the server keeps it: whole, or hashed when long, never cut.

Sessions, runs and approvals are owned by `subject_ref` (stored in fields of at most 256 characters). Cutting a long
`sub` (a JWT's, a gateway header's) at 256 would give two callers who share that prefix one owner. So a subject up
to `KEEP` characters is kept as is; a longer one, or one that could be mistaken for a hashed one (it contains the
marker), becomes its first `PREFIX` characters (for people reading logs) + the marker + the SHA-256 of the whole
subject. No kept subject can equal a hashed one, and two hashed ones are equal only if the subjects are.

The names BearAgent itself gives callers are not a gateway's to give: `local` (the server's local token, and every
run and session started on the machine: CLI, Python API, worker) and `local:<uid>` (the initiator of a run started
on the machine). A JWT's `sub` or a proxy's subject header spelled like one (`local`, `local:0`, any case or
surrounding space) is hashed as well, so a gateway user who picked that name sees none of the machine's sessions and
cannot answer or cancel its runs.
"""

from __future__ import annotations

import hashlib

KEEP = 200
PREFIX = 120
MARKER = "#sha256:"


LOCAL = "local"
"""The subject of the local token and of whatever is started on the machine (never a gateway's)."""


def _reserved(subject: str) -> bool:
    folded = subject.strip().casefold()
    return folded == LOCAL or folded.startswith(LOCAL + ":")


def subject_ref(subject: str) -> str:
    """A gateway's subject (a JWT's `sub`, a proxy's header) in its stored form: at most 200 characters, never one
    of BearAgent's own caller names (see the module docstring)."""
    if len(subject) <= KEEP and MARKER not in subject and not _reserved(subject):
        return subject
    digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{subject[:PREFIX]}{MARKER}{digest}"

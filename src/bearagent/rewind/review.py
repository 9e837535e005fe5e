"""`sandbox.review`, review after the fact: one Bash call's recorded changes as a bounded text for the approval
prompt, and their revert from the blob store when the answer is no (`runtime/review.py` asks and records).

The command ran in the workspace (bubblewrap 0.8 has no overlay to hold its writes back): its changes are visible
while it runs and until the answer, and a background process it started may write after the capture. The revert
is `rewind/restore.py`'s for that call alone: a path changed since the capture (by someone else) is named and left
as it is, and a content over the blob store's limit cannot be put back and is named.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from bearagent.domain.run_events import FilesChangedV1, FilesRewoundV1
from bearagent.rewind.diff import run_diff
from bearagent.rewind.restore import Plan, Step, apply_rewind
from bearagent.rewind.tree import BlobStore, current_state, equal_states

REVIEW_SETTING = "sandbox_review"
"""ToolContext.settings key: `sandbox.review` (`sandbox/request.py` sets it from the merged config)."""
MAX_SHOWN_BYTES = 3_500
"""The diff shown in the approval prompt (its `reason`, at most 4,000 characters as a fact)."""


def review_text(changed: FilesChangedV1, blobs: BlobStore) -> str:
    """The call's changes as a bounded unified diff, the paths first (what the person approves or refuses)."""

    def read(sha: str) -> bytes | None:
        with contextlib.suppress(OSError, ValueError):
            return blobs.get(sha)
        return None

    call = str(changed.tool_call_id) if changed.tool_call_id is not None else None
    shown = run_diff("", call, [(call, changed.tool_name, c) for c in changed.changes], read, max_files=20)
    lines = [f"The Bash call changed {len(changed.changes)} path(s) (sandbox.review is on):"]
    lines += [f"  {f.action} {f.path}" for f in shown.files]
    if shown.omitted_files:
        lines.append(f"  and {shown.omitted_files} more")
    for f in shown.files:
        lines.append(f.diff if f.diff is not None else f"── {f.action} {f.path}: {f.note or ''}")
    text = "\n".join(lines)
    if len(text) > MAX_SHOWN_BYTES:
        text = text[:MAX_SHOWN_BYTES] + "\n[diff cut: see `bearagent runs diff RUN --call ID`]"
    return text + "\nApprove to keep these changes; deny to revert them."


@dataclasses.dataclass(frozen=True, slots=True)
class Reverted:
    event: FilesRewoundV1 | None
    """The revert as a fact (None: nothing could be put back)."""
    unrestorable: tuple[str, ...]
    """Paths whose content before was over the blob store's limit: left as the command made them."""
    changed_since: tuple[str, ...]
    """Paths changed since the capture by someone else: left as they are."""


def revert_call(root: Path, changed: FilesChangedV1, blobs: BlobStore) -> Reverted:
    """Put back what one call changed, from its own `FilesChanged` (restore's plan for that call alone)."""
    steps: list[Step] = []
    unrestorable: list[str] = []
    changed_since: list[str] = []
    for change in sorted(changed.changes, key=lambda c: c.path):
        now = current_state(root, change.path)
        if equal_states(now, change.before):
            continue
        if not equal_states(now, change.after):
            changed_since.append(change.path)
            continue
        if change.before is not None and change.before.kind == "file" and not change.before.restorable:
            unrestorable.append(change.path)
            continue
        steps.append(Step(change.path, now, change.before, change.after))
    if not steps:
        return Reverted(None, tuple(unrestorable), tuple(changed_since))
    done = apply_rewind(root, Plan(tuple(steps), (), (), True), blobs, force=False)
    event = done.model_copy(update={"to_tool_call_id": changed.tool_call_id})
    return Reverted(event, tuple(unrestorable), tuple(changed_since))

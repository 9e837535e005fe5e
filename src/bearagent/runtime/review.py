"""`sandbox.review: true`, review after the fact: a Bash call that changed workspace files asks for approval of its
changes (shown as a bounded diff) through the run's asker, with the same approval facts as a tool call's
(`ApprovalRequested` / `ApprovalResolved`, `runtime/approvals.py`). Approved: nothing more. Denied, or nobody
attached to answer (a headless run, a run whose questions suspend it): the call's changes are reverted from the
blob store (`rewind/review.py`), the revert is a `FilesRewound` fact, and the model's result says the changes were
refused and reverted, naming any path that could not be put back (a content over the blob store's limit, a path
changed since by someone else).
"""

from __future__ import annotations

import asyncio
from typing import cast

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.run_events import FilesChangedV1
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import AskAnswer, Asker, AskRequest, ToolContext
from bearagent.rewind.capture import capture_for
from bearagent.rewind.review import REVIEW_SETTING, revert_call, review_text
from bearagent.runtime.approvals import ApprovalBroker
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import ToolCaller
from bearagent.runtime.recorder import RunRecorder


def review_on(context: ToolContext) -> bool:
    return context.settings.get(REVIEW_SETTING) is True


def _asker(gate: ToolCaller) -> Asker | None:
    """The gate's asker when someone attached can answer now (a broker without a person would suspend the run)."""
    asker = cast(Asker | None, getattr(gate, "asker", None))
    if isinstance(asker, ApprovalBroker) and not asker.attached:
        return None
    return asker


async def review_changes(
    gate: ToolCaller,
    context: ToolContext,
    request: ToolRequest,
    result: ToolResult,
    changed: FilesChangedV1,
    recorder: RunRecorder,
    observer: RunObserver,
) -> ToolResult:
    """Ask about `changed` (the call's recorded changes); the result as the model gets it (see the module doc)."""
    capture = capture_for(context.workspace_root)
    asker = _asker(gate)
    answer: AskAnswer = "deny"
    if asker is not None:
        text = await asyncio.to_thread(review_text, changed, capture.blobs)
        answer = await asker(AskRequest(request.name, request.arguments, text, None, context, review=True))
        if answer != "deny":
            return result
        why = "the user denied them"
    else:
        why = "nobody could approve them in this run (a non-interactive run denies an unanswered approval)"
    try:
        reverted = await asyncio.to_thread(revert_call, context.workspace_root, changed, capture.blobs)
    except (OSError, ValueError) as exc:
        message = (
            f"sandbox.review: this Bash call's file changes were refused ({why}), but reverting them failed: {exc}. "
            "The changes are still in the workspace; `bearagent rewind RUN --to CALL_ID` retries the revert."
        )
        observer.notice(recorder.run_id, message)
        return ToolResult.failure(request, ErrorInfo.of("permission", "review_revert_failed", message[:2_000]))
    finally:
        capture.forget()  # the tree changed under the capture's index: its next look re-reads what differs
    if reverted.event is not None:
        await recorder.append(reverted.event)
    left: list[str] = []
    if reverted.unrestorable:
        left.append(
            "not restorable (their content before was over the blob store's limit, `rewind.max_file_size`), left "
            "as the command made them: " + ", ".join(reverted.unrestorable[:20])
        )
    if changed.unrecorded:
        left.append(f"{changed.unrecorded} change(s) seen but not recorded (over the record's limit)")
    if reverted.changed_since:
        left.append("changed since by someone else, left as they are: " + ", ".join(reverted.changed_since[:20]))
    count = len(reverted.event.changes) if reverted.event is not None else 0
    message = (
        f"sandbox.review: this Bash call's file changes were refused ({why}) and reverted: {count} path(s) put "
        "back as they were before the call. Do not run it again unless the user asks for it."
    )
    if left:
        message += " Not reverted: " + "; ".join(left) + "."
        observer.notice(recorder.run_id, "sandbox.review: " + "; ".join(left))
    output = result.content[:600]
    if output:
        message += f"\nThe command's own output was:\n{output}"
    return ToolResult.failure(request, ErrorInfo.of("permission", "review_denied", message[:2_000]))

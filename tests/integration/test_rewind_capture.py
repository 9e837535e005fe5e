"""The capture on real files: a call whose process died before recording is recorded late by the next process; a
content over the blob store's limit is recorded by hash as not restorable, and a rewind that needs it names it."""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

import pytest

from bearagent.domain.events import Event
from bearagent.domain.ids import EventId, RunId
from bearagent.rewind.capture import WorkspaceCapture
from bearagent.rewind.restore import apply_rewind, plan_rewind
from bearagent.rewind.tree import BlobStore

CALL = "50000000-0000-4000-8000-0000000000a1"
NEXT = "50000000-0000-4000-8000-0000000000a2"


def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".bearagent").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    return root


def test_a_call_whose_process_died_is_recorded_late_by_the_next(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    dead = WorkspaceCapture(root)
    dead.before("run-1", CALL, "Bash")
    (root / "a.txt").write_text("changed by the call\n")  # ... and the process is killed before `after`

    fresh = WorkspaceCapture(root)  # the next process
    assert fresh.pending() == {"run_id": "run-1", "tool_call_id": CALL, "tool_name": "Bash"}
    _scan, late = fresh.before("run-2", NEXT, "Bash")
    assert late is not None and str(late.tool_call_id) == CALL and late.note is not None
    assert [(c.path, c.before is not None, c.after is not None) for c in late.changes] == [("a.txt", True, True)]
    assert late.changes[0].before is not None
    assert late.changes[0].before.sha256 == hashlib.sha256(b"a\n").hexdigest()
    assert fresh.after(NEXT, "Bash").changes == ()
    assert fresh.pending() is None


def test_content_over_the_limit_is_recorded_by_hash_and_a_rewind_names_it(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    (root / "big.bin").write_bytes(b"x" * 100)
    capture = WorkspaceCapture(root, BlobStore(root / ".bearagent" / "blobs", max_file_bytes=50))
    capture.before("run", CALL, "Bash")
    (root / "big.bin").write_bytes(b"y" * 10)
    changed = capture.after(CALL, "Bash")
    before = changed.changes[0].before
    assert before is not None and not before.restorable and before.sha256 == hashlib.sha256(b"x" * 100).hexdigest()

    event = Event(
        event_id=EventId.new(),
        run_id=RunId.new(),
        sequence=1,
        event_type="FilesChanged",
        schema_version=1,
        occurred_at=datetime.datetime.now(datetime.UTC),
        payload=changed.model_dump(mode="json"),
    )
    plan = plan_rewind(root, [[event]])
    assert plan.unrestorable == ("big.bin",)
    with pytest.raises(ValueError, match=r"not restorable.*big\.bin"):
        apply_rewind(root, plan, capture.blobs, force=False)
    assert (root / "big.bin").read_bytes() == b"y" * 10  # left as it is


def test_a_rewind_never_writes_through_a_parent_that_leads_out(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "d").mkdir()
    (root / "d" / "f").write_text("mine\n")
    capture = WorkspaceCapture(root)
    capture.before("run", CALL, "Bash")
    (root / "d" / "f").unlink()
    (root / "d").rmdir()
    changed = capture.after(CALL, "Bash")
    (root / "d").symlink_to(outside)  # someone else puts a link where the directory was
    event = Event(
        event_id=EventId.new(),
        run_id=RunId.new(),
        sequence=1,
        event_type="FilesChanged",
        schema_version=1,
        occurred_at=datetime.datetime.now(datetime.UTC),
        payload=changed.model_dump(mode="json"),
    )
    plan = plan_rewind(root, [[event]])
    assert "d" in plan.conflicts
    apply_rewind(root, plan, capture.blobs, force=True)  # forced: the link is replaced by the directory again
    assert (root / "d").is_dir() and not (root / "d").is_symlink() and (root / "d" / "f").read_text() == "mine\n"
    assert list(outside.iterdir()) == []

"""The capture on real files: a call whose process died before recording is recorded late by the next process; a
content over the blob store's limit is recorded by hash as not restorable, and a rewind that needs it names it."""

from __future__ import annotations

import datetime
import hashlib
import os
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
    marker = fresh.pending()  # the same pid here: a call this capture did not start is another process's
    assert marker is not None
    assert {k: marker[k] for k in ("run_id", "tool_call_id", "tool_name")} == {
        "run_id": "run-1",
        "tool_call_id": CALL,
        "tool_name": "Bash",
    }
    _scan, found = fresh.before("run-2", NEXT, "Bash")
    assert found is not None and found.run_id == "run-1"
    late = found.event
    assert str(late.tool_call_id) == CALL and late.note is not None
    assert [(c.path, c.before is not None, c.after is not None) for c in late.changes] == [("a.txt", True, True)]
    assert late.changes[0].before is not None
    assert late.changes[0].before.sha256 == hashlib.sha256(b"a\n").hexdigest()
    assert fresh.after(NEXT, "Bash").changes == ()
    assert fresh.pending() is None


def _other_marker(root: Path, pid: int, run_id: str, tool_call_id: str) -> Path:
    """The marker another process (`pid`) writes for its call in flight (`rewind/markers.py`)."""
    import json

    from bearagent.rewind.markers import marker_name
    from bearagent.runtime.processes import process_start

    start = process_start(pid)
    folder = root / ".bearagent" / "rewind" / "pending"
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / marker_name(pid, start, tool_call_id)
    body = {"run_id": run_id, "tool_call_id": tool_call_id, "tool_name": "Bash", "pid": str(pid)}
    marker.write_text(json.dumps({**body, "process_start": str(start)}))
    return marker


def test_a_call_still_running_in_a_live_process_is_not_taken_for_a_dead_one(tmp_path: Path) -> None:
    """Workers run Bash calls of one workspace at once: the marker of a call in flight, in this process or in
    another live one, is not a dead call's, so the next call records nothing late into the other call's run. Each
    call has its own marker: a later call does not replace an earlier one's."""
    import subprocess
    import sys

    root = _ws(tmp_path)
    mine = WorkspaceCapture(root)
    mine.before("run-1", CALL, "Bash")
    assert mine.pending() is None, "this process's own call in flight"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        marker = _other_marker(root, other.pid, "run-9", NEXT)
        assert mine.pending() is None, "a live process's call"
        third = "50000000-0000-4000-8000-0000000000a3"
        _scan, late = mine.before("run-2", third, "Bash")
        assert late is None and marker.exists(), "another call's marker is its own, not replaced"
        mine.after(third, "Bash")
        mine.after(CALL, "Bash")
    finally:
        other.kill()
        other.wait()
    found = WorkspaceCapture(root).pending()
    assert found is not None and found["run_id"] == "run-9", "its process died: now it is a dead call"


def test_changes_another_process_took_in_while_a_dead_call_ran_are_in_its_late_record(tmp_path: Path) -> None:
    """Two processes with calls in flight in one workspace: a look of one takes in the other's changes (the tree is
    shared). A look before a call keeps them in the other call's absorbed file, a look after a call names where it
    recorded them; when the other process is killed, its late record has its changes and names the rest, and
    this process's own record is its own call's."""
    import subprocess
    import sys

    root = _ws(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    mine = WorkspaceCapture(root)
    mine.before("run-1", CALL, "Bash")  # the tree as it was before both calls
    mine.after(CALL, "Bash")
    try:
        marker = _other_marker(root, other.pid, "run-9", NEXT)
        (root / "a.txt").write_text("by the other call\n")  # the other process's call writes ...
        third = "50000000-0000-4000-8000-0000000000a3"
        mine.before("run-1", third, "Bash")  # ... this look takes it in, unrecorded
        (root / "mine.txt").write_text("mine\n")
        (root / "both.txt").write_text("written while both ran\n")
        own = mine.after(third, "Bash")
        assert {c.path for c in own.changes} == {"mine.txt", "both.txt"}, "this call's record is its own"
        assert marker.with_name(marker.name.removesuffix(".json") + ".absorbed.jsonl").exists()
    finally:
        other.kill()
        other.wait()
    fresh = WorkspaceCapture(root)
    late = fresh.settle("run-9")
    assert late is not None and late.run_id == "run-9" and str(late.event.tool_call_id) == NEXT
    assert [c.path for c in late.event.changes] == ["a.txt"]
    before = late.event.changes[0].before
    assert before is not None and before.sha256 == hashlib.sha256(b"a\n").hexdigest()
    assert late.event.note is not None and f"call {third} of run run-1 (both.txt, mine.txt)" in late.event.note
    fresh.settled()
    assert fresh.pending() is None and not list(marker.parent.iterdir()), "the marker and its absorbed file went"


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


STEPS = [
    "echo changed > a.txt",  # in place
    "mkdir -p deep/er/dir && echo x > deep/er/dir/f && printf '\\000\\377' > deep/bin",  # a new subtree
    "chmod 700 deep/er && ln -s a.txt link && sed -i s/changed/CHANGED/ a.txt",
    "mv deep moved",  # a directory renamed: the watcher asks for a full scan
    "rm -rf moved/er && rm link",  # a subtree removed
    "true",  # nothing
    "mkdir d2 && cd d2 && mkdir -p x/y && touch x/y/z && cd .. && rm -r d2/x",  # made and removed in one call
]


def _calls(root: Path, capture: WorkspaceCapture, outside: bool) -> list[list[tuple[str, str | None, str | None]]]:
    import subprocess

    out: list[list[tuple[str, str | None, str | None]]] = []
    for i, command in enumerate(STEPS):
        if outside:
            (root / "outside.txt").write_text(f"someone else {i}\n")  # between calls: taken in, never recorded
        capture.before("run", CALL, "Bash")
        subprocess.run(["sh", "-c", command], cwd=root, check=True)
        changed = capture.after(CALL, "Bash")
        out.append(
            [
                (
                    c.path,
                    c.before.sha256 or c.before.kind if c.before else None,
                    c.after.sha256 or c.after.kind if c.after else None,
                )
                for c in changed.changes
            ]
        )
    return out


def test_the_watched_capture_records_what_a_full_scan_records(tmp_path: Path) -> None:
    """The watches (the default) and a full scan at every look find the same changes, call after call; a change
    made between calls is in neither."""
    watched = _ws(tmp_path / "w")
    scanned = _ws(tmp_path / "s")
    with_watch = _calls(watched, WorkspaceCapture(watched), outside=True)
    with_scan = _calls(scanned, WorkspaceCapture(scanned, watch=False), outside=True)
    assert with_watch == with_scan
    assert all("outside.txt" not in [p for p, _b, _a in call] for call in with_watch)
    assert with_watch[5] == []  # `true` changed nothing
    assert with_watch[6] == [("d2", None, "dir")]  # what was made and removed within the call is not a change
    assert {p for p, _b, _a in with_watch[1]} == {"deep", "deep/er", "deep/er/dir", "deep/er/dir/f", "deep/bin"}
    assert {p for p, _b, a in with_watch[4] if a is None} == {"moved/er", "moved/er/dir", "moved/er/dir/f", "link"}


def test_a_new_process_trusts_the_index_and_its_journal(tmp_path: Path) -> None:
    """What one process recorded (index plus journal lines) is what the next finds: no change is found twice, and a
    damaged journal line (a process killed while writing it) only makes that path be read again."""
    root = _ws(tmp_path)
    first = WorkspaceCapture(root)
    first.before("run", CALL, "Bash")
    first.after(CALL, "Bash")
    first.before("run", CALL, "Bash")
    (root / "a.txt").write_text("by the call\n")
    assert [c.path for c in first.after(CALL, "Bash").changes] == ["a.txt"]
    journal = root / ".bearagent" / "rewind" / "journal.jsonl"
    assert journal.read_text().count("\n") == 1

    second = WorkspaceCapture(root)
    assert second.before("run", NEXT, "Bash") == (True, None)
    assert second.after(NEXT, "Bash").changes == ()

    with journal.open("a") as fh:
        fh.write('["a.txt", [')  # torn
    (root / "a.txt").write_text("by the next call\n")
    third = WorkspaceCapture(root)
    third.before("run", NEXT, "Bash")
    assert third.after(NEXT, "Bash").changes == ()  # changed before the call: taken in, not the call's
    fourth = WorkspaceCapture(root)  # the line written after the torn one is whole
    assert (fourth._load()["a.txt"][1].sha256 or "") == hashlib.sha256(b"by the next call\n").hexdigest()  # pyright: ignore[reportPrivateUsage]
    fourth.before("run", NEXT, "Bash")
    assert fourth.after(NEXT, "Bash").changes == ()


def test_a_write_through_another_hard_link_is_seen(tmp_path: Path) -> None:
    """A file with several hard links changes when written through any of its names, one outside the workspace
    included, and no event names the others: the watched capture `lstat`s such files at every look."""
    import subprocess

    root = _ws(tmp_path)
    outside = tmp_path / "outside-name"
    os.link(root / "a.txt", outside)
    capture = WorkspaceCapture(root)

    def call(command: str) -> list[str]:
        capture.before("run", CALL, "Bash")
        subprocess.run(["sh", "-c", command], cwd=root, check=True)
        return [c.path for c in capture.after(CALL, "Bash").changes]

    assert call("true") == []
    assert call(f"echo through the outside name > {outside}") == ["a.txt"]
    assert call("ln a.txt twin") == ["twin"]
    assert call("echo through the twin > twin") == ["a.txt", "twin"]
    assert call("rm twin") == ["twin"]
    assert call(f"rm {outside} && echo alone > a.txt") == ["a.txt"]


def test_the_warm_up_never_absorbs_a_dead_calls_changes(tmp_path: Path) -> None:
    """The look a run starts in the background takes in the tree, but not while a dead call's changes are
    pending: those are left for the next call, which records them."""
    root = _ws(tmp_path)
    dead = WorkspaceCapture(root)
    dead.before("run-1", CALL, "Bash")
    (root / "a.txt").write_text("changed by the call\n")  # killed before `after`

    fresh = WorkspaceCapture(root)
    fresh.warm()
    _ok, found = fresh.before("run-2", NEXT, "Bash")
    assert found is not None and [c.path for c in found.event.changes] == ["a.txt"]
    fresh.after(NEXT, "Bash")

    (root / "b.txt").write_text("made outside between runs\n")
    later = WorkspaceCapture(root)
    later.warm()  # takes the outside change in
    later.before("run-3", NEXT, "Bash")
    assert later.after(NEXT, "Bash").changes == ()

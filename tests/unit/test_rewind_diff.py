"""A run's recorded file changes as diffs (`rewind/diff.py`): a unified diff per text change, a reason instead of
one (binary, a symlink, a directory, a mode change, a content not kept), and the bounds said when they cut."""

from __future__ import annotations

import hashlib

from bearagent.domain.run_events import FileChange, FileState
from bearagent.rewind.diff import file_diff, run_diff

CONTENTS: dict[str, bytes] = {}


def state(data: bytes, mode: int = 0o644, *, kept: bool = True) -> FileState:
    sha = hashlib.sha256(data).hexdigest()
    if kept:
        CONTENTS[sha] = data
    return FileState(kind="file", mode=mode, size=len(data), sha256=sha, restorable=kept)


def read(sha: str) -> bytes | None:
    return CONTENTS.get(sha)


def test_text_changes_are_unified_diffs() -> None:
    modified = file_diff(
        FileChange(path="a.txt", before=state(b"one\ntwo\n"), after=state(b"one\nTWO\n")), "c", "Bash", read
    )
    assert modified.action == "modified" and modified.note is None and modified.diff is not None
    assert modified.diff.splitlines()[:2] == ["--- a/a.txt", "+++ b/a.txt"]
    assert "-two" in modified.diff.splitlines() and "+TWO" in modified.diff.splitlines()
    created = file_diff(FileChange(path="n.txt", after=state(b"new")), "c", "Write", read)
    assert created.action == "created" and created.diff is not None
    assert created.diff.splitlines() == [
        "--- /dev/null",
        "+++ b/n.txt",
        "@@ -0,0 +1 @@",
        "+new",
        "\\ No newline at end of file",
    ]
    deleted = file_diff(FileChange(path="g.txt", before=state(b"bye\n")), "c", "Bash", read)
    assert deleted.action == "deleted" and deleted.diff is not None and "-bye" in deleted.diff


def test_what_has_no_text_diff_says_why() -> None:
    binary = file_diff(FileChange(path="b.bin", before=state(b"\0\1"), after=state(b"\0\2")), None, "Bash", read)
    assert binary.diff is None and binary.note is not None and binary.note.startswith("binary")
    link = FileChange(path="l", after=FileState(kind="symlink", mode=0o777, target="a.txt"))
    assert "a symlink to 'a.txt'" in (file_diff(link, None, "Bash", read).note or "")
    folder = FileChange(path="d", before=FileState(kind="dir", mode=0o755))
    assert (file_diff(folder, None, "Bash", read).note or "").startswith("a directory")
    mode = file_diff(FileChange(path="r.sh", before=state(b"x\n"), after=state(b"x\n", 0o755)), None, "Bash", read)
    assert mode.note == "mode 644 -> 755"
    lost = file_diff(FileChange(path="big", before=state(b"huge", kept=False), after=state(b"s")), None, "Bash", read)
    assert "not kept (over the blob store's limit)" in (lost.note or "")
    pruned = FileChange(path="p", before=FileState(kind="file", mode=0o644, size=1, sha256="0" * 64), after=state(b"q"))
    assert "not in the blob store (pruned)" in (file_diff(pruned, None, "Bash", read).note or "")


def test_the_bounds_say_what_they_cut() -> None:
    changes = [("c", "Bash", FileChange(path=f"f{i}.txt", after=state(f"line {i}\n".encode() * 50))) for i in range(8)]
    whole = run_diff("r", None, changes, read)
    assert len(whole.files) == 8 and whole.cut == () and whole.omitted_files == 0
    few = run_diff("r", None, changes, read, max_files=3, max_bytes=800, unrecorded=2)
    assert [f.path for f in few.files] == ["f0.txt", "f1.txt", "f2.txt"] and few.omitted_files == 5
    assert few.files[0].diff is not None and few.files[1].note is not None and "cut after" in few.files[1].note
    assert few.files[2].diff is None and few.files[2].note == "diff left out: the output limit was reached"
    text = " | ".join(few.cut)
    assert "5 more changed path(s) not shown" in text and "2 change(s) were seen but not recorded" in text
    assert "limited to 800 bytes: cut or left out for f1.txt, f2.txt" in text
    assert sum(len((f.diff or "").encode()) for f in few.files) <= 800

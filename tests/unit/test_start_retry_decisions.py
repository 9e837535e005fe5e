"""`sandbox/_start.py`'s two decisions, on their own: which socket cover a failed bubblewrap set-up names, and the
argv without a cover. (The real starts, with bubblewrap: `tests/security/test_sandbox_start.py`.)"""

from __future__ import annotations

from bearagent.sandbox._start import drop_cover, vanished_cover

SOCK = "/srv/run/made-later/db.sock"


def test_only_bubblewraps_last_words_about_a_cover_count() -> None:
    covers = {SOCK, "/run/user/0/bus"}
    assert vanished_cover(f"bwrap: Can't mkdir parents for {SOCK}: Read-only file system\n", covers) == SOCK
    assert vanished_cover(f"bwrap: Can't create file at {SOCK}: Read-only file system", covers) == SOCK
    mount = f"bwrap: Can't bind mount /oldroot/dev/null on /newroot{SOCK}: Unable to mount source on destination: x"
    assert vanished_cover(mount, covers) == SOCK
    assert vanished_cover(f"bwrap: Can't mkdir parents for {SOCK}: Read-only file system", {"/run/user/0/bus"}) is None
    assert vanished_cover(f"bwrap: Can't mkdir parents for {SOCK}2: Read-only file system", covers) is None
    assert vanished_cover("bwrap: setting up uid map: Permission denied\n", covers) is None
    assert vanished_cover(f"bwrap: Can't mkdir parents for {SOCK}: x\nsomething after\n", covers) is None
    assert vanished_cover("", covers) is None


def test_dropping_a_cover_keeps_every_other_word_and_index() -> None:
    argv = ["sh", "--", "bwrap", "--ro-bind", "/dev/null", SOCK, "--ro-bind", "/dev/null", "/b.sock"]
    argv += ["--ro-bind", "/dev/null", SOCK, "--", "ls", "--ro-bind", "/dev/null", SOCK]
    out, left = drop_cover(argv, [5, 8, 11], SOCK)
    assert out == ["sh", "--", "bwrap", "--ro-bind", "/dev/null", "/b.sock", "--", "ls", "--ro-bind", "/dev/null", SOCK]
    assert left == [5] and out[5] == "/b.sock"


def test_the_starter_and_the_limiter_name_the_same_variable() -> None:
    """Two standalone scripts (neither imports BearAgent): the one that passes the call's stderr on and the one
    that puts it back must agree on where."""
    from bearagent.sandbox import _limits, _start

    assert _start.STDERR_VARIABLE == _limits.STDERR_VARIABLE

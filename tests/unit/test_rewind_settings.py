"""`rewind:` of the user config: sizes with decimal and binary units, a bad value names the key and the fix, an
unknown key is a warning, and a workspace's section is refused whole."""

from __future__ import annotations

from bearagent.config.rewind_settings import parse_rewind


def test_sizes_with_units() -> None:
    parsed, problems = parse_rewind({"max_file_size": "16MiB", "max_store_size": "2GB"}, level="user")
    assert parsed == {"max_file_bytes": 16 * 1024 * 1024, "max_store_bytes": 2_000_000_000} and problems == []
    assert parse_rewind({"max_file_size": 1234}, level="user")[0] == {"max_file_bytes": 1234}


def test_bad_values_and_unknown_keys() -> None:
    for bad in (0, -1, "lots", True, "2PiB", [1]):
        parsed, problems = parse_rewind({"max_file_size": bad}, level="user")
        assert parsed == {} and [p.field for p in problems] == ["rewind.max_file_size"], bad
        assert "16MiB" in problems[0].fix
    _parsed, problems = parse_rewind({"bash": False}, level="user")
    assert problems[0].severity == "warning" and "max_file_size" in problems[0].fix
    assert parse_rewind("big", level="user")[1][0].message == "must be a mapping"


def test_a_workspace_cannot_set_them() -> None:
    parsed, problems = parse_rewind({"max_file_size": "1TB"}, level="workspace")
    assert parsed == {} and "only be set in the user config" in problems[0].message


def test_sandbox_review_turns_on_from_any_level_and_a_workspace_cannot_turn_it_off() -> None:
    """`sandbox.review` (review after the fact, `runtime/review.py`) only narrows: a workspace may turn it on, and the
    user's `true` stays on whatever the workspace says; a non-boolean is a problem naming the fix."""
    from bearagent.sandbox.settings import merge_sandbox, parse_sandbox

    parsed, problems = parse_sandbox({"review": True}, level="user")
    assert parsed == {"review": True} and problems == []
    off, _ = parse_sandbox({"review": False}, level="workspace")
    on, _ = parse_sandbox({"review": True}, level="workspace")
    assert merge_sandbox([("user", parsed), ("workspace", off)]).review is True
    assert merge_sandbox([("user", {"review": False}), ("workspace", on)]).review is True
    assert merge_sandbox([("workspace", on)]).review is True
    assert merge_sandbox([]).review is False
    _bad, problems = parse_sandbox({"review": "yes"}, level="workspace")
    assert [p.fix for p in problems] == ["write `review: true`"]

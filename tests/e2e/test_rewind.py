"""Rewind through real runs: a scripted model writes, edits and runs Bash in the real bubblewrap sandbox (`sed -i`,
`rm`, `mv`, `mkdir -p`, `chmod`, a symlink, a binary file); `bearagent rewind` puts the tree back byte for byte, a
second rewind is a no-op, and a file edited outside BearAgent since is named and kept unless --force."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.rewind_ws import MAIN, Tree, bearagent, run_killed_in_bash, store_env, tool_call, tree
from tests.support.run_ws import CONFIG, scripted_workspace

from bearagent.cli import main
from bearagent.sandbox.probe import find_bwrap

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or find_bwrap(None) is None,
        reason="Bash changes are tested in the sandbox: Linux and bubblewrap",
    ),
]

BASH = (
    "sed -i s/one/ONE/ a.txt && rm gone.txt && mv old.txt new.txt && mkdir -p deep/er/dir && "
    "chmod 755 run.sh && ln -s a.txt link && printf '\\000\\001\\377bin' > blob.bin && echo x > deep/er/dir/f"
)


def invoke(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(main, args, env=env, prog_name="bearagent")


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The same rewinds over either store: the workspace's SQLite log, or a user config's PostgreSQL database."""
    return store_env(request.param, tmp_path / "home")


def _workspace(tmp_path: Path) -> Path:
    turns = [
        tool_call("Write", file_path="new_file.py", content="print('hi')\n"),
        tool_call("Edit", file_path="edit_me.py", old_string="x = 1", new_string="x = 2"),
        tool_call("Bash", command=BASH),
        {"text": "done"},
    ]
    config = CONFIG
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN, config=config)
    write(root, "a.txt", "one two\n")
    write(root, "gone.txt", "bye\n")
    write(root, "old.txt", "old\n")
    write(root, "run.sh", "#!/bin/sh\n")
    write(root, "edit_me.py", "x = 1\n")
    return root


def test_a_run_is_rewound_byte_for_byte_and_a_second_rewind_is_a_no_op(tmp_path: Path, env: dict[str, str]) -> None:
    root = _workspace(tmp_path)
    before = tree(root)
    result = invoke(["run", "-w", str(root), "--json", "change things"], env)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    after = tree(root)
    assert after != before and (root / "link").is_symlink() and (root / "blob.bin").read_bytes() == b"\0\1\377bin"

    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], env)
    changed = [json.loads(line) for line in events.output.splitlines() if '"FilesChanged"' in line]
    assert len(changed) == 3, events.output  # Write, Edit, Bash
    bash_paths = {c["path"] for c in changed[2]["payload"]["changes"]}
    assert {"a.txt", "gone.txt", "old.txt", "new.txt", "run.sh", "link", "blob.bin", "deep/er/dir/f"} <= bash_paths

    # each call's changes as diffs, Bash's included (`runs diff`, the store's facts and the blob store's contents)
    shown = invoke(["runs", "diff", run_id[:8], "-w", str(root)], env)
    assert shown.exit_code == 0, shown.output
    assert "── created new_file.py" in shown.output and "+print('hi')" in shown.output
    assert "-x = 1" in shown.output and "+x = 2" in shown.output  # the Edit
    assert "--- a/a.txt" in shown.output and "-one two" in shown.output and "+ONE two" in shown.output  # sed -i
    assert "binary: " in shown.output and "a symlink to 'a.txt'" in shown.output and "mode 644 -> 755" in shown.output
    bash_call = str(changed[2]["payload"]["tool_call_id"])
    one = invoke(["runs", "diff", run_id[:8], "--call", bash_call[:8], "-w", str(root), "--json"], env)
    assert one.exit_code == 0, one.output
    found = json.loads(one.output)
    assert found["tool_call_id"] == bash_call and {f["path"] for f in found["files"]} == bash_paths
    assert found["cut"] == [] and found["omitted_files"] == 0
    unknown = invoke(["runs", "diff", run_id[:8], "--call", "ffffffff", "-w", str(root)], env)
    assert unknown.exit_code != 0 and "no recorded file changes of tool call 'ffffffff'" in unknown.output

    dry = invoke(["rewind", run_id[:8], "-w", str(root), "--dry-run"], env)
    assert dry.exit_code == 0, dry.output
    assert "would delete new_file.py" in dry.output and "would restore a.txt" in dry.output
    assert tree(root) == after  # a dry run changes nothing

    done = invoke(["rewind", run_id[:8], "-w", str(root)], env)
    assert done.exit_code == 0, done.output
    assert tree(root) == before

    again = invoke(["rewind", run_id[:8], "-w", str(root)], env)
    assert again.exit_code == 0, again.output
    assert "nothing to rewind" in again.output
    assert tree(root) == before


def test_a_file_edited_outside_is_named_and_kept_unless_forced(tmp_path: Path, env: dict[str, str]) -> None:
    root = _workspace(tmp_path)
    before = tree(root)
    result = invoke(["run", "-w", str(root), "--json", "change things"], env)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    (root / "a.txt").write_text("mine now\n")

    refused = invoke(["rewind", run_id[:8], "-w", str(root)], env)
    assert refused.exit_code != 0
    assert "a.txt" in refused.output and "--force" in refused.output
    assert (root / "a.txt").read_text() == "mine now\n" and (root / "new_file.py").exists()  # nothing changed

    forced = invoke(["rewind", run_id[:8], "-w", str(root), "--force"], env)
    assert forced.exit_code == 0, forced.output
    assert tree(root) == before

    # the overwritten content is kept: the rewind is recorded with the content it replaced
    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], env)
    rewound = [json.loads(line) for line in events.output.splitlines() if '"FilesRewound"' in line]
    assert len(rewound) == 1 and rewound[0]["payload"]["forced"] == ["a.txt"]
    kept = next(c for c in rewound[0]["payload"]["changes"] if c["path"] == "a.txt")["before"]["sha256"]
    import hashlib
    import zlib

    blob = root / ".bearagent" / "blobs" / kept[:2] / kept
    assert zlib.decompress(blob.read_bytes()) == b"mine now\n"
    assert hashlib.sha256(b"mine now\n").hexdigest() == kept


def test_rewind_to_a_tool_call_keeps_what_came_before_it(tmp_path: Path, env: dict[str, str]) -> None:
    root = _workspace(tmp_path)
    result = invoke(["run", "-w", str(root), "--json", "change things"], env)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], env)
    changed = [json.loads(line) for line in events.output.splitlines() if '"FilesChanged"' in line]
    bash_call = changed[2]["payload"]["tool_call_id"]

    done = invoke(["rewind", run_id[:8], "--to", bash_call, "-w", str(root)], env)
    assert done.exit_code == 0, done.output
    # the Write and the Edit stay; everything Bash did is undone
    assert (root / "new_file.py").read_text() == "print('hi')\n" and (root / "edit_me.py").read_text() == "x = 2\n"
    assert (root / "a.txt").read_text() == "one two\n" and (root / "gone.txt").exists() and (root / "old.txt").exists()
    assert not (root / "link").is_symlink() and not (root / "blob.bin").exists() and not (root / "deep").exists()
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o644

    unknown = invoke(["rewind", run_id[:8], "--to", "ffffffff-ffff", "-w", str(root)], env)
    assert unknown.exit_code != 0 and "no tool call" in unknown.output


def test_db_prune_removes_the_contents_no_kept_run_names(tmp_path: Path, env: dict[str, str]) -> None:
    """A content only a pruned run names goes with it; what the tree holds now (the capture's index) stays; a blob
    younger than an hour stays (a running call may have just stored it); --dry-run removes nothing."""
    import hashlib
    import time

    turns = [
        tool_call("Write", file_path="f.txt", content="first\n"),
        tool_call("Write", file_path="f.txt", content="second\n"),
        {"text": "done"},
    ]
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN)
    result = invoke(["run", "-w", str(root), "--json", "write twice"], env)
    assert result.exit_code == 0, result.output
    blobs = root / ".bearagent" / "blobs"

    def blob(text: str) -> Path:
        sha = hashlib.sha256(text.encode()).hexdigest()
        return blobs / sha[:2] / sha

    assert blob("first\n").is_file() and blob("second\n").is_file()
    young = invoke(["db", "prune", "-w", str(root), "--older-than", "0m", "--dry-run", "--json"], env)
    assert young.exit_code == 0, young.output
    assert json.loads(young.output)["blobs"] == 0  # every blob is younger than an hour

    old = time.time() - 7200
    for path in blobs.rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    dry = invoke(["db", "prune", "-w", str(root), "--older-than", "0m", "--dry-run", "--json"], env)
    assert json.loads(dry.output)["blobs"] == 1 and blob("first\n").is_file()

    done = invoke(["db", "prune", "-w", str(root), "--older-than", "0m"], env)
    assert done.exit_code == 0, done.output
    assert "1 stored file content(s) no kept run names" in done.output
    assert not blob("first\n").exists() and blob("second\n").is_file()  # the tree's current content stays


def test_the_user_config_sets_the_blob_limits_and_a_workspace_cannot(tmp_path: Path, env: dict[str, str]) -> None:
    """`rewind: {max_file_size: ...}` of the user config: a larger content is recorded by hash only, "not
    restorable", and a rewind that needs it names it; the same section in a workspace's config is an error (the
    user's limits apply) and a bad size names the key and the fix."""
    turns = [tool_call("Write", file_path="big.txt", content="small\n"), {"text": "done"}]
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN)
    write(root, "big.txt", "x" * 100)
    user = Path(env["BEARAGENT_HOME"]) / "config.yaml"
    base = user.read_text() if user.exists() else ""
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(base + "rewind: {max_file_size: 50B}\n")
    write(root, ".bearagent/config.yaml", CONFIG + "rewind: {max_file_size: 1GiB}\n")

    doctor = invoke(["doctor", "-w", str(root), "--json"], env)
    assert "rewind" in doctor.output and "can only be set in the user config" in doctor.output

    write(root, ".bearagent/config.yaml", CONFIG)
    result = invoke(["run", "-w", str(root), "--json", "shrink it"], env)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], env)
    changed = [json.loads(line) for line in events.output.splitlines() if '"FilesChanged"' in line]
    before = changed[0]["payload"]["changes"][0]["before"]
    assert before["restorable"] is False and before["size"] == 100 and len(before["sha256"]) == 64

    refused = invoke(["rewind", run_id[:8], "-w", str(root)], env)
    assert refused.exit_code != 0 and "not restorable" in refused.output and "big.txt" in refused.output
    assert (root / "big.txt").read_text() == "small\n"

    user.write_text(base + "rewind: {max_file_size: lots}\n")
    bad = invoke(["doctor", "-w", str(root), "--json"], env)
    assert "rewind.max_file_size" in bad.output and "must be a size such as 16MiB" in bad.output


def _without(found: Tree, litter: Path) -> Tree:
    if litter.is_dir() and not any(litter.iterdir()):
        return {k: v for k, v in found.items() if k != litter.name}
    return found


LONG_BASH = "echo changed > a.txt && printf new > made.txt && mkdir -p d && echo started > d/flag && sleep 60"


@pytest.mark.parametrize("then", ["rewind", "resume", "next_run"])
def test_kill_9_during_a_bash_call_its_changes_are_recorded_by_the_next_command(tmp_path: Path, then: str) -> None:
    """`bearagent run` killed with SIGKILL while its Bash call ran: whichever command comes next (a rewind, the
    run's resume, another run's Bash call) records the dead call's changes in the dead run, marked as recorded
    late, so that rewinding that run puts them back; nothing is absorbed silently."""
    import subprocess

    home = tmp_path / "home"
    env = {**os.environ, **isolated_env(home), "NO_COLOR": "1"}
    turns = [tool_call("Bash", command=LONG_BASH), {"text": "done"}]
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN)
    write(root, "a.txt", "one\n")
    before = tree(root)
    with run_killed_in_bash(root, env, "go", root / "d" / "flag"):
        pass  # killed as soon as its Bash call runs
    assert len(list((root / ".bearagent" / "rewind" / "pending").glob("*.json"))) == 1
    # the killed sandbox leaves its mount points behind; `.git` is never captured nor restored (docs/rewind.md)
    litter = root / ".git"
    run_id = json.loads(invoke(["runs", "list", "-w", str(root), "--json"], env).output)[0]["run_id"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return bearagent(root, env, *args)

    # the killed run is interrupted: its files can be rewound, its conversation not before it is resumed or cancelled
    dry = cli("rewind", run_id[:8], "--code", "--dry-run")
    assert "stopped before its file changes were recorded" in dry.stderr  # reported, not yet recorded
    if then == "rewind":
        done = cli("rewind", run_id[:8], "--code")
        assert "file change(s) of tool call" in done.stderr and "stopped before recording them" in done.stderr
        assert _without(tree(root), litter) == before
    else:
        if then == "resume":
            cli("runs", "resume", run_id[:8])
        else:
            write(
                root,
                ".bearagent/script.yaml",
                json.dumps({"turns": [tool_call("Bash", command="true"), {"text": "ok"}]}),
            )
            cli("run", "another")
        assert not list((root / ".bearagent" / "rewind" / "pending").glob("*.json"))
        cli("rewind", run_id[:8], "--code")
        assert _without(tree(root), litter) == before
    events = [json.loads(line) for line in cli("events", run_id[:8], "--json").stdout.splitlines()]
    late = [
        e for e in events if e["event_type"] == "FilesChanged" and "recorded late" in (e["payload"].get("note") or "")
    ]
    assert len(late) == 1, events
    # the call's changes, and the mount points the sandbox made for it and had no time to remove (also undone)
    assert {"a.txt", "made.txt", "d", "d/flag"} <= {c["path"] for c in late[0]["payload"]["changes"]}


def test_two_bash_calls_with_a_directory_moved_are_rewound_call_bytool_call(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A directory renamed (the watches then hand over to a full scan), a hard link, a subtree removed and a
    directory's mode, over two Bash calls of one run: each call records only its own changes, `--to` the second
    call leaves the first's, and a full rewind gives the tree back byte for byte."""
    first = "mv olddir newdir && echo more >> newdir/x.txt && ln newdir/x.txt hard && chmod 700 newdir/sub"
    second = "rm -r newdir/sub && printf '\\377' > newdir/bin && ln -s newdir/x.txt newdir/link && echo 2 > hard"
    turns = [tool_call("Bash", command=first), tool_call("Bash", command=second), {"text": "done"}]
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN)
    write(root, "olddir/x.txt", "x\n")
    write(root, "olddir/sub/deep.txt", "deep\n")
    before = tree(root)
    result = invoke(["run", "-w", str(root), "--json", "move things"], env)
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.output)["run_id"]
    after = tree(root)

    events = invoke(["events", run_id[:8], "-w", str(root), "--json"], env)
    changed = [json.loads(line) for line in events.output.splitlines() if '"FilesChanged"' in line]
    assert len(changed) == 2, events.output
    one = {c["path"] for c in changed[0]["payload"]["changes"]}
    two = {c["path"] for c in changed[1]["payload"]["changes"]}
    assert one == {"olddir", "olddir/x.txt", "olddir/sub", "olddir/sub/deep.txt", "newdir", "newdir/x.txt"} | {
        "newdir/sub",
        "newdir/sub/deep.txt",
        "hard",
    }
    assert two == {"newdir/sub", "newdir/sub/deep.txt", "newdir/bin", "newdir/link", "newdir/x.txt", "hard"}

    to_second = invoke(["rewind", run_id[:8], "--to", changed[1]["payload"]["tool_call_id"], "-w", str(root)], env)
    assert to_second.exit_code == 0, to_second.output
    middle = tree(root)
    assert middle["newdir/x.txt"] == ("file", 0o644, b"x\nmore\n") and middle["newdir/sub"][1] == 0o700
    assert "newdir/bin" not in middle and "olddir" not in middle and middle != after

    done = invoke(["rewind", run_id[:8], "-w", str(root)], env)
    assert done.exit_code == 0, done.output
    assert tree(root) == before

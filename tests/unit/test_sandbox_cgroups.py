"""Finding where a call's control groups may go (`bearagent.sandbox.cgroups`): cgroup v1 per controller, v2 only
where BearAgent's own group delegates the controller, never a hierarchy BearAgent cannot write."""

from __future__ import annotations

from pathlib import Path

from bearagent.sandbox.cgroups import PREFIX, find_hierarchies, prepare


def _mountinfo(base: Path) -> str:
    return (
        f"31 23 0:28 / {base} rw,relatime - tmpfs tmpfs rw\n"
        f"35 31 0:32 / {base}/memory rw,relatime - cgroup cgroup rw,memory\n"
        f"39 31 0:36 / {base}/pids rw,relatime - cgroup cgroup rw,pids\n"
        f"41 31 0:38 / {base}/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )


def test_cgroup_v1_per_controller_at_bearagents_own_group(tmp_path: Path) -> None:
    (tmp_path / "memory" / "job").mkdir(parents=True)
    (tmp_path / "pids").mkdir()
    found = find_hierarchies(("pids", "memory"), mountinfo=_mountinfo(tmp_path), own="8:pids:/\n4:memory:/job\n0::/\n")
    assert {k: (v.version, v.directory) for k, v in found.items()} == {
        "pids": (1, tmp_path / "pids"),
        "memory": (1, tmp_path / "memory" / "job"),
    }


def test_cgroup_v2_only_where_the_controller_is_delegated(tmp_path: Path) -> None:
    group = tmp_path / "unified" / "user.slice"
    group.mkdir(parents=True)
    (group / "cgroup.subtree_control").write_text("memory\n")
    mountinfo = f"41 31 0:38 / {tmp_path}/unified rw,relatime - cgroup2 cgroup2 rw\n"
    found = find_hierarchies(("pids", "memory"), mountinfo=mountinfo, own="0::/user.slice\n")
    assert set(found) == {"memory"} and found["memory"].version == 2 and found["memory"].directory == group


def test_a_group_outside_the_mounted_part_or_missing_is_not_used(tmp_path: Path) -> None:
    mountinfo = f"39 31 0:36 /docker/abc {tmp_path}/pids rw,relatime - cgroup cgroup rw,pids\n"
    (tmp_path / "pids").mkdir()
    assert find_hierarchies(("pids",), mountinfo=mountinfo, own="8:pids:/elsewhere\n") == {}
    assert find_hierarchies(("pids",), mountinfo=mountinfo, own="8:pids:/docker/abc/gone\n") == {}
    found = find_hierarchies(("pids",), mountinfo=mountinfo, own="8:pids:/docker/abc\n")
    assert found["pids"].directory == tmp_path / "pids"


def test_no_limit_makes_no_group() -> None:
    assert prepare(None, None) is None


def test_garbage_in_proc_files_finds_nothing() -> None:
    assert find_hierarchies(("pids",), mountinfo="x\n - \n\x00", own="::::\nnonsense") == {}
    assert PREFIX == "bearagent-"

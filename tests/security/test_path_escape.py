"""Path-escape suite: every attempt to leave the workspace through a file tool is refused, nothing outside is read
or written (checked with sentinel files)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.tools import call

SECRET = "TOP-SECRET-SENTINEL-4242"


class Layout:
    def __init__(self, base: Path) -> None:
        self.ws = base / "ws"
        self.outside = base / "outside"
        self.secret = self.outside / "secret.txt"

    def snapshot(self) -> dict[str, tuple[int, bytes | None]]:
        out: dict[str, tuple[int, bytes | None]] = {}
        for dirpath, dirnames, filenames in os.walk(self.outside):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                out[str(p)] = (st.st_mode, p.read_bytes() if stat.S_ISREG(st.st_mode) else None)
        return out


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[Layout]:
    lay = Layout(tmp_path)
    lay.outside.mkdir()
    lay.secret.write_text(SECRET + "\n")
    (lay.outside / "dir").mkdir()
    (lay.outside / "dir" / "inner.txt").write_text(SECRET + " inner\n")
    ws = lay.ws
    ws.mkdir()
    (ws / "sub").mkdir()
    (ws / "sub" / "ok.txt").write_text("inside\n")
    (ws / "deep" / "a").mkdir(parents=True)
    os.symlink(lay.secret, ws / "link_out_file")
    os.symlink(lay.outside, ws / "link_out_dir")
    os.symlink("../..", ws / "sub" / "link_up")
    os.symlink(lay.outside / "dir", ws / "deep" / "a" / "link_to_outside_dir")
    os.symlink("/etc", ws / "abs_link")
    os.symlink("chain2", ws / "chain1")
    os.symlink("link_out_file", ws / "chain2")
    os.symlink("../outside/secret.txt", ws / "link_rel_escape")
    os.symlink("loop_b", ws / "loop_a")
    os.symlink("loop_a", ws / "loop_b")
    os.symlink(lay.outside, ws / "sub" / "parent_link")
    os.mkfifo(ws / "fifo")
    short = Path("/tmp") / f"bear-sock-{os.getpid()}-{id(lay)}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(short))
    os.rename(short, ws / "sock")
    if os.geteuid() == 0:
        os.mknod(ws / "devnode", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # like /dev/zero
    try:
        yield lay
    finally:
        sock.close()


def escape_paths(lay: Layout) -> list[str]:
    ws = str(lay.ws)
    paths = [
        "/etc/passwd",
        str(lay.secret),
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "..\\outside\\secret.txt",
        "sub\\..\\..\\outside\\secret.txt",
        "./../outside/secret.txt",
        "sub/./../../outside/secret.txt",
        "...//../../outside/secret.txt",
        ws + "/../outside/secret.txt",
        ws + "/sub/../../outside/secret.txt",
        "~/.bashrc",
        "~root/.bashrc",
        "link_out_file",
        "link_out_dir/secret.txt",
        "link_out_dir/dir/inner.txt",
        "sub/link_up/outside/secret.txt",
        "deep/a/link_to_outside_dir/inner.txt",
        "sub/parent_link/secret.txt",
        "abs_link/passwd",
        "chain1",
        "link_rel_escape",
        "loop_a",
        "/proc/self/environ",
        "/proc/self/root/etc/passwd",
        "/proc/self/cwd/secret.txt",
        "/dev/zero",
        "/dev/stdin",
        "fifo",
        "sock",
        "sub/ok.txt\x00.png",
        "a\x00/../../outside/secret.txt",
        "x/" * 2100 + "f.txt",
        "a" * 300,
        "\u2025/outside/secret.txt",
        "\u2024\u2024/outside/secret.txt",
        "..\uff0foutside\uff0fsecret.txt",
        "\uff0e\uff0e/outside/secret.txt",
        "..\u2215outside\u2215secret.txt",
        ".\u2024/outside/secret.txt",
    ]
    if os.geteuid() == 0:
        paths.append("devnode")
    return paths


def _arguments(tool: str, path: str) -> dict[str, object]:
    if tool == "Read":
        return {"file_path": path}
    if tool == "Write":
        return {"file_path": path, "content": "PWNED\n"}
    return {"file_path": path, "old_string": SECRET, "new_string": "PWNED"}


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit"])
def test_file_tools_refuse_every_escape(layout: Layout, tool: str) -> None:
    before = layout.snapshot()
    attempts = escape_paths(layout)
    assert len(attempts) >= 30

    async def run_all() -> None:
        for path in attempts:
            result = await call(layout.ws, tool, _arguments(tool, path))
            assert result.status == "failed", (tool, path, result.content)
            assert result.error is not None
            assert result.error.category in ("permission", "validation"), (tool, path, result.error)
            assert SECRET not in result.content, (tool, path)
            assert "PWNED" not in result.content

    asyncio.run(run_all())
    assert layout.snapshot() == before
    assert not list(layout.ws.rglob("*PWNED*"))
    assert "PWNED" not in (layout.ws / "sub" / "ok.txt").read_text()


def test_refusals_explain_what_and_how(layout: Layout) -> None:
    async def run() -> None:
        outside = await call(layout.ws, "Read", {"file_path": "../outside/secret.txt"})
        assert "outside the workspace" in outside.content and "inside the workspace" in outside.content
        link = await call(layout.ws, "Read", {"file_path": "link_out_dir/secret.txt"})
        assert "symlink (link_out_dir)" in link.content and "leads outside the workspace" in link.content
        fifo = await call(layout.ws, "Read", {"file_path": "fifo"})
        assert "FIFO" in fifo.content and "regular files" in fifo.content
        sock = await call(layout.ws, "Read", {"file_path": "sock"})
        assert "socket" in sock.content
        nul = await call(layout.ws, "Read", {"file_path": "a\x00b"})
        assert "NUL byte" in nul.content
        look = await call(layout.ws, "Write", {"file_path": "\u2025/x", "content": ""})
        assert "look-alike" in look.content

    asyncio.run(run())


def test_symlinks_inside_the_workspace_are_followed(layout: Layout) -> None:
    ws = layout.ws
    os.symlink("sub/ok.txt", ws / "inside_link")
    os.symlink("sub", ws / "sub_link")
    os.symlink(str(ws / "sub"), ws / "abs_inside_link")

    async def run() -> None:
        for path in ("inside_link", "sub_link/ok.txt", "abs_inside_link/ok.txt", str(ws / "sub" / "ok.txt")):
            result = await call(ws, "Read", {"file_path": path})
            assert result.status == "succeeded", (path, result.content)
            assert "inside" in result.content
        written = await call(ws, "Write", {"file_path": "sub_link/new.txt", "content": "n\n"})
        assert written.status == "succeeded"
        assert (ws / "sub" / "new.txt").read_text() == "n\n"
        through = await call(ws, "Edit", {"file_path": "inside_link", "old_string": "inside", "new_string": "edited"})
        assert through.status == "succeeded", through.content
        assert (ws / "sub" / "ok.txt").read_text() == "edited\n"
        assert (ws / "inside_link").is_symlink()

    asyncio.run(run())


def test_writes_through_a_hard_link_never_touch_the_outside_file(layout: Layout) -> None:
    os.link(layout.secret, layout.ws / "hard_secret")
    before = layout.secret.read_text()

    async def run() -> None:
        edited = await call(
            layout.ws, "Edit", {"file_path": "hard_secret", "old_string": SECRET, "new_string": "PWNED"}
        )
        assert edited.status == "succeeded"
        written = await call(layout.ws, "Write", {"file_path": "hard_secret", "content": "PWNED2\n"})
        assert written.status == "succeeded"

    asyncio.run(run())
    assert layout.secret.read_text() == before
    assert (layout.ws / "hard_secret").read_text() == "PWNED2\n"
    assert layout.ws.joinpath("hard_secret").stat().st_nlink == 1


def test_write_does_not_create_directories_through_an_escaping_symlink(layout: Layout) -> None:
    before = layout.snapshot()

    async def run() -> None:
        for path in ("link_out_dir/new/deeper.txt", "sub/link_up/outside/new.txt", "deep/a/link_to_outside_dir/n.txt"):
            result = await call(layout.ws, "Write", {"file_path": path, "content": "PWNED"})
            assert result.status == "failed", path

    asyncio.run(run())
    assert layout.snapshot() == before


@pytest.mark.parametrize("tool", ["Glob", "Grep"])
def test_search_tools_refuse_escaping_paths(layout: Layout, tool: str) -> None:
    ws = str(layout.ws)
    paths = [
        "..",
        "../outside",
        "/",
        "/etc",
        "/proc/self/root",
        str(layout.outside),
        ws + "/..",
        "sub/../..",
        "..\\outside",
        "link_out_dir",
        "sub/link_up",
        "deep/a/link_to_outside_dir",
        "sub/parent_link/dir",
        "abs_link",
        "chain1",
        "\u2025",
        "..\uff0foutside",
        "x\x00",
        "~",
        "fifo",
    ]
    before = layout.snapshot()

    async def run() -> None:
        for path in paths:
            args: dict[str, object] = {"pattern": "**/*" if tool == "Glob" else "SENTINEL", "path": path}
            if tool == "Grep":
                args["output_mode"] = "content"
            result = await call(layout.ws, tool, args)
            assert result.status == "failed", (tool, path, result.content)
            assert SECRET not in result.content

    asyncio.run(run())
    assert layout.snapshot() == before


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Glob", {"pattern": "../outside/*"}),
        ("Glob", {"pattern": "/etc/*"}),
        ("Glob", {"pattern": "**/../../outside/*"}),
        ("Glob", {"pattern": "sub\\..\\..\\outside\\*"}),
        ("Grep", {"pattern": "SENTINEL", "glob": "../outside/*"}),
        ("Grep", {"pattern": "SENTINEL", "glob": "/etc/*"}),
        ("Grep", {"pattern": "SENTINEL", "path": "link_out_file"}),
    ],
)
def test_search_patterns_cannot_leave_the_workspace(layout: Layout, tool: str, arguments: dict[str, object]) -> None:
    result = asyncio.run(call(layout.ws, tool, arguments))
    assert result.status == "failed", result.content
    assert SECRET not in result.content


def test_searches_from_the_root_never_follow_escaping_symlinks(layout: Layout) -> None:
    async def run() -> None:
        grep = await call(layout.ws, "Grep", {"pattern": "SENTINEL", "output_mode": "content"})
        assert grep.status == "succeeded"
        assert SECRET not in grep.content and "No matches" in grep.content
        glob = await call(layout.ws, "Glob", {"pattern": "**/*.txt"})
        assert glob.status == "succeeded"
        assert "secret.txt" not in glob.content and "inner.txt" not in glob.content
        assert "sub/ok.txt" in glob.content

    asyncio.run(run())

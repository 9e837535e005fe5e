"""A host socket that vanishes between a call's mount plan and bubblewrap's start (issue 29: seen under load, when
another program's socket came and went with its directory). The plan covers every socket `/proc/net/unix` lists;
bubblewrap then finds no mount point for the gone one and, on a read-only part of the host, cannot make one: it
refused to start, and the call (a Bash command, a hook, an MCP server) failed, confined or not. `sandbox/_start.py`
now tells that failed set-up from the command's own failure and starts bubblewrap again without the cover.

Real bubblewrap, a real listening socket on the host, real starts; the command counts its own runs in the workspace,
so "ran once" is checked, never assumed."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.security.test_sandbox_host import UnixListener
from tests.support.sandbox_marks import needs_sandbox

from bearagent.sandbox.bwrap import STARTER, BwrapBackend, PreparedCommand, supports_status
from bearagent.sandbox.launch import confined_launch
from bearagent.sandbox.probe import find_bwrap
from bearagent.sandbox.request import SandboxRequest
from bearagent.sandbox.settings import SandboxSettings

pytestmark = needs_sandbox()


@pytest.fixture
def program() -> str:
    found = find_bwrap(None)
    assert found is not None
    if not supports_status(found):
        pytest.skip(f"{found} has no --json-status-fd (bubblewrap before 0.5): a vanished socket still fails the call")
    return found


@pytest.fixture
def socket_dir(sandbox_outside: Path) -> Iterator[Path]:
    """A directory on a part of the host the sandbox shows read-only, holding one listening socket."""
    directory = sandbox_outside / "run" / "made-later"
    directory.mkdir(parents=True)
    listener = UnixListener(directory / "db.sock")
    try:
        yield directory
    finally:
        listener.close()


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _run(prepared: PreparedCommand, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            prepared.argv, env=env or {**os.environ, **prepared.env}, capture_output=True, text=True, timeout=60
        )
    finally:
        prepared.finish()


def test_a_socket_gone_before_the_start_is_no_longer_covered_and_the_command_runs_once(
    program: str, socket_dir: Path, tmp_path: Path
) -> None:
    ws = _workspace(tmp_path)
    sock = socket_dir / "db.sock"
    command = f"echo ran >> {shlex.quote(str(ws / 'runs'))}; echo out; echo err >&2; exit 3"
    prepared = BwrapBackend(program).prepare(["sh", "-c", command], SandboxRequest(), ws)
    assert ("--ro-bind", "/dev/null", str(sock)) in zip(
        prepared.argv, prepared.argv[1:], prepared.argv[2:], strict=False
    )
    shutil.rmtree(socket_dir)  # the socket and its directory go between the plan and the start
    done = _run(prepared)
    assert (ws / "runs").read_text() == "ran\n", "the command ran exactly once"
    assert done.returncode == 3, done.stderr
    assert done.stdout == "out\n"
    assert done.stderr == "err\n", "bubblewrap's refusal of the first start is not the command's output"


def test_without_the_starter_the_same_start_fails_as_it_used_to(program: str, socket_dir: Path, tmp_path: Path) -> None:
    """The failure is real: the same plan, started as bubblewrap alone, refuses to start."""
    ws = _workspace(tmp_path)
    prepared = BwrapBackend(program).prepare(["sh", "-c", "echo ran"], SandboxRequest(), ws)
    argv = list(prepared.argv)
    bwrap = argv[argv.index("--") + 1 :]
    status = bwrap.index("--json-status-fd")
    del bwrap[status : status + 2]  # the report `_start.py` reads, on an fd only it opens
    shutil.rmtree(socket_dir)
    try:
        done = subprocess.run(bwrap, env={**os.environ, **prepared.env}, capture_output=True, text=True, timeout=60)
    finally:
        prepared.finish()
    assert done.returncode == 1 and "ran" not in done.stdout
    assert "made-later/db.sock" in done.stderr, done.stderr


def test_an_opted_in_command_gets_the_same_second_start(program: str, socket_dir: Path, tmp_path: Path) -> None:
    """Hooks and stdio MCP servers (`confined_launch`) start the same way: the MCP server of the failure seen."""
    ws = _workspace(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home")}
    launch = confined_launch(["sh", "-c", f"echo ran >> {shlex.quote(str(ws / 'runs'))}"], SandboxSettings(), env, ws)
    shutil.rmtree(socket_dir)
    assert launch.prepared is not None
    done = _run(launch.prepared, launch.env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert (ws / "runs").read_text() == "ran\n"


def test_a_command_that_prints_bubblewraps_refusal_is_not_started_twice(
    program: str, socket_dir: Path, tmp_path: Path
) -> None:
    """A hostile command writes exactly what bubblewrap writes, after the socket went, and exits 1 as bubblewrap
    would: it is the command's output and status (its stderr never reaches the pipe `_start.py` reads, and
    bubblewrap reported that the command ran), so it is not run a second time."""
    ws = _workspace(tmp_path)
    sock = socket_dir / "db.sock"
    forged = f"bwrap: Can't mkdir parents for {sock}: Read-only file system"
    go = ws / "go"
    command = (
        f"echo ran >> {shlex.quote(str(ws / 'runs'))}; "
        f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.02; done; "
        f"echo {shlex.quote(forged)} >&2; exit 1"
    )
    prepared = BwrapBackend(program).prepare(["sh", "-c", command], SandboxRequest(), ws)

    def remove_then_go() -> None:
        deadline = time.monotonic() + 60
        while not (ws / "runs").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        shutil.rmtree(socket_dir)  # gone now, as a vanished cover would be
        go.write_text("")

    thread = threading.Thread(target=remove_then_go, daemon=True)
    thread.start()
    done = _run(prepared)
    thread.join(5)
    assert (ws / "runs").read_text() == "ran\n", "started once"
    assert done.returncode == 1 and done.stderr.strip() == forged, done.stderr


def test_a_real_refusal_is_reported_as_is(program: str, socket_dir: Path, tmp_path: Path) -> None:
    """A set-up failure that names no socket cover is passed on unchanged, with bubblewrap's status (the socket
    makes the call go through the starter)."""
    ws = _workspace(tmp_path)
    prepared = BwrapBackend(program).prepare(["sh", "-c", "echo ran"], SandboxRequest(), ws)
    argv = list(prepared.argv)
    assert STARTER in argv
    end = argv.index("--", argv.index(program) if program in argv else 0)
    argv[end:end] = ["--ro-bind", "/no/such/source", "/srv/x"]  # bubblewrap refuses: no source
    try:
        done = subprocess.run(argv, env={**os.environ, **prepared.env}, capture_output=True, text=True, timeout=60)
    finally:
        prepared.finish()
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("bwrap: ") and "/no/such/source" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, "bubblewrap's own words, once"


_PARENT = """
import os, subprocess, sys
from pathlib import Path
from bearagent.sandbox.bwrap import STARTER, BwrapBackend
from bearagent.sandbox.request import SandboxRequest
program, ws = sys.argv[1:3]
marker = os.environ.pop("MARKER")  # not in this process's argv: only the call's shell carries it
command = f"echo started > {ws}/started; sleep 600; : {marker}"
prepared = BwrapBackend(program).prepare(["sh", "-c", command], SandboxRequest(), Path(ws))
assert STARTER in prepared.argv, prepared.argv[:6]
subprocess.Popen(prepared.argv, env={**os.environ, **prepared.env}).wait()
"""


def test_when_bearagent_dies_the_starter_takes_the_sandbox_with_it(
    program: str, socket_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL of the process that started the call (BearAgent): the starter sees it on its pidfd, kills bubblewrap,
    and bubblewrap's sandbox goes with it. No process of the call survives."""
    from tests.support.host_probes import processes_with

    ws = _workspace(tmp_path)
    marker = f"bearagent-starter-{os.getpid()}-{time.monotonic_ns()}"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, program, str(ws)], env={**os.environ, "MARKER": marker})
    try:
        deadline = time.monotonic() + 60
        while not (ws / "started").exists() and time.monotonic() < deadline:
            assert parent.poll() is None, "the parent ended before the command started"
            time.sleep(0.02)
        assert processes_with(marker), "the call's shell runs, in the sandbox"
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30  # generous: the kill is immediate, a loaded machine is not
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes_with(marker), "a process of the call survived its BearAgent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in processes_with(marker):
            os.kill(pid, 9)

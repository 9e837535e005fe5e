"""Unix sockets of the host bound while a sandboxed call runs (issue 28, item 9, the gap the covers left).

The covers of `bearagent.sandbox.sockets` know only the sockets that exist when a call starts; the sandbox's mounts
are live views of the host's directories, so a socket bound mid-call (a dev server started in another terminal, an
agent that comes up, a database restarted, a socket re-bound at a covered path) would be reachable. The rule: a
sandboxed command cannot make a Unix socket at all (`sandbox.unix_sockets: deny`, the default; a seccomp filter in
`_limits.py`), so it reaches none, whenever and wherever it was bound. Real runs: the scripted model plays the
injected model, the real bubblewrap, the host's listener is the attacker's endpoint.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import pytest
import yaml
from tests.security.test_sandbox import MAIN, run_bash
from tests.security.test_sandbox_host import UnixListener
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, scripted_workspace
from tests.support.sandbox_marks import needs_sandbox

from bearagent.api import open_workspace
from bearagent.domain.errors import BearAgentError
from bearagent.plugins.manager import PluginHost

pytestmark = needs_sandbox()

PROBE = """\
import os, socket, sys, time
target, started, ready = sys.argv[1:4]
open(started, "w").close()
deadline = time.time() + 30
while not os.path.exists(ready) and time.time() < deadline:
    time.sleep(0.02)
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(target)
    print("GOT", s.recv(100))
except OSError as e:
    print("REFUSED", e)
"""


def _stdout(result: Mapping[str, object]) -> str:
    return str(cast(Mapping[str, object], result.get("data") or {}).get("stdout", ""))


@pytest.fixture
def home(sandbox_home_base: Path) -> Path:
    path = sandbox_home_base / "home"
    (path / "bearagent").mkdir(parents=True)
    return path


def _mid_call(
    ws: Path, home: Path, outside: Path, target: Path, bind: Callable[[], UnixListener], user_config: str
) -> tuple[dict[str, object], UnixListener | None]:
    """One Bash call that signals it started, waits until the host bound `target` (by `bind`), then connects."""
    probe = outside / "probe.py"
    probe.write_text(PROBE)
    started, ready = ws / "started.flag", ws / "ready.flag"
    bound: list[UnixListener] = []

    def host() -> None:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        bound.append(bind())
        ready.write_text("")

    thread = threading.Thread(target=host, daemon=True)
    thread.start()
    command = " ".join(shlex.quote(str(p)) for p in (probe, target, started, ready))
    results = run_bash(ws, home, [f"python3 {command}"], user_config=user_config)
    thread.join(10)
    return results[0], (bound[0] if bound else None)


@pytest.mark.parametrize("where", ["workspace", "visible-dir", "new-dir", "visible-home", "toolchain-dir"])
def test_a_socket_bound_after_the_call_started_is_unreachable(
    tmp_path: Path, home: Path, sandbox_outside: Path, where: str
) -> None:
    """A socket the host binds mid-call, in each kind of directory the sandbox shows live: the workspace (a dev
    server), a read-only host directory (a `/run`-like one), a directory made mid-call, the home with the user's
    `home: visible`, a toolchain directory of the hidden home (`~/.local/bin`, bound read-only)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (home / ".local" / "bin").mkdir(parents=True)
    (sandbox_outside / "run").mkdir()
    target = {
        "workspace": ws / "dev.sock",
        "visible-dir": sandbox_outside / "run" / "agent.sock",
        "new-dir": sandbox_outside / "run" / "made-later" / "db.sock",
        "visible-home": home / "agent.sock",
        "toolchain-dir": home / ".local" / "bin" / "agent.sock",
    }[where]

    def bind() -> UnixListener:
        target.parent.mkdir(parents=True, exist_ok=True)
        return UnixListener(target)

    config = "sandbox: {home: visible}\n" if where == "visible-home" else "sandbox: {}\n"
    result, listener = _mid_call(ws, home, sandbox_outside, target, bind, config)
    try:
        assert listener is not None
        assert "GOT" not in _stdout(result) and "REFUSED" in _stdout(result), result
        assert listener.accepted == 0
    finally:
        if listener is not None:
            listener.close()


def test_a_covered_socket_re_bound_mid_call_is_unreachable(tmp_path: Path, home: Path, sandbox_outside: Path) -> None:
    """A socket that existed when the call started is covered by `/dev/null`; the host removes it and binds it
    again (a restarted agent or database): the kernel drops the cover with the old file, the new one is bare."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (sandbox_outside / "run").mkdir()
    target = sandbox_outside / "run" / "agent.sock"
    first = UnixListener(target)

    def bind() -> UnixListener:
        first.close()
        target.unlink()
        return UnixListener(target)

    result, listener = _mid_call(ws, home, sandbox_outside, target, bind, "sandbox: {}\n")
    try:
        assert listener is not None
        assert "GOT" not in _stdout(result) and "REFUSED" in _stdout(result), result
        assert listener.accepted == 0
    finally:
        if listener is not None:
            listener.close()


def test_the_opt_out_lets_commands_make_unix_sockets_and_the_gap_is_real(
    tmp_path: Path, home: Path, sandbox_outside: Path
) -> None:
    """The control: with the user's `unix_sockets: allow` the same mid-call socket in a visible directory is
    reached (what the default closes), and a command's own Unix sockets work."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (sandbox_outside / "run").mkdir()
    target = sandbox_outside / "run" / "agent.sock"
    result, listener = _mid_call(
        ws, home, sandbox_outside, target, lambda: UnixListener(target), "sandbox: {unix_sockets: allow}\n"
    )
    try:
        assert listener is not None
        assert "GOT b'HELLO-FROM-HOST" in _stdout(result), result
    finally:
        if listener is not None:
            listener.close()


OWN = (
    'python3 -c "import socket\n'
    "for name, make in [('unix', lambda: socket.socket(socket.AF_UNIX)), "
    "('dgram', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)), "
    "('pair', lambda: socket.socketpair()[0]), ('tcp', lambda: socket.socket(socket.AF_INET))]:\n"
    " try:\n  make().close(); print(name, 'ok')\n except OSError as e: print(name, 'refused', e.errno)\""
)


def test_a_command_cannot_make_a_unix_socket_but_keeps_pairs_and_tcp(tmp_path: Path, home: Path) -> None:
    results = run_bash(tmp_path / "ws", home, [OWN, "python3 -c 'import multiprocessing as m; print(m.Pipe())'"])
    lines = set(_stdout(results[0]).split("\n"))
    assert {"unix refused 1", "dgram refused 1", "pair ok", "tcp ok"} <= lines, results[0]
    assert "Connection" in _stdout(results[1]), results[1]  # a pipe between processes is a socketpair: it works


BASH_TOUCH = {"name": "Bash", "arguments": {"command": "touch ran.flag"}}


def _refused_run(ws: Path, home: Path, config: str = "") -> str:
    """Run the scripted Bash call `touch ran.flag`: the run must stop before any tool runs; the error's text."""
    scripted_workspace(
        ws,
        yaml.safe_dump({"turns": [{"tool_calls": [BASH_TOUCH]}, {"text": "done"}]}),
        agents=MAIN,
        config=CONFIG + config,
    )
    with (
        open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace,
        pytest.raises(BearAgentError) as caught,
    ):
        workspace.run_sync("go")
    assert not (ws / "ran.flag").exists()
    return f"{caught.value} {caught.value.hint or ''}"


def test_a_workspace_cannot_allow_unix_sockets(tmp_path: Path, home: Path) -> None:
    """`unix_sockets: allow` loosens the sandbox: from a workspace file it is a config error that stops the run,
    naming the field and where it belongs."""
    text = _refused_run(tmp_path / "ws", home, "sandbox: {unix_sockets: allow}\n")
    assert "sandbox.unix_sockets" in text and "user config" in text, text


def test_a_bad_value_is_a_config_error_that_stops_the_run(tmp_path: Path, home: Path) -> None:
    write(home / "bearagent", "config.yaml", "sandbox: {unix_sockets: sometimes}\n")
    text = _refused_run(tmp_path / "ws", home)
    assert "sandbox.unix_sockets" in text and "deny, allow" in text, text

"""The sandbox and the host (issue 28, items 9, 10, 13): no socket of the host reachable, no credential store
readable, the home hidden but for its toolchains, and process and memory limits.

Real runs with the scripted model and the real bubblewrap. The home and the sockets live outside /tmp (under the
repository's `.cache/`): the sandbox has its own /tmp, so a path there would be invisible for the wrong reason.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import cast

import pytest
from tests.security.test_sandbox import run_bash
from tests.support import postgres_cluster
from tests.support.sandbox_marks import needs_sandbox

from bearagent.sandbox.probe import find_bwrap

pytestmark = needs_sandbox()

REPO = Path(__file__).resolve().parents[2]
CANARY = "canary-credential-5b7e"
STORES = [
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".config/gh/hosts.yml",
    ".config/gcloud/credentials.db",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".docker/config.json",
    ".kube/config",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".vault-token",
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/key.key",
    ".cache/huggingface/token",
    ".cache/gh/token",
    ".local/share/gh/token",
    ".bash_history",
    ".zsh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".psql_history",
    ".pgpass",
    ".terraform.d/credentials.tfrc.json",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".huggingface/token",
    ".gemini/oauth_creds.json",
]


def _stdout(result: Mapping[str, object]) -> str:
    return str(cast(Mapping[str, object], result.get("data") or {}).get("stdout", ""))


def _stderr(result: Mapping[str, object]) -> str:
    return str(cast(Mapping[str, object], result.get("data") or {}).get("stderr", ""))


@pytest.fixture
def outside(sandbox_outside: Path) -> Path:
    """A directory outside /tmp, the homes and the workspace that the sandbox shows read-only (tests/conftest.py)."""
    return sandbox_outside


@pytest.fixture
def home(sandbox_home_base: Path) -> Path:
    path = sandbox_home_base / "home"
    (path / "bearagent").mkdir(parents=True)
    return path


# ---- credentials and the home ------------------------------------------------------------------------------


@pytest.mark.parametrize("home_mode", ["hidden", "visible"])
def test_every_listed_credential_store_is_unreadable(tmp_path: Path, home: Path, home_mode: str) -> None:
    """With the home hidden (default) and with the user's `home: visible`: the deny-list holds on its own."""
    for rel in STORES:
        write_to = home / rel
        write_to.parent.mkdir(parents=True, exist_ok=True)
        write_to.write_text(f"{CANARY} {rel}\n")
    # One Bash call reads them all (each sandbox is built from the same settings; a call per store only cost a
    # sandbox start each, ~15 s for the 30), each read headed by its name so that a leak names its store.
    reads = "; ".join(f"echo '== {rel}'; cat ~/{rel}" for rel in STORES)
    commands = [f"{reads}; echo rc=$?", "grep -r canary ~ 2>/dev/null; echo done"]
    results = run_bash(tmp_path / "ws", home, commands, user_config=f"sandbox: {{home: {home_mode}}}\n")
    out = _stdout(results[0])
    assert all(f"== {rel}" in out for rel in STORES), out  # every read ran
    for section in out.split("== ")[1:]:
        rel = section.partition("\n")[0]
        assert CANARY not in section, f"{rel} was readable in the sandbox ({home_mode} home)"
    assert CANARY not in _stdout(results[1]), f"grep found a credential in the sandbox ({home_mode} home)"
    assert (home / STORES[0]).read_text().startswith(CANARY)  # hidden, not touched


def test_credential_stores_named_by_the_environment_are_hidden_wherever_they_are(
    tmp_path: Path, home: Path, outside: Path
) -> None:
    """A CI keeps its secrets outside the home and names them by variables: each named path is hidden too."""
    secrets = outside / "secrets"
    files = {
        "AWS_SHARED_CREDENTIALS_FILE": secrets / "aws-credentials",
        "GOOGLE_APPLICATION_CREDENTIALS": secrets / "gcp.json",
        "DOCKER_CONFIG": secrets / "docker",
        "CARGO_HOME": secrets / "cargo",
    }
    kube = [secrets / "kube-a", secrets / "kube-b"]
    for path in [files["AWS_SHARED_CREDENTIALS_FILE"], files["GOOGLE_APPLICATION_CREDENTIALS"], *kube]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CANARY)
    (files["DOCKER_CONFIG"]).mkdir()
    (files["DOCKER_CONFIG"] / "config.json").write_text(CANARY)
    (files["CARGO_HOME"] / "bin").mkdir(parents=True)
    (files["CARGO_HOME"] / "credentials.toml").write_text(CANARY)
    (files["CARGO_HOME"] / "bin" / "tool").write_text("cargo tool\n")
    env = {name: str(path) for name, path in files.items()} | {"KUBECONFIG": ":".join(map(str, kube))}
    q = shlex.quote
    results = run_bash(
        tmp_path / "ws",
        home,
        [
            f"cat {q(str(files['AWS_SHARED_CREDENTIALS_FILE']))} {q(str(files['GOOGLE_APPLICATION_CREDENTIALS']))}; "
            f"cat {' '.join(q(str(k)) for k in kube)}; cat {q(str(files['DOCKER_CONFIG'] / 'config.json'))}; "
            f"cat {q(str(files['CARGO_HOME'] / 'credentials.toml'))}; echo end",
            f"cat {q(str(files['CARGO_HOME'] / 'bin' / 'tool'))}",
        ],
        env=env,
    )
    assert CANARY not in _stdout(results[0]) and "end" in _stdout(results[0]), results[0]
    assert _stdout(results[1]).strip() == "cargo tool"  # CARGO_HOME: only its credentials are hidden


def test_the_user_adds_credential_stores_and_a_workspace_cannot_remove_any(tmp_path: Path, home: Path) -> None:
    (home / ".my-tool").mkdir()
    (home / ".my-tool" / "token").write_text(CANARY)
    (home / "notes.txt").write_text("plain notes\n")
    command = "cat ~/.my-tool/token; echo; cat ~/notes.txt"
    before = run_bash(tmp_path / "ws1", home, [command], user_config="sandbox: {home: visible}\n")
    assert CANARY in _stdout(before[0]) and "plain notes" in _stdout(before[0])  # the control: readable before
    after = run_bash(
        tmp_path / "ws2", home, [command], user_config="sandbox: {home: visible, credentials: [~/.my-tool]}\n"
    )
    assert CANARY not in _stdout(after[0]) and "plain notes" in _stdout(after[0])


def test_the_home_is_hidden_by_default_but_its_toolchains_stay(tmp_path: Path, home: Path) -> None:
    (home / "projects" / "other").mkdir(parents=True)
    (home / "projects" / "other" / "secret.txt").write_text(CANARY)
    tool = home / ".local" / "bin" / "mytool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho tool-ran\n")
    tool.chmod(0o755)
    (home / ".gitconfig").write_text("[user]\n\tname = Sandboxed User\n")
    results = run_bash(
        tmp_path / "ws",
        home,
        [
            "cat ~/projects/other/secret.txt; ls ~/projects; echo rc=$?",
            "~/.local/bin/mytool",
            "git config --global user.name",
            "echo scratch > ~/scratch && cat ~/scratch",
        ],
    )
    assert CANARY not in _stdout(results[0]) and "rc=2" in _stdout(results[0]), results[0]
    assert _stdout(results[1]).strip() == "tool-ran", results[1]
    assert _stdout(results[2]).strip() == "Sandboxed User", results[2]
    assert _stdout(results[3]).strip() == "scratch" and not (home / "scratch").exists(), results[3]
    visible = run_bash(
        tmp_path / "ws2", home, ["cat ~/projects/other/secret.txt"], user_config="sandbox: {home: visible}\n"
    )
    assert CANARY in _stdout(visible[0])


def test_bearagents_own_python_stays_readable_under_tmp_and_the_rest_of_tmp_does_not(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout tried out under /tmp keeps its `.venv` there: a hook or MCP server run with BearAgent's
    interpreter, confined, must still find it (the CI failure of stop 44: "/tmp/ci ö…/.venv/bin/python: No such
    file or directory"). The prefix is made to live under /tmp whatever the checkout's place; a sibling stays
    hidden by the private /tmp."""
    base = Path(tempfile.mkdtemp(prefix="ba-prefix-", dir="/tmp"))
    try:
        prefix = base / "env ö"
        (prefix / "bin").mkdir(parents=True)
        (prefix / "bin" / "marker").write_text("prefix-visible\n")
        (base / "sibling.txt").write_text(CANARY)
        monkeypatch.setattr(sys, "prefix", str(prefix))
        results = run_bash(
            tmp_path / "ws",
            home,
            [f"cat {shlex.quote(str(prefix / 'bin' / 'marker'))}", f"cat {shlex.quote(str(base / 'sibling.txt'))}"],
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert _stdout(results[0]).strip() == "prefix-visible", results[0]
    assert CANARY not in _stdout(results[1]), results[1]


@pytest.fixture
def other_home() -> Iterator[Path]:
    """Another person's home under /home, with world-readable files (as `~/.aws/credentials` and `~/.pypirc` often
    are): a directory of /home is a home whether or not the password database names it."""
    if not os.access("/home", os.W_OK):
        pytest.skip("making another person's home under /home needs root")
    path = Path(tempfile.mkdtemp(prefix="ba-other-", dir="/home"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("home_mode", ["hidden", "visible"])
def test_other_peoples_homes_are_hidden_too(tmp_path: Path, home: Path, other_home: Path, home_mode: str) -> None:
    for rel, text in ((".aws/credentials", CANARY), (".pypirc", CANARY), ("notes.txt", "plain notes")):
        (other_home / rel).parent.mkdir(parents=True, exist_ok=True)
        (other_home / rel).write_text(text + "\n")
        (other_home / rel).chmod(0o644)
    o = shlex.quote(str(other_home))
    results = run_bash(
        tmp_path / "ws",
        home,
        [f"cat {o}/.aws/credentials {o}/.pypirc; grep -r canary {o}; echo rc=$?", f"cat {o}/notes.txt"],
        user_config=f"sandbox: {{home: {home_mode}}}\n",
    )
    assert CANARY not in _stdout(results[0]), results[0]
    assert ("plain notes" in _stdout(results[1])) == (home_mode == "visible"), results[1]
    assert (other_home / ".aws/credentials").read_text().startswith(CANARY)  # hidden, not touched


def test_a_workspace_inside_another_home_still_works(tmp_path: Path, home: Path, other_home: Path) -> None:
    (other_home / "secret.txt").write_text(CANARY)
    ws = other_home / "project"
    results = run_bash(ws, home, ["cat ../secret.txt; echo; echo made > out.txt && cat out.txt"])
    assert CANARY not in _stdout(results[0]) and "made" in _stdout(results[0]), results[0]
    assert (ws / "out.txt").read_text() == "made\n"


# ---- sockets -------------------------------------------------------------------------------------------------


class UnixListener:
    """A listening Unix socket on the host; counts connections, relays them to `relay_to` when given."""

    def __init__(self, path: Path | str, relay_to: str | None = None) -> None:
        self.path = path
        self.relay_to = relay_to
        self.accepted = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.relay_to is None:
                conn.sendall(b"HELLO-FROM-HOST\n")
                conn.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.relay_to)
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self.sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


CONNECT = (
    'python3 -c "import socket,sys; '
    "exec('try:\\n s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(100))\\n"
    "except OSError as e:\\n print(\\'REFUSED\\', e)')\" "
)


@pytest.mark.parametrize("unix", ["deny", "allow"])
@pytest.mark.parametrize("where", ["home", "run-like", "workspace"])
def test_no_listening_unix_socket_of_the_host_is_reachable(
    tmp_path: Path, home: Path, outside: Path, where: str, unix: str
) -> None:
    """A socket bound before the call: refused by the Unix socket filter (`unix_sockets: deny`, the default) and,
    with the user's `allow`, by the `/dev/null` cover over it."""
    directory = {"home": home / ".gnupg-like", "run-like": outside / "run" / "agent", "workspace": tmp_path / "ws"}[
        where
    ]
    directory.mkdir(parents=True, exist_ok=True)
    listener = UnixListener(directory / "agent.sock")
    try:
        with socket.socket(socket.AF_UNIX) as control:
            control.connect(str(listener.path))
            assert control.recv(100).startswith(b"HELLO")
        results = run_bash(
            tmp_path / "ws",
            home,
            [CONNECT + str(listener.path)],
            user_config=f"sandbox: {{home: visible, unix_sockets: {unix}}}\n",
        )
        assert "HELLO" not in _stdout(results[0]) and "REFUSED" in _stdout(results[0]), results[0]
        assert listener.accepted == 1
    finally:
        listener.close()


def _landlock_abi() -> int:
    import ctypes

    try:
        return int(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))
    except (OSError, AttributeError):
        return -1


ABSTRACT = (
    'python3 -c "import socket,sys; '
    "exec('try:\\n s=socket.socket(socket.AF_UNIX); s.connect(chr(0)+sys.argv[1]); print(s.recv(100))\\n"
    "except OSError as e:\\n print(\\'REFUSED\\', e)')\" "
)
INSIDE_ABSTRACT = (
    'python3 -c "import socket,sys,threading; n=chr(0)+sys.argv[1]; l=socket.socket(socket.AF_UNIX); l.bind(n); '
    "l.listen(); threading.Thread(target=lambda: l.accept()[0].sendall(b'OK-INSIDE')).start(); "
    'c=socket.socket(socket.AF_UNIX); c.connect(n); print(c.recv(100).decode())" '
)


@pytest.mark.skipif(_landlock_abi() < 6, reason="the kernel has no Landlock scopes (Linux 6.12+, ABI 6)")
@pytest.mark.parametrize("limits", ["", ", limits: off", ", unix_sockets: allow", ", limits: off, unix_sockets: allow"])
def test_no_abstract_socket_of_the_host_is_reachable_even_with_network_allow(
    tmp_path: Path, home: Path, limits: str
) -> None:
    """With `network: allow` the sandbox shares the host's network namespace, and with it the abstract sockets
    (X11's, a session bus's, an agent's): the Unix socket filter refuses every Unix socket (the default), and with
    the user's `unix_sockets: allow` a Landlock scope keeps them out, whatever the limits, while the command's own
    abstract sockets work."""
    name = f"bearagent-test-{os.getpid()}-{len(limits)}"
    listener = UnixListener("\0" + name)
    try:
        with socket.socket(socket.AF_UNIX) as control:
            control.connect("\0" + name)
            assert control.recv(100).startswith(b"HELLO")
        results = run_bash(
            tmp_path / "ws",
            home,
            [ABSTRACT + name, INSIDE_ABSTRACT + name + "-inside"],
            user_config=f"sandbox: {{network: allow{limits}}}\n",
        )
        assert "HELLO" not in _stdout(results[0]) and "REFUSED" in _stdout(results[0]), results[0]
        assert listener.accepted == 1
        if "unix_sockets: allow" in limits:
            assert _stdout(results[1]).strip() == "OK-INSIDE", results[1]
        else:
            assert "Operation not permitted" in _stderr(results[1]), results[1]
    finally:
        listener.close()


def test_a_postgresql_socket_is_unreachable(tmp_path: Path, home: Path, outside: Path) -> None:
    """A real PostgreSQL: its own socket directory (the store's), a relay of it outside /tmp, and its TCP port."""
    postgres_cluster.require()
    cluster = postgres_cluster.cluster()
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    sockets = outside / "pg"
    sockets.mkdir()
    real = cluster.socket_dir / f".s.PGSQL.{cluster.port}"
    relay = UnixListener(sockets / f".s.PGSQL.{cluster.port}", relay_to=str(real))
    query = f"-p {cluster.port} -U {postgres_cluster.SUPERUSER} -d postgres -Atc 'select 40+2'"
    try:
        control = subprocess.run(
            f"psql -h {shlex.quote(str(sockets))} {query}",
            shell=True,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert control.stdout.strip() == "42", control.stderr  # the relay reaches the real server from the host
        results = run_bash(
            tmp_path / "ws",
            home,
            [
                f"psql -h {shlex.quote(str(sockets))} {query}; echo rc=$?",
                f"psql -h {shlex.quote(str(cluster.socket_dir))} {query}; echo rc=$?",
                f"psql -h 127.0.0.1 {query}; echo rc=$?",
                CONNECT + str(sockets / f".s.PGSQL.{cluster.port}"),
            ],
        )
        for result in results:
            assert "42" not in _stdout(result).split(), result
        assert relay.accepted == 1
    finally:
        relay.close()


# ---- limits ----------------------------------------------------------------------------------------------------


def _kernel_ceilings() -> set[str]:
    from bearagent.sandbox.cgroups import find_hierarchies

    return set(find_hierarchies(("pids", "memory")))


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0 and "pids" not in _kernel_ceilings(),
    reason="as root the kernel ignores RLIMIT_NPROC, and no control group may be made here for a pids ceiling: "
    "the call is refused instead (tests/security/test_sandbox_root_limits.py)",
)
@pytest.mark.parametrize("bomb", ["bomb() { bomb | bomb & }; bomb", "python3 -c 'import os\nwhile True: os.fork()'"])
def test_a_fork_bomb_is_stopped_and_the_run_continues(tmp_path: Path, home: Path, bomb: str) -> None:
    results = run_bash(
        tmp_path / "ws",
        home,
        [f"{bomb}; sleep 30; echo survived", "echo after", "ps -e --no-headers | wc -l"],
        user_config="sandbox: {limits: {processes: 64}}\n",
    )
    assert "survived" not in _stdout(results[0])
    said = _stderr(results[0]) + str(results[0].get("content", ""))
    assert "more than 64 processes" in said or "process ceiling" in said, results[0]
    assert _stdout(results[1]).strip() == "after"
    assert int(_stdout(results[2]).strip()) < 10  # nothing of the bomb is left in the next call's sandbox


HOLD = """
import os, time

held = b"x" * (96 << 20)
deadline = time.monotonic() + 20


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


while time.monotonic() < deadline:
    with open("pids") as pids:
        if any(gone(int(p)) for p in pids.read().split() if int(p) != os.getpid()):
            break
    time.sleep(0.1)
"""
"""One of the six processes of the memory test: it holds 96 MiB until a sibling is gone (the kernel killed it at the
call's memory limit) or for 20 s (generous: all six must hold their memory at once, however slowly a loaded machine
starts them). Without a limit none dies and each holds for the whole 20 s, as the test always waited before; with
one, the survivors stop at once instead of sleeping out the 20 s."""


@pytest.mark.skipif(
    "memory" not in _kernel_ceilings(),
    reason="no control group may be made here: the memory limit then bounds each process, not their sum",
)
def test_many_processes_cannot_pass_the_memory_limit_together(tmp_path: Path, home: Path) -> None:
    """Each process stays below the limit (RLIMIT_DATA lets it), their sum does not: the call's ceiling holds."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hold.py").write_text(HOLD)
    results = run_bash(
        ws,
        home,
        [": > pids; for i in 1 2 3 4 5 6; do python3 hold.py & echo $! >> pids; done; wait; echo done", "echo after"],
        user_config="sandbox: {limits: {memory: 256M}}\n",
    )
    said = _stderr(results[0]) + str(results[0].get("content", ""))
    assert "memory limit" in said, results[0]
    assert _stdout(results[1]).strip() == "after"


@pytest.mark.parametrize(("gib", "limit"), [(1, "256M"), (3, "2G")])  # 3 GiB: the red team's allocation (item 13)
def test_a_memory_hog_is_stopped_and_the_run_continues(tmp_path: Path, home: Path, gib: int, limit: str) -> None:
    results = run_bash(
        tmp_path / "ws",
        home,
        [f"python3 -c 'b = bytearray({gib} << 30); print(\"allocated\")'", "echo after"],
        user_config=f"sandbox: {{limits: {{memory: {limit}}}}}\n",
    )
    assert "allocated" not in _stdout(results[0])
    assert "MemoryError" in _stderr(results[0]) + str(results[0].get("content", ""))
    assert _stdout(results[1]).strip() == "after"


def test_the_sandboxs_own_file_systems_cannot_fill_the_hosts_memory(tmp_path: Path, home: Path) -> None:
    """/tmp, /var/tmp and the hidden home are tmpfs, which live in memory and which RLIMIT_DATA does not see: each is
    sized by the memory limit (a hidden credential directory by 16 MiB), so many files each under the file-size
    limit do not add up past it."""
    (home / ".config").mkdir(exist_ok=True)  # a hidden credential directory (an empty 16 MiB tmpfs inside)
    # `du -x`: what was written to that file system only. Mounts below it are not its size: BearAgent's own venv,
    # bound read-only into the private /tmp when the checkout is under /tmp (345 MB counted as "/tmp" once, as an
    # ordinary user, who has no memory control group to stop the writes first)
    fill = "for i in 1 2 3 4 5 6; do dd if=/dev/zero of={d}/f$i bs=1M count=64 2>/dev/null; done; du -xsm {d} | cut -f1"
    results = run_bash(
        tmp_path / "ws",
        home,
        [fill.format(d="/tmp"), fill.format(d="~"), fill.format(d="~/.config"), "echo after"],
        user_config="sandbox: {limits: {memory: 128M}}\n",
    )
    for result, cap in zip(results[:3], (128, 128, 16), strict=True):
        written = _stdout(result).strip().splitlines()
        if "reached its memory limit" in _stderr(result):  # the call's memory cgroup stopped it first (tmpfs pages
            continue  # are the call's memory): bounded either way
        assert written and int(written[-1]) <= cap + 1, result
    assert _stdout(results[3]).strip() == "after"
    from bearagent.sandbox.bwrap import BwrapBackend, supports_size
    from bearagent.sandbox.request import SandboxRequest

    program = find_bwrap(None)
    assert program is not None
    if supports_size(program):  # the sizes are bubblewrap's, not only the memory cgroup's (absent for most users)
        argv = list(BwrapBackend(program).prepare(["true"], SandboxRequest(limits=(None, 128 << 20, None)), home).argv)
        argv_pairs = list(zip(argv, argv[1:], argv[2:], argv[3:], strict=False))
        assert ("--size", str(128 << 20), "--tmpfs", "/tmp") in argv_pairs


def test_the_limits_are_on_by_default(tmp_path: Path, home: Path) -> None:
    from bearagent.sandbox._limits import nproc_backstop

    results = run_bash(tmp_path / "ws", home, ["ulimit -u; ulimit -d; ulimit -f"])
    # processes: 1024 counted by the supervisor; RLIMIT_NPROC is its backstop above it (1024 + 512 + 64)
    assert _stdout(results[0]).split() == [nproc_backstop("1024"), str((8 << 30) // 1024), str((16 << 30) // 1024)]
    assert nproc_backstop("1024") == "1600" and nproc_backstop("-") == "-"


# ---- the user-only settings --------------------------------------------------------------------------------


def test_a_workspace_cannot_set_the_user_only_sandbox_keys() -> None:
    from bearagent.sandbox.settings import SandboxLimits, merge_sandbox, parse_sandbox

    workspace = {
        "git": "writable",
        "home": "visible",
        "credentials": ["~/x"],
        "limits": "off",
        "pin_hook_code": False,
    }
    parsed, problems = parse_sandbox(workspace, level="workspace")
    assert parsed == {}
    assert sorted(p.field for p in problems) == sorted(f"sandbox.{k}" for k in workspace)
    assert all("user config" in p.message and "config.yaml" in p.fix for p in problems)
    user, user_problems = parse_sandbox(
        {"git": "writable", "limits": {"processes": 64, "memory": "512M", "file_size": "off"}}, level="user"
    )
    assert user_problems == []
    merged = merge_sandbox([("user", user), ("workspace", parsed)])
    assert merged.git == "writable" and merged.home == "hidden" and merged.pin_hook_code
    assert merged.limits == SandboxLimits(processes=64, memory=512 << 20, file_size=None)
    _, bad = parse_sandbox({"limits": {"processes": 2, "memory": "lots"}}, level="user")
    assert [p.field for p in bad] == ["sandbox.limits.processes", "sandbox.limits.memory"]


def test_a_home_removed_while_a_call_starts_does_not_break_it(tmp_path: Path, other_home: Path) -> None:
    """A home under /home that goes between the call's preparation and its start (an account deleted; in the suite,
    another worker's `other_home` removed) used to fail the call ("bwrap: Can't mkdir /home/x: Read-only file
    system"): /home is now hidden as one directory, so the mounts name no home in it."""
    from bearagent.sandbox.bwrap import BwrapBackend
    from bearagent.sandbox.request import build_request
    from bearagent.sandbox.settings import SandboxSettings

    program = find_bwrap(None)
    assert program is not None
    request = build_request(SandboxSettings(), {"HOME": str(tmp_path / "me"), "PATH": os.environ["PATH"]})
    assert "/home" in request.hidden_homes and str(other_home) not in request.hidden_homes
    ws = tmp_path / "ws"
    ws.mkdir()
    prepared = BwrapBackend(program).prepare(["sh", "-c", f"ls {shlex.quote(str(other_home))}; echo ran"], request, ws)
    try:
        shutil.rmtree(other_home)  # gone after the preparation, before the start
        done = subprocess.run(prepared.argv, env={**os.environ, **prepared.env}, capture_output=True, text=True)
    finally:
        prepared.finish()
    assert done.returncode == 0 and done.stdout.strip().endswith("ran"), done.stderr

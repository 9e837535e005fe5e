"""Fork bombs as root where no control group may be made (issue 28, item 13, the gap the last round left).

The kernel exempts root from `RLIMIT_NPROC`, so as root only a `pids` control group holds a fork bomb; the
supervisor's count can be outrun. Where BearAgent (as root) may not make one, a sandboxed call with a process limit
is not run at all (fail closed), the message naming `sandbox.limits.processes` and the fixes; the user's
`limits: {processes: off}` (or `limits: off`) runs it without. Real runs of the `bearagent` CLI with the scripted
model and the real bubblewrap, in a mount namespace whose `/sys/fs/cgroup` is an empty tmpfs (a container with no
cgroupfs): the host's control groups are untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace
from tests.support.sandbox_marks import needs_sandbox

from bearagent.sandbox import cgroups

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
NO_CGROUPS = 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"'
UNSHARE = ("unshare", "--mount", "--propagation", "private", "sh", "-c", NO_CGROUPS, "sh")


def _can_hide_cgroups() -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        [*UNSHARE, "cat", "/proc/self/cgroup"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return done.returncode == 0


pytestmark = [
    *needs_sandbox(),
    pytest.mark.skipif(
        not _can_hide_cgroups(),
        reason="needs root and a private mount namespace (unshare) to take the control groups away",
    ),
]

BOMBS = [
    "echo ran > ran.flag",
    "bomb() { bomb | bomb & }; bomb; echo ran > ran.flag",
    "python3 -c 'import os\nwhile True: os.fork()'; echo ran > ran.flag",
]


def _run(ws: Path, home: Path, commands: list[str], user_config: str | None) -> tuple[list[dict[str, object]], str]:
    """One `bearagent run` without control groups; the Bash calls' results as stored, and the CLI's output."""
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "Bash", "arguments": {"command": c}} for c in commands]},
        {"text": "done"},
    ]
    scripted_workspace(
        ws, yaml.safe_dump({"turns": turns}), agents={"main": agent_md("Main.", mode="primary", tools="[Bash]")}
    )
    (home / "bearagent").mkdir(parents=True, exist_ok=True)
    if user_config is not None:
        (home / "bearagent" / "config.yaml").write_text(user_config)
    done = subprocess.run(
        [*UNSHARE, BEARAGENT, "run", "-w", str(ws), "go"],
        env=isolated_env(home, NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    with sqlite3.connect(ws / ".bearagent" / "state.db") as conn:
        rows = conn.execute(
            "SELECT payload FROM events WHERE event_type IN ('ToolCallCompleted', 'ToolCallFailed') ORDER BY rowid"
        ).fetchall()
    return [json.loads(p)["result"] for (p,) in rows], done.stdout + done.stderr


def test_without_a_pids_group_root_runs_no_sandboxed_command_with_a_process_limit(
    tmp_path: Path, sandbox_home_base: Path
) -> None:
    ws = tmp_path / "ws"
    results, output = _run(ws, sandbox_home_base / "home", BOMBS, "sandbox: {limits: {processes: 64}}\n")
    assert len(results) == len(BOMBS), output
    for result in results:
        text = json.dumps(result)
        assert result.get("is_error") is True or "error" in result, result
        assert "sandbox.limits.processes" in text and "processes: off" in text, result
    assert not (ws / "ran.flag").exists()  # none of them ran, the harmless one neither


def test_the_default_limit_is_refused_the_same_way(tmp_path: Path, sandbox_home_base: Path) -> None:
    ws = tmp_path / "ws"
    results, output = _run(ws, sandbox_home_base / "home", ["echo ran > ran.flag"], None)
    assert len(results) == 1, output
    assert "sandbox.limits.processes` (1024)" in json.dumps(results[0]), results[0]
    assert not (ws / "ran.flag").exists()


@pytest.mark.parametrize("setting", ["{limits: {processes: off}}", "{limits: off}"])
def test_the_users_opt_out_runs_it(tmp_path: Path, sandbox_home_base: Path, setting: str) -> None:
    ws = tmp_path / "ws"
    results, output = _run(ws, sandbox_home_base / "home", ["echo ran > ran.flag; echo ok"], f"sandbox: {setting}\n")
    assert len(results) == 1, output
    assert "ok" in json.dumps(results[0]), results[0]
    assert (ws / "ran.flag").read_text() == "ran\n"


def test_the_rule_is_roots_only_and_needs_a_pids_group() -> None:
    """The decision itself: an ordinary user (whom RLIMIT_NPROC holds) and a call with a pids group are run."""
    cgroups.require_process_ceiling(64, None, uid=1000)
    cgroups.require_process_ceiling(None, None, uid=0)
    with pytest.raises(cgroups.ProcessLimitUnenforceableError, match="processes: off"):
        cgroups.require_process_ceiling(64, None, uid=0)
    memory_only = cgroups.CallGroups(((1, "memory", Path("/nonexistent")),))
    with pytest.raises(cgroups.ProcessLimitUnenforceableError):
        cgroups.require_process_ceiling(64, memory_only, uid=0)
    cgroups.require_process_ceiling(64, cgroups.CallGroups(((1, "pids", Path("/nonexistent")),)), uid=0)


def test_an_opted_in_hook_is_not_run_either(tmp_path: Path, sandbox_home_base: Path) -> None:
    """`sandbox.hooks: true` asks for the hook to run confined: as root without a pids group it is not run at all
    (a hook failure naming the limit), never unconfined."""
    ws = tmp_path / "ws"
    flag = sandbox_home_base / "hook-ran.flag"  # outside /tmp: a confined hook could not write it, a free one could
    hooks = {
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {flag}"}]}]},
        "sandbox": {"hooks": True, "limits": {"processes": 64}},
    }
    results, output = _run(ws, sandbox_home_base / "home", ["echo hi"], yaml.safe_dump(hooks))
    assert not flag.exists(), output
    with sqlite3.connect(ws / ".bearagent" / "state.db") as conn:
        hook_events = [p for (p,) in conn.execute("SELECT payload FROM events WHERE event_type = 'HookExecuted'")]
    assert any("sandbox.limits.processes" in p for p in hook_events), (hook_events, output)
    assert "sandbox.limits.processes" in json.dumps(results[0])

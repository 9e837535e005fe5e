"""Trusted hooks and a workspace's MCP servers after an EARLIER process's writes run confined (issue 28, item 3
across processes).

Within one run a hook runs confined after the model's first write (`test_hook_data_code.py`). Across processes the
trust check fingerprints what a hook names, but not what its code loads from data: the model's run 1 rewrites a
file a trusted script evals (or the JSON a workspace MCP server reads its command from); the process exits; a new
process's run 2 fires the hook (SessionStart, PostToolUse after a Read) or calls the server before any write of its
own. The gate recorded run 1's writes in the user config dir (`rewind/workspace_writes.py`), so the planted code
runs in the sandbox: the canary outside the workspace is never written. Only a trust decision clears the record.
Each test is real: `python -m bearagent run` processes, the scripted model, bubblewrap, a real stdio MCP server.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.rewind.workspace_writes import RECORD_FILE, WritesRecord
from bearagent.sandbox.probe import find_bwrap
from bearagent.trust import trust, workspace_trust_surface

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or find_bwrap(None) is None,
        reason="the sandbox tests need Linux and bubblewrap (scripts/ci-extras.sh installs it)",
    ),
    pytest.mark.skipif(
        "BEARAGENT_SANDBOX" in os.environ and os.environ["BEARAGENT_SANDBOX"] != "off",
        reason="running inside a BearAgent sandbox: bubblewrap cannot nest there (see docs/sandbox.md)",
    ),
]

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Bash, Read]", mcp="[runner]")}


def _planted(canary: Path) -> str:
    """The model's code: proves it ran (a line in the workspace), then tries to write outside the workspace."""
    return f"echo ran >> model-code-ran.txt\ntouch {shlex.quote(str(canary))} 2>/dev/null\n"


def _script(ws: Path, turns: list[dict[str, object]]) -> None:
    (ws / ".bearagent/script.yaml").write_text(yaml.safe_dump({"turns": [*turns, {"text": "done"}]}, sort_keys=False))


def _bearagent(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A new BearAgent process with the test's user config dir."""
    command = [sys.executable, "-m", "bearagent", *args]
    env = isolated_env(home)
    return subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True, timeout=240, check=False)


def _run(ws: Path, home: Path) -> subprocess.CompletedProcess[str]:
    done = _bearagent(ws, home, "run", "go", "-w", str(ws))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _hooked_workspace(ws: Path, home: Path) -> None:
    """A trusted workspace whose SessionStart and PostToolUse hooks run `sh scripts/post.sh`, which evals the data
    file `scripts/hook.conf` (code the trust fingerprint does not follow)."""
    scripted_workspace(ws, "turns: []\n", agents=MAIN)
    write(ws, "scripts/post.sh", '#!/bin/sh\neval "$(cat scripts/hook.conf)"\n')
    write(ws, "scripts/hook.conf", "echo ok >> hook.log\n")
    hook = [{"hooks": [{"type": "command", "command": "sh scripts/post.sh"}]}]
    hooks = {"hooks": {"SessionStart": hook, "PostToolUse": [{"matcher": "*", **hook[0]}]}}
    write(ws, ".bearagent/config.yaml", CONFIG + yaml.safe_dump(hooks) + "permissions: {allow: [Bash, Read]}\n")
    trust(ws, workspace_trust_surface(load(ws, home)), env=isolated_env(home))


def _plant_hook_code(ws: Path, home: Path, canary: Path) -> None:
    """Run 1: the model rewrites the data the hook's script evals (and tries to erase the record and the trust
    file, which the sandbox does not show it)."""
    record = home / "bearagent" / RECORD_FILE
    command = (
        f"cat > scripts/hook.conf <<'EOF'\n{_planted(canary)}EOF\n"
        f"rm -f {shlex.quote(str(record))} {shlex.quote(str(home / 'bearagent' / 'trust.json'))} 2>/dev/null; "
        "echo planted"
    )
    _script(ws, [{"tool_calls": [{"name": "Bash", "arguments": {"command": command}}]}])
    _run(ws, home)
    assert "touch" in (ws / "scripts/hook.conf").read_text(), "run 1's Bash rewrote the data"
    assert record.exists(), "the sandboxed Bash cannot remove the record"
    assert not canary.exists(), "run 1's own hooks after its write already run confined"


@pytest.mark.slow
def test_an_earlier_processs_write_confines_the_next_processs_hooks(tmp_path: Path) -> None:
    """Run 2 writes nothing: its SessionStart hook and the PostToolUse hook after a Read run the planted code, in
    the sandbox: the canary outside the workspace is never made."""
    ws, home, canary = tmp_path / "ws", tmp_path / "home", tmp_path / "CANARY"
    _hooked_workspace(ws, home)
    _plant_hook_code(ws, home, canary)
    ran_before = (ws / "model-code-ran.txt").read_text().count("ran") if (ws / "model-code-ran.txt").exists() else 0
    _script(ws, [{"tool_calls": [{"name": "Read", "arguments": {"file_path": str(ws / "scripts/post.sh")}}]}])
    _run(ws, home)
    ran = (ws / "model-code-ran.txt").read_text().count("ran")
    assert ran >= ran_before + 2, "run 2's SessionStart and PostToolUse hooks ran the planted code"
    assert not canary.exists(), "the planted code ran unconfined in a new process before any write of its own"
    record = WritesRecord(home / "bearagent").since_trust(ws)
    assert record is not None and "Bash" in record.first, record


@pytest.mark.slow
def test_a_trust_decision_clears_the_record_and_then_the_hook_runs_as_configured(tmp_path: Path) -> None:
    """`bearagent trust` shows that runs wrote since the last decision; trusting again clears the record, and the
    next process's hook runs unconfined (the user's decision): the canary is made, so the test above can fail."""
    ws, home, canary = tmp_path / "ws", tmp_path / "home", tmp_path / "CANARY"
    _hooked_workspace(ws, home)
    _plant_hook_code(ws, home, canary)
    listing = _bearagent(ws, home, "trust", "--list", "-w", str(ws))
    assert "Runs may have written in it since you trusted it" in listing.stdout, listing.stdout + listing.stderr
    assert "run in the sandbox" in listing.stdout
    decided = _bearagent(ws, home, "trust", "-y", "-w", str(ws))
    assert decided.returncode == 0, decided.stderr
    assert WritesRecord(home / "bearagent").since_trust(ws) is None
    _script(ws, [{"text": "nothing"}])
    _run(ws, home)
    assert canary.exists(), "after the user's trust decision the SessionStart hook runs as configured"


@pytest.mark.slow
def test_a_write_in_an_enclosing_workspace_confines_a_nested_ones_hooks(tmp_path: Path) -> None:
    """A run in /repo writes /repo/sub's data: /repo/sub's hooks (trusted on their own) run confined."""
    outer, home, canary = tmp_path / "repo", tmp_path / "home", tmp_path / "CANARY"
    ws = outer / "sub"
    _hooked_workspace(ws, home)
    scripted_workspace(outer, "turns: []\n", agents=MAIN, config=CONFIG + "permissions: {allow: [Bash]}\n")
    trust(outer, workspace_trust_surface(load(outer, home)), env=isolated_env(home))
    command = f"cat > sub/scripts/hook.conf <<'EOF'\n{_planted(canary)}EOF\necho planted"
    _script(outer, [{"tool_calls": [{"name": "Bash", "arguments": {"command": command}}]}])
    _run(outer, home)
    _script(ws, [{"text": "nothing"}])
    _run(ws, home)
    assert (ws / "model-code-ran.txt").exists(), "the nested workspace's SessionStart hook ran the planted code"
    assert not canary.exists()


def test_the_record_lives_outside_the_workspace_and_a_broken_one_confines_every_workspace(tmp_path: Path) -> None:
    """The record is the user's file (0600, beside trust.json); one that does not parse confines every workspace
    until each is trusted again, and a trust decision starts a new one that still confines the others."""
    user = tmp_path / "home" / "bearagent"
    record = WritesRecord(user)
    record.note([tmp_path / "a"], "the model's Bash call c1 of session s")
    assert record.path.parent == user and (record.path.stat().st_mode & 0o777) == 0o600
    assert record.since_trust(tmp_path / "a") is not None and record.since_trust(tmp_path / "b") is None
    record.path.write_text("{not json")
    assert record.since_trust(tmp_path / "b") is not None
    record.trusted(tmp_path / "b")
    assert record.since_trust(tmp_path / "b") is None
    found = record.since_trust(tmp_path / "a")
    assert found is not None and "unreadable" in found.describe()
    record.path.write_text(json.dumps({"seq": 1, "writes": {"/x": {"seq": "1"}}, "trusted": {}}))
    assert record.since_trust(tmp_path / "c") is not None, "a wrong shape confines too"


SERVER = """
import json, subprocess, sys
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("runner")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))  # its calls are no writes: only the model's Bash is
def step() -> str:
    \"\"\"Run the workspace's step: the command comes from tools/step.json (data, as a task runner's config).\"\"\"
    with open("tools/step.json") as handle:
        command = json.load(handle)["command"]
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
    return f"step: {done.stdout}"


server.run("stdio")
"""


def _server_workspace(ws: Path, home: Path) -> None:
    """A trusted workspace whose own stdio MCP server runs the command its JSON data file names on each call."""
    scripted_workspace(ws, "turns: []\n", agents=MAIN)
    write(ws, "tools/server.py", SERVER)
    write(ws, "tools/step.json", json.dumps({"command": "echo trusted"}))
    servers = {"mcp_servers": {"runner": {"command": sys.executable, "args": ["tools/server.py"]}}}
    allow = "permissions: {allow: [Bash, Read, mcp__runner__step]}\n"
    write(ws, ".bearagent/config.yaml", CONFIG + yaml.safe_dump(servers) + allow)
    trust(ws, workspace_trust_surface(load(ws, home)), env=isolated_env(home))


def _plant_step(canary: Path) -> dict[str, object]:
    step = json.dumps({"command": _planted(canary).replace("\n", "; ")})
    return {"name": "Bash", "arguments": {"command": f"printf '%s' {shlex.quote(step)} > tools/step.json; echo ok"}}


STEP: dict[str, object] = {"name": "mcp__runner__step", "arguments": {}}


def _results(ws: Path, home: Path) -> list[str]:
    from bearagent.api import open_workspace
    from bearagent.plugins.manager import PluginHost

    with open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace:
        [run] = workspace.runs()[:1]
        return [
            json.dumps(e.model_dump(mode="json")["payload"])
            for e in workspace.events(str(run.run_id))
            if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
        ]


@pytest.mark.slow
def test_a_running_workspace_mcp_server_is_restarted_confined_after_the_models_write(tmp_path: Path) -> None:
    """The server's first call runs unconfined (nothing written yet: `trusted`); the model's Bash rewrites the JSON
    it reads its command from (not code the pins follow); before the next call the server is stopped and started
    again in the sandbox: the planted command runs there, the canary outside the workspace is never made."""
    ws, home, canary = tmp_path / "ws", tmp_path / "home", tmp_path / "CANARY"
    _server_workspace(ws, home)
    _script(ws, [{"tool_calls": [STEP]}, {"tool_calls": [_plant_step(canary)]}, {"tool_calls": [STEP]}])
    _run(ws, home)
    results = _results(ws, home)
    assert len(results) == 3 and "trusted" in results[0], results
    assert (ws / "model-code-ran.txt").exists(), f"the restarted server did not run the planted command: {results}"
    assert not canary.exists(), "the server ran the model's command unconfined"


@pytest.mark.slow
def test_an_earlier_processs_write_starts_the_workspace_mcp_server_confined(tmp_path: Path) -> None:
    """Run 1 plants the command; run 2, a new process whose first call is the server's, starts it in the sandbox."""
    ws, home, canary = tmp_path / "ws", tmp_path / "home", tmp_path / "CANARY"
    _server_workspace(ws, home)
    _script(ws, [{"tool_calls": [_plant_step(canary)]}])
    _run(ws, home)
    _script(ws, [{"tool_calls": [STEP]}])
    _run(ws, home)
    assert (ws / "model-code-ran.txt").exists(), "run 2's call did not reach the planted command"
    assert not canary.exists(), "run 2 started the workspace's server unconfined after run 1's write"
    trusted = _bearagent(ws, home, "trust", "-y", "-w", str(ws))
    assert trusted.returncode == 0, trusted.stderr
    _run(ws, home)
    assert canary.exists(), "after a trust decision the server runs as configured (so the test above can fail)"

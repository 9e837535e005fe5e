"""Trusted hooks after the model's writes run in the sandbox (issue 28, item 3).

A trusted PostToolUse hook runs workspace code. The pins (`test_hook_code.py`) refuse a hook whose named code
changed, but not code a program loads from data (a script that evals a config file, a formatter's JSON plugin
list), and the user may turn the pins off. So once the session's first call that may write has run, every command
hook runs in the sandbox: whatever the model put into the code it runs, it writes only the workspace and reaches no
listener on 127.0.0.1. Each test is a real run: the scripted model, the real sandbox, a real TCP listener playing the
attacker's endpoint.
"""

from __future__ import annotations

import json
import shlex
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from tests.support.config_ws import isolated_env, load, write
from tests.support.hook_attack import PY, hook_events, hooked_workspace
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace
from tests.support.sandbox_marks import needs_sandbox

from bearagent.api import open_workspace
from bearagent.domain.errors import BearAgentError
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

pytestmark = needs_sandbox()

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Bash, Write, Read]")}


class Listener:
    """The attacker's endpoint: a TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.close()


def _payload(marker: Path, port: int) -> str:
    """The model's code, as a shell script: it proves it ran (a file in the workspace), then tries to write outside
    the workspace and to reach the listener, and records what happened."""
    probe = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n"
        "    print('connected')\n"
        "except OSError as exc:\n"
        "    print('refused', exc)\n"
    )
    return (
        "#!/bin/sh\n"
        "echo ran >> model-code-ran.txt\n"
        f"touch {shlex.quote(str(marker))} 2>/dev/null\n"
        f"{shlex.quote(PY)} -c {shlex.quote(probe)} >> net.txt 2>&1\n"
    )


def _script(ws: Path) -> tuple[str, str]:
    write(ws, "scripts/post.sh", "#!/bin/sh\necho ok >> hook.log\n")
    return "sh scripts/post.sh", "scripts/post.sh"


def _node_bin(ws: Path) -> tuple[str, str]:
    write(ws, "node_modules/x/cli.sh", "#!/bin/sh\necho ok >> hook.log\n")
    (ws / "node_modules/x/cli.sh").chmod(0o755)
    (ws / "node_modules/.bin").mkdir(parents=True)
    (ws / "node_modules/.bin/x").symlink_to("../x/cli.sh")
    return "./node_modules/.bin/x", "node_modules/x/cli.sh"


def _venv_tool(ws: Path) -> tuple[str, str]:
    (ws / ".venv/bin").mkdir(parents=True)
    (ws / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    write(ws, ".venv/bin/fmt", "#!/bin/sh\necho ok >> hook.log\n")
    (ws / ".venv/bin/fmt").chmod(0o755)
    return ".venv/bin/fmt", ".venv/bin/fmt"


def _data_eval(ws: Path) -> tuple[str, str]:
    """Code loaded from data: the script evals a config file."""
    write(ws, "scripts/post.sh", '#!/bin/sh\neval "$(cat scripts/hook.conf)"\n')
    write(ws, "scripts/hook.conf", "echo ok >> hook.log\n")
    return "sh scripts/post.sh", "scripts/hook.conf"


VARIANTS: dict[str, Callable[[Path], tuple[str, str]]] = {
    "script": _script,
    "node_modules-bin": _node_bin,
    "venv-tool": _venv_tool,
    "data-eval": _data_eval,
}


def _setup(ws: Path, home: Path, variant: str, rewrite: str, user_config: str, content: str) -> str:
    """A trusted workspace with a PostToolUse hook on every tool (the variant's command) and a scripted model whose
    second call rewrites what the hook runs (`rewrite`: a Bash heredoc or a Write call). Returns the target."""
    probe_ws = ws.parent / f"probe-{variant}"
    target = VARIANTS[variant](probe_ws)[1]
    if rewrite == "bash":
        second: dict[str, object] = {
            "name": "Bash",
            "arguments": {"command": f"cat > {target} <<'EOF'\n{content}EOF\nchmod +x {target}; echo rewritten"},
        }
    else:
        second = {"name": "Write", "arguments": {"file_path": str(ws / target), "content": content}}
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"name": "Read", "arguments": {"file_path": str(ws / target)}}]},
        {"tool_calls": [second]},
        {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo third"}}]},
        {"text": "done"},
    ]
    write(home / "bearagent", "config.yaml", user_config)
    hooked_workspace(ws, home, turns=turns, agents=MAIN, plant=VARIANTS[variant], matcher="*")
    return target


ALLOW_WRITE = "permissions: {allow: [Write]}\n"


@pytest.mark.parametrize("rewrite", ["bash", "write"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_hook_after_the_models_writes_runs_its_code_confined(
    tmp_path: Path, listener: Listener, variant: str, rewrite: str
) -> None:
    """The pins are off (the user's choice; and they cannot follow code loaded from data, the data-eval variant):
    the hook runs the model's code, and that code writes only the workspace and reaches nothing."""
    ws, home, marker = tmp_path / "ws", tmp_path / "home", tmp_path / "PWNED"
    user = f"sandbox: {{network: deny, pin_hook_code: false}}\n{ALLOW_WRITE}"
    target = _setup(ws, home, variant, rewrite, user, _payload(marker, listener.port))
    events = hook_events(ws, home)
    assert "PWNED" in (ws / target).read_text(), "the rewrite itself happened"
    assert (ws / "hook.log").read_text().split() == ["ok"], "the trusted code ran once, before the model wrote"
    assert (ws / "model-code-ran.txt").exists(), f"the hook did not run the model's code: {events}"
    net = (ws / "net.txt").read_text()
    assert "refused" in net and "connected" not in net.replace("refused", ""), net
    assert listener.accepted == 0
    assert not marker.exists(), "the model's code wrote outside the workspace through the hook"
    assert "sandbox_unavailable" not in json.dumps(events)


def test_the_user_can_run_hooks_unconfined_after_writes(tmp_path: Path, listener: Listener) -> None:
    """The opt-out is the user's own: then the hook runs the model's code with the user's rights (the attack the
    default closes: this is what the test above would see without it)."""
    ws, home, marker = tmp_path / "ws", tmp_path / "home", tmp_path / "PWNED"
    user = f"sandbox: {{hooks_after_writes: unconfined, pin_hook_code: false}}\n{ALLOW_WRITE}"
    _setup(ws, home, "script", "write", user, _payload(marker, listener.port))
    hook_events(ws, home)
    assert marker.exists()
    assert "connected" in (ws / "net.txt").read_text()
    assert listener.accepted >= 1


def test_a_workspace_cannot_opt_out(tmp_path: Path) -> None:
    """From a workspace file the opt-out is a config error that stops the run before any tool runs."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    bash = {"name": "Bash", "arguments": {"command": "touch ran.flag"}}
    scripted_workspace(
        ws,
        yaml.safe_dump({"turns": [{"tool_calls": [bash]}, {"text": "done"}]}),
        agents=MAIN,
        config=CONFIG + "sandbox: {hooks_after_writes: unconfined}\n",
    )
    with (
        open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace,
        pytest.raises(BearAgentError) as caught,
    ):
        workspace.run_sync("go")
    assert not (ws / "ran.flag").exists()
    text = f"{caught.value} {caught.value.hint or ''}"
    assert "sandbox.hooks_after_writes" in text and "user config" in text, text


def test_a_bad_value_is_a_config_error_that_stops_the_run(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    bash = {"name": "Bash", "arguments": {"command": "touch ran.flag"}}
    scripted_workspace(ws, yaml.safe_dump({"turns": [{"tool_calls": [bash]}, {"text": "done"}]}), agents=MAIN)
    write(home / "bearagent", "config.yaml", "sandbox: {hooks_after_writes: sometimes}\n")
    with (
        open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace,
        pytest.raises(BearAgentError) as caught,
    ):
        workspace.run_sync("go")
    assert not (ws / "ran.flag").exists()
    text = f"{caught.value} {caught.value.hint or ''}"
    assert "sandbox.hooks_after_writes" in text and "sandbox, unconfined" in text, text


def test_without_a_sandbox_the_hook_after_writes_is_refused(tmp_path: Path) -> None:
    """No backend (the user's bwrap_path names nothing): the hook before any write runs as configured; after the
    Write call it is refused (`hook.sandbox_unavailable`), never run unconfined."""
    ws, home, marker = tmp_path / "ws", tmp_path / "home", tmp_path / "PWNED"
    user = f"sandbox: {{bwrap_path: /nonexistent/bwrap, pin_hook_code: false}}\n{ALLOW_WRITE}"
    _setup(ws, home, "script", "write", user, f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
    script = ws / ".bearagent/script.yaml"
    text = yaml.safe_load(script.read_text())
    text["turns"][2] = {"tool_calls": [{"name": "Read", "arguments": {"file_path": str(ws / "scripts/post.sh")}}]}
    script.write_text(yaml.safe_dump(text, sort_keys=False))
    events = hook_events(ws, home)
    assert not marker.exists()
    assert (ws / "hook.log").read_text().split() == ["ok"]
    refused = [e for e in events if "sandbox_unavailable" in json.dumps(e)]
    assert len(refused) == 2, events  # after the Write call and after the Read that follows it
    assert "hooks_after_writes: unconfined" in json.dumps(refused[0])


def test_the_status_line_command_after_the_models_writes_runs_confined(tmp_path: Path, listener: Listener) -> None:
    """Claude Code's `statusLine` is a trusted command too: the model rewrites the script it runs; the session's
    next status line runs the model's code in the sandbox (it writes only the workspace, reaches no listener)."""
    from bearagent.app.runtime import open_runtime
    from bearagent.cli.interactive import _status_command  # pyright: ignore[reportPrivateUsage]
    from bearagent.cli.session_commands import SessionTotals, StatusLine
    from bearagent.workspace import load_workspace

    ws, home, marker = tmp_path / "ws", tmp_path / "home", tmp_path / "PWNED"
    payload = _payload(marker, listener.port)
    bash = {"name": "Bash", "arguments": {"command": f"cat > statusline.sh <<'EOF'\n{payload}EOF\necho rewritten"}}
    script = yaml.safe_dump({"turns": [{"tool_calls": [bash]}, {"text": "done"}]}, sort_keys=False)
    scripted_workspace(ws, script, agents=MAIN)
    write(ws, "statusline.sh", "#!/bin/sh\necho trusted-line\n")
    write(ws, ".claude/settings.json", json.dumps({"statusLine": {"type": "command", "command": "sh statusline.sh"}}))
    trust(ws, workspace_trust_surface(load(ws, home)), env=isolated_env(home))
    runtime = open_runtime(load_workspace(ws, env=isolated_env(home), plugins=PluginHost()))
    status = StatusLine(runtime, "workspace-write", _status_command(runtime))
    totals = SessionTotals(runs=0, cost_microusd=0, wall_time_s=0.0)
    assert status("main", None, totals, "no-writes-yet") == "trusted-line"
    with open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace:
        result = workspace.run_sync("go")
        assert result.status == "succeeded", result.error
    assert "PWNED" in (ws / "statusline.sh").read_text()
    status("main", None, totals, str(result.session_id))
    assert (ws / "model-code-ran.txt").exists(), "the status line did not run the model's code"
    assert "refused" in (ws / "net.txt").read_text()
    assert listener.accepted == 0
    assert not marker.exists(), "the model's code wrote outside the workspace through the status line"


@pytest.mark.parametrize("key", ["statusLine", "apiKeyHelper"])
@pytest.mark.parametrize("target", ["script", "sourced"])
def test_changing_what_a_status_line_or_key_helper_runs_needs_a_new_trust_decision(
    tmp_path: Path, key: str, target: str
) -> None:
    """Both are commands run with the user's rights (the key helper's output is sent as the key): their trust item
    fingerprints what they reach, as a hook's does, so the model's rewrite of the script (in an earlier run, in
    another process) asks for trust again instead of running."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    scripted_workspace(ws, "turns: []\n", agents=MAIN)
    write(ws, "tools/run.sh", "#!/bin/sh\n. tools/lib.sh\necho sk-ant-x\n")
    write(ws, "tools/lib.sh", "x=1\n")
    value: object = {"type": "command", "command": "sh tools/run.sh"} if key == "statusLine" else "sh tools/run.sh"
    write(ws, ".claude/settings.json", json.dumps({key: value}))
    before = workspace_trust_surface(load(ws, home))
    assert "tools/run.sh" in "\n".join(before.lines(limit=400))
    changed = ws / ("tools/run.sh" if target == "script" else "tools/lib.sh")
    changed.write_text(changed.read_text() + f"touch {tmp_path / 'PWNED'}\n")
    assert workspace_trust_surface(load(ws, home)).digest() != before.digest()


@pytest.mark.parametrize("where", [".claude/hooks", ".config/bearagent/hooks"])
def test_a_users_hook_script_in_the_hidden_home_still_runs_confined(tmp_path: Path, where: str) -> None:
    """The home (and `~/.claude`, `~/.config`) is hidden in the sandbox; a user's own hook script lives there. After
    the model's first write the hook runs confined: its own script (the program, or the script its interpreter
    runs) is readable there, nothing else of the hidden home is, and the format step it runs on the workspace
    happens."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    secret = home / where / "secret.txt"
    write(home / where, "secret.txt", "sk-secret\n")
    write(
        home / where, "fmt.sh", f"#!/bin/sh\necho formatted >> hook.log\ncat {shlex.quote(str(secret))} >> hook.log\n"
    )
    (home / where / "fmt.sh").chmod(0o755)
    bash = {"name": "Bash", "arguments": {"command": "echo x > a.txt"}}
    script = yaml.safe_dump({"turns": [{"tool_calls": [bash]}, {"text": "done"}]}, sort_keys=False)
    scripted_workspace(ws, script, agents=MAIN)
    hook = {"type": "command", "command": f"sh {shlex.quote(str(home / where / 'fmt.sh'))}"}
    user = yaml.safe_dump({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    write(home / "bearagent", "config.yaml", user)
    events = hook_events(ws, home)
    log = (ws / "hook.log").read_text()
    assert "formatted" in log, events
    assert "sk-secret" not in log

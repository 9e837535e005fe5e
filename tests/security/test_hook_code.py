"""Trusted hooks and the model's writes (issue 28, items 3 and 6).

Item 3: a trusted PostToolUse hook runs workspace code; the sandboxed Bash of the same run rewrites that code (the
script itself, a file it sources or imports, the target of a `node_modules/.bin` link, a `.venv` tool's module, a
module it would import that the model creates). The hook must not run the rewritten code: it is refused right
before execution (`hook.code_changed`). Each is a real run with the real sandbox and the scripted model.

Item 6: the trust fingerprint covers what the hook reaches, so the same changes made between runs need a new trust
decision.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from tests.support.config_ws import isolated_env, load, write
from tests.support.hook_attack import PY, PYVER, hook_events, hooked_workspace
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace
from tests.support.sandbox_marks import needs_sandbox

from bearagent.api import open_workspace
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

pytestmark = needs_sandbox()

MAIN = {"main": agent_md("Main agent.", mode="primary", tools="[Bash, Read]")}


def _exe(ws: Path, rel: str, text: str) -> None:
    write(ws, rel, text)
    (ws / rel).chmod(0o755)


def _direct(ws: Path) -> tuple[str, str]:
    _exe(ws, "scripts/post.sh", "#!/bin/sh\necho ok >> hook.log\n")
    return "sh scripts/post.sh", "scripts/post.sh"


def _sourced(ws: Path) -> tuple[str, str]:
    _exe(ws, "scripts/post.sh", "#!/bin/sh\n. scripts/lib.sh\necho ok >> hook.log\n")
    write(ws, "scripts/lib.sh", "greeting=hi\n")
    return "sh scripts/post.sh", "scripts/lib.sh"


def _imported(ws: Path) -> tuple[str, str]:
    write(ws, "scripts/post.py", "import helper\nhelper.log()\n")
    write(ws, "scripts/helper.py", "def log():\n    open('hook.log', 'a').write('ok\\n')\n")
    return f"{PY} scripts/post.py", "scripts/helper.py"


def _shadowed(ws: Path) -> tuple[str, str]:
    """The model creates a module next to the script that shadows the standard library's."""
    write(ws, "scripts/post.py", "import json\nopen('hook.log', 'a').write(json.dumps('ok') + '\\n')\n")
    return f"{PY} scripts/post.py", "scripts/json.py"


def _node_bin(ws: Path) -> tuple[str, str]:
    _exe(ws, "node_modules/fmt/cli.sh", "#!/bin/sh\necho ok >> hook.log\n")
    (ws / "node_modules" / ".bin").mkdir(parents=True)
    (ws / "node_modules" / ".bin" / "fmt").symlink_to("../fmt/cli.sh")
    return "./node_modules/.bin/fmt", "node_modules/fmt/cli.sh"


def _node_require(ws: Path) -> tuple[str, str]:
    write(ws, "node_modules/fmt/cli.js", "require('./lib/run.js').run()\n")
    write(ws, "node_modules/fmt/lib/run.js", "exports.run = () => require('fs').appendFileSync('hook.log', 'ok\\n')\n")
    (ws / "node_modules" / ".bin").mkdir(parents=True)
    (ws / "node_modules" / ".bin" / "fmt").symlink_to("../fmt/cli.js")
    return "node ./node_modules/.bin/fmt", "node_modules/fmt/lib/run.js"


def _venv(ws: Path) -> tuple[str, str]:
    venv = ws / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to(PY)
    site = f".venv/lib/{PYVER}/site-packages"
    write(ws, f"{site}/tool/__init__.py", "")
    write(ws, f"{site}/tool/main.py", "def run():\n    open('hook.log', 'a').write('ok\\n')\n")
    _exe(
        ws,
        ".venv/bin/tool",
        f"#!{ws}/.venv/bin/python\nimport sys\nsys.path.insert(0, '{ws}/{site}')\nfrom tool.main import run\nrun()\n",
    )
    return ".venv/bin/tool", f"{site}/tool/main.py"


def _makefile(ws: Path) -> tuple[str, str]:
    write(ws, "Makefile", "post:\n\t@sh scripts/m.sh\n")
    _exe(ws, "scripts/m.sh", "#!/bin/sh\necho ok >> hook.log\n")
    return "make -s post", "scripts/m.sh"


def _sh_c(ws: Path) -> tuple[str, str]:
    _exe(ws, "scripts/inner.sh", "#!/bin/sh\necho ok >> hook.log\n")
    return "sh -c 'sh scripts/inner.sh'", "scripts/inner.sh"


def _npm_script(ws: Path) -> tuple[str, str]:
    """A task runner: the hook names `npm run`, and package.json decides what that runs."""
    write(ws, "package.json", json.dumps({"name": "t", "version": "1.0.0", "scripts": {"post": "echo ok >> hook.log"}}))
    return "npm run -s post", "package.json"


LOG_JS = "exports.run = () => require('fs').appendFileSync('hook.log', 'ok\\n')\n"


def _bare_require(ws: Path) -> tuple[str, str]:
    """A workspace script loads a package by name: node finds it in node_modules (its package.json's main)."""
    write(ws, "scripts/post.js", "require('fmt').run()\n")
    write(ws, "node_modules/fmt/package.json", json.dumps({"name": "fmt", "main": "lib/entry.js"}))
    write(ws, "node_modules/fmt/lib/entry.js", LOG_JS)
    return "node scripts/post.js", "node_modules/fmt/lib/entry.js"


def _inline_require(ws: Path) -> tuple[str, str]:
    """No script at all: `node -e` with a bare require, resolved from the hook's directory (the workspace)."""
    write(ws, "node_modules/@acme/fmt/package.json", json.dumps({"name": "@acme/fmt"}))
    write(ws, "node_modules/@acme/fmt/index.js", LOG_JS)
    return "node -e \"require('@acme/fmt').run()\"", "node_modules/@acme/fmt/index.js"


def _shadowing_package(ws: Path) -> tuple[str, str]:
    """The package lives in the workspace's node_modules; the model plants a nearer one that node finds first."""
    write(ws, "scripts/post.js", "require('fmt').run()\n")
    write(ws, "node_modules/fmt/index.js", LOG_JS)
    write(ws, "node_modules/fmt/package.json", json.dumps({"name": "fmt"}))
    return "node scripts/post.js", "scripts/node_modules/fmt/index.js"


VARIANTS: dict[str, Callable[[Path], tuple[str, str]]] = {
    "bare-require": _bare_require,
    "inline-require": _inline_require,
    "shadowing-package": _shadowing_package,
    "npm-script": _npm_script,
    "script": _direct,
    "sourced": _sourced,
    "imported": _imported,
    "shadowing-module": _shadowed,
    "node_modules-bin": _node_bin,
    "node-require": _node_require,
    "venv-tool": _venv,
    "makefile": _makefile,
    "sh-c": _sh_c,
}


def _workspace(ws: Path, home: Path, variant: str, bash: list[str]) -> str:
    """A workspace with a PostToolUse hook on Bash (the variant's command), a script of Bash calls, trusted.
    Returns the file the attack rewrites."""
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": c}}]} for c in bash]
    return hooked_workspace(ws, home, turns=turns, agents=MAIN, plant=VARIANTS[variant], matcher="Bash")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_hook_does_not_run_code_the_model_rewrote_in_the_same_run(tmp_path: Path, variant: str) -> None:
    home = tmp_path / "home"
    marker = tmp_path / "PWNED"  # under /tmp on the host: the sandboxed Bash cannot create it, the hook could
    ws = tmp_path / "ws"
    payload = {
        ".py": f"open({str(marker)!r}, 'w').write('pwned')\ndef log():\n    pass\ndef run():\n    pass\n",
        ".js": f"require('fs').writeFileSync({json.dumps(str(marker))}, 'pwned'); exports.run = () => {{}}\n",
        ".json": json.dumps({"name": "t", "version": "1.0.0", "scripts": {"post": f"touch {marker}"}}) + "\n",
    }
    target = VARIANTS[variant](tmp_path / "probe")[1]  # which file the variant rewrites (its suffix)
    content = payload.get(Path(target).suffix, f"#!/bin/sh\ntouch {marker}\n")
    bash = [
        "echo first",  # the hook runs once on the trusted code
        f"mkdir -p {Path(target).parent} && cat > {target} <<'EOF'\n{content}EOF\necho rewritten",
        "echo third",
    ]
    _workspace(ws, home, variant, bash)
    events = hook_events(ws, home)
    assert not marker.exists(), "the hook ran the code the model wrote"
    assert str(marker) in (ws / target).read_text(), "the rewrite itself happened (the sandbox allows it)"
    assert (ws / "hook.log").read_text().count("ok") == 1, "the trusted code ran once, before the rewrite"
    refused = [e for e in events if "code_changed" in json.dumps(e)]
    assert len(refused) == 2, events
    assert target in json.dumps(refused[0])


def test_the_user_can_turn_the_recheck_off(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    write(home / "bearagent", "config.yaml", "sandbox: {pin_hook_code: false}\n")
    _workspace(ws, home, "script", ["echo first", "printf '#!/bin/sh\\necho changed >> hook.log\\n' > scripts/post.sh"])
    events = hook_events(ws, home)
    assert "code_changed" not in json.dumps(events)
    assert (ws / "hook.log").read_text().split() == ["ok", "changed"]


# ---- item 6: the fingerprint covers what the hook reaches -----------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_changing_anything_the_hook_reaches_needs_a_new_trust_decision(tmp_path: Path, variant: str) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    target = _workspace(ws, home, variant, ["echo hi"])
    before = workspace_trust_surface(load(ws, home))
    rendered = "\n".join(before.lines(limit=400))
    if not variant.startswith("shadowing"):
        assert target in rendered, rendered
    path = ws / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if path.exists() else "") + "\n# changed\n")
    after = workspace_trust_surface(load(ws, home))
    assert after.digest() != before.digest(), f"changing {target} kept the trusted digest"


# ---- stdio MCP servers: a start or restart never runs rewritten code ----------------------------------------


@pytest.mark.parametrize("change", ["server", "imported"])
def test_an_mcp_server_whose_code_changed_is_not_started(tmp_path: Path, change: str) -> None:
    """The manager pins what a workspace server reaches when it is made (the run's start); a change before a start
    (a restart after a crash, a retry) keeps the server from starting, with the file named."""
    import asyncio
    import shutil

    from tests.support.mcp_servers import demo

    from bearagent.domain.specs import McpServerSpec
    from bearagent.mcp.manager import McpConnectionManager

    ws = tmp_path / "ws"
    (ws / "server").mkdir(parents=True)
    shutil.copy(demo.DEMO_PATH, ws / "server" / "demo.py")
    write(ws, "server/run.py", "import sys\nimport demo\n")
    spec = McpServerSpec(
        name="demo", transport="stdio", command=sys.executable, args=("server/demo.py", "stdio"), source="workspace"
    )

    async def start(edit: bool) -> str:
        manager = McpConnectionManager([spec], dict(os.environ), ws)
        try:
            if edit:
                target = ws / "server" / ("demo.py" if change == "server" else "anyio.py")
                target.write_text("raise SystemExit('pwned')\n" if change == "server" else "")
            await manager.start_all(background_retry=False)
            status = manager.server_status("demo")
            return f"{status.state} {status.last_error}"
        finally:
            await manager.aclose()

    assert asyncio.run(start(False)).startswith("ready")
    refused = asyncio.run(start(True))
    assert refused.startswith("failed") and "changed during the run" in refused, refused
    assert ("server/demo.py" if change == "server" else "server/anyio.py") in refused


SERVER = """
import importlib, subprocess, sys
from mcp.server.mcpserver import MCPServer

import helper

server = MCPServer("runner")


@server.tool()
def step() -> str:
    \"\"\"Run the workspace's step script (as a build or test server runs workspace code on each call).\"\"\"
    done = subprocess.run(["sh", "tools/step.sh"], cwd=sys.argv[1], capture_output=True, text=True, check=False)
    importlib.reload(helper)  # a server that reloads its modules per call (a dev server's watcher does)
    return f"step: {done.stdout} {helper.VALUE}"


server.run("stdio")
"""


@pytest.mark.parametrize("rewrite", ["script", "server-module"])
def test_a_running_mcp_server_is_not_called_after_the_model_rewrote_its_code(tmp_path: Path, rewrite: str) -> None:
    """A user-level stdio server (unconfined: `sandbox.mcp` is off) runs a workspace script on each call. Its first
    call runs the trusted script; the sandboxed Bash then rewrites the script (or a module the server would import
    later); the next call is refused (`code_changed`) and the server stopped, so the model's code never runs with
    the user's rights."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    marker = tmp_path / "MARKER"  # outside the workspace and the sandbox's view: only unconfined code can make it
    calls: list[dict[str, object]] = [{"name": "mcp__runner__step", "arguments": {}}]
    target = "tools/step.sh" if rewrite == "script" else "tools/helper.py"
    payload = f"touch {marker}\\n" if rewrite == "script" else f"open('{marker}', 'w')\\n"
    bash = {"name": "Bash", "arguments": {"command": f"printf '{payload}' > {target}; echo rc=$?"}}
    script = yaml.safe_dump(
        {"turns": [{"tool_calls": calls}, {"tool_calls": [bash]}, {"tool_calls": calls}, {"text": "done"}]},
        sort_keys=False,
    )
    scripted_workspace(ws, script, agents={"main": agent_md("Main.", mode="primary", tools="[Bash]", mcp="[runner]")})
    write(ws, "tools/server.py", SERVER)
    _exe(ws, "tools/step.sh", "#!/bin/sh\necho trusted\n")
    write(ws, "tools/helper.py", "VALUE = 1\n")
    write(
        home / "bearagent",
        "config.yaml",
        f"mcp_servers:\n  runner: {{command: {sys.executable}, args: [{ws}/tools/server.py, {ws}], startup_timeout_s: 30}}\n"
        "permissions: {allow: [Bash, mcp__runner__step]}\n",
    )
    with open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace:
        result = workspace.run_sync("go")
        assert result.status == "succeeded", result.error
        results = [
            json.dumps(e.model_dump(mode="json")["payload"])
            for e in workspace.events(str(result.run_id))
            if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
        ]
    assert len(results) == 3, results
    assert "trusted" in results[0], results[0]
    assert "rc=0" in results[1], "the sandboxed Bash may write the workspace"
    assert "code_changed" in results[2] and target in results[2], results[2]
    assert not marker.exists(), "the running server ran the model's code"


@pytest.mark.parametrize("change", ["server", "imported"])
def test_a_running_mcp_server_whose_code_changed_is_stopped_before_the_next_call(tmp_path: Path, change: str) -> None:
    """A running server may run a workspace file per call (a script, a late import): after the model rewrites a
    file it reaches, the next call is refused and the server stopped, not restarted in this run."""
    import asyncio
    import shutil
    import uuid

    from tests.support.mcp_servers import demo

    from bearagent.domain._base import frozen_json
    from bearagent.domain.ids import RunId, ToolCallId
    from bearagent.domain.specs import McpServerSpec
    from bearagent.mcp.manager import McpConnectionManager
    from bearagent.mcp.tool import McpTool
    from bearagent.ports import ToolContext

    ws = tmp_path / "ws"
    (ws / "server").mkdir(parents=True)
    shutil.copy(demo.DEMO_PATH, ws / "server" / "demo.py")
    spec = McpServerSpec(
        name="demo", transport="stdio", command=sys.executable, args=("server/demo.py", "stdio"), source="workspace"
    )
    context = ToolContext(
        workspace_root=ws, run_id=RunId(str(uuid.uuid4())), tool_call_id=ToolCallId(str(uuid.uuid4()))
    )

    async def scenario() -> tuple[str, str, str, bool]:
        manager = McpConnectionManager([spec], dict(os.environ), ws)
        try:
            await manager.start_all(background_retry=False)
            [echo] = [t for t in manager.tools() if t.spec.name == "mcp__demo__echo"]
            assert isinstance(echo, McpTool)
            first = await echo.execute(frozen_json({"message": "one"}), context)
            target = ws / "server" / ("demo.py" if change == "server" else "anyio.py")
            target.write_text("raise SystemExit('pwned')\n" if change == "server" else "")
            second = await echo.execute(frozen_json({"message": "two"}), context)
            third = await echo.execute(frozen_json({"message": "three"}), context)
            await asyncio.sleep(0.5)
            status = manager.server_status("demo")
            return first.content, second.content + str(second.error), third.status, status.state == "ready"
        finally:
            await manager.aclose()

    first, second, third, ready = asyncio.run(scenario())
    assert "echo: one" in first
    assert "stopped and the call refused" in second and "code_changed" in second, second
    assert ("server/demo.py" if change == "server" else "server/anyio.py") in second
    assert third == "failed" and not ready


# ---- item 3: code the hook's tool chain finds on its own --------------------------------------------------------


def _pth(ws: Path, marker: Path) -> tuple[str, str, str]:
    command, _ = _venv(ws)
    return command, f".venv/lib/{PYVER}/site-packages/zz_plant.pth", f"import os; open({str(marker)!r}, 'w')\n"


def _conftest(ws: Path, marker: Path) -> tuple[str, str, str]:
    write(ws, "tests/test_a.py", "def test_a():\n    pass\n")
    # The suite's own interpreter, unresolved (quoted: a checkout's path may have spaces): `PY` resolves the venv's
    # symlink to the base Python, which has no pytest unless the base happens to have one (root's pyenv here; not the
    # system Python of an ordinary user, where the plant then never ran and the test failed, issue 29).
    command = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:xdist tests/test_a.py"
    return command, "tests/conftest.py", f"open({str(marker)!r}, 'w')\n"


def _js_config(ws: Path, marker: Path) -> tuple[str, str, str]:
    write(ws, "node_modules/fmt/cli.js", "const fs = require('fs'); fs.appendFileSync('hook.log', 'ok\\n')\n")
    write(
        ws,
        "node_modules/fmt/load.js",
        "const p = require('path').resolve('src/.fmtrc.cjs'); if (require('fs').existsSync(p)) require(p)\n",
    )
    return (
        "node -e \"require('./node_modules/fmt/load.js')\"",
        "src/.fmtrc.cjs",
        (f"require('fs').writeFileSync({json.dumps(str(marker))}, 'pwned')\n"),
    )


DISCOVERED: dict[str, Callable[[Path, Path], tuple[str, str, str]]] = {
    "venv-pth": _pth,
    "pytest-conftest": _conftest,
    "js-config-file": _js_config,
}


@pytest.mark.parametrize("variant", sorted(DISCOVERED))
def test_a_hook_does_not_run_code_its_tool_chain_would_discover(tmp_path: Path, variant: str) -> None:
    """A `.pth` in the workspace venv (run at every start of its Python), a `conftest.py` pytest collects, a
    `.xrc.cjs` a JavaScript tool loads by name: the hook's words never name them, but its tool runs them. The model
    plants one through the sandboxed Bash; the hook is refused from then on."""
    import shutil
    import subprocess

    if variant == "js-config-file" and shutil.which("node") is None:
        pytest.skip("needs node")
    home = tmp_path / "home"
    marker = tmp_path / "PWNED"
    ws = tmp_path / "ws"
    turns: list[dict[str, object]] = []
    scripted_workspace(ws, "turns: []\n", agents=MAIN)
    command, target, content = DISCOVERED[variant](ws, marker)
    bash = [
        "echo first",
        f"mkdir -p {Path(target).parent} && cat > {target} <<'EOF'\n{content}EOF\necho planted",
        "echo third",
    ]
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": c}}]} for c in bash]
    scripted_workspace(ws, yaml.safe_dump({"turns": [*turns, {"text": "done"}]}, sort_keys=False), agents=MAIN)
    hooks = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}
    write(ws, ".bearagent/config.yaml", CONFIG + yaml.safe_dump(hooks))
    trust(ws, workspace_trust_surface(load(ws, home)), env=isolated_env(home))
    events = hook_events(ws, home)
    assert not marker.exists(), "the hook ran the code the model planted"
    refused = [e for e in events if "code_changed" in json.dumps(e)]
    assert len(refused) == 2, events
    assert (ws / target).is_file()
    # the plant is real: the hook's command, run as it would have run, executes it
    subprocess.run(command, shell=True, cwd=ws, capture_output=True, timeout=120, check=False)
    assert marker.exists(), "the planted file is not what the hook's tool runs (the test proves nothing)"


@pytest.mark.parametrize("variant", sorted(DISCOVERED))
def test_planting_code_the_hooks_tool_chain_discovers_needs_a_new_trust_decision(tmp_path: Path, variant: str) -> None:
    """Item 6 for discovered code: the same plants made between runs (a `git pull`, another tool) change the
    trusted digest, and the listing then names the kind of file."""
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    scripted_workspace(ws, "turns: []\n", agents=MAIN)
    command, target, content = DISCOVERED[variant](ws, tmp_path / "PWNED")
    hooks = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}
    write(ws, ".bearagent/config.yaml", CONFIG + yaml.safe_dump(hooks))
    before = workspace_trust_surface(load(ws, home))
    write(ws, target, content)
    after = workspace_trust_surface(load(ws, home))
    assert after.digest() != before.digest(), f"planting {target} kept the trusted digest"
    assert "**/" in "\n".join(after.lines()), after.lines()
    (ws / target).write_text(content + "\n# changed\n")
    assert workspace_trust_surface(load(ws, home)).digest() != after.digest()


def test_only_a_test_runner_reaches_conftest(tmp_path: Path) -> None:
    """A Python MCP server or hook that runs no tests is not refused when the model writes a `conftest.py` (normal
    work); one that runs pytest is."""
    from bearagent.trust.reach import discovered_code

    write(tmp_path, "tests/conftest.py", "x = 1\n")
    assert "**/conftest.py" not in discovered_code(tmp_path, f"{PY} server.py")
    assert "**/conftest.py" in discovered_code(tmp_path, f"{PY} -m pytest -q")
    assert discovered_code(tmp_path, "sh scripts/notify.sh") == {}

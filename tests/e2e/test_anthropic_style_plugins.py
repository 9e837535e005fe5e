"""Three plugins shaped like Anthropic's example Claude Code plugins (our own fixtures in
tests/fixtures/anthropic_plugins: explanatory-output-style, security-guidance, hookify) installed from a local
marketplace with the real `bearagent plugins` command, then working in a real run: the SessionStart context reaches
the model with the first prompt, the security reminder blocks a risky edit once, a hookify rule denies a command,
and hookify's plugin.json naming its default folders loads each command and agent once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.plugins.claude_plugins import read_plugin
from bearagent.trust import trust, workspace_trust_surface

MARKET = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic_plugins"
PLUGINS = ("explanatory-output-style", "security-guidance", "hookify")

WORKFLOW = 'on: issues\\njobs:\\n  t:\\n    runs-on: ubuntu-latest\\n    steps:\\n      - run: echo \\"${{ github.event.issue.title }}\\"\\n'
SCRIPT = f"""
turns:
  - tool_calls: [{{name: Write, arguments: {{file_path: .github/workflows/ci.yml, content: "{WORKFLOW}"}}}}]
  - tool_calls: [{{name: Write, arguments: {{file_path: .github/workflows/ci.yml, content: "{WORKFLOW}"}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "rm -rf build"}}}}]
  - text: "done"
"""
RULE = """---
name: no-rm-rf
enabled: true
event: bash
pattern: rm\\s+-rf
action: block
---
Recursive deletes are not allowed here: move the folder to .trash/ instead.
"""


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**isolated_env(home), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=home,
    )


def test_plugin_json_naming_the_default_folders_loads_them_once() -> None:
    hookify = read_plugin(MARKET / "plugins" / "hookify")
    root = (MARKET / "plugins" / "hookify").resolve()
    assert hookify.commands == (root / "commands",)
    assert hookify.agents == (root / "agents",)
    assert hookify.skills == (root / "skills",)
    assert hookify.hooks_files == (root / "hooks" / "hooks.json",)


def test_anthropic_style_plugins_install_from_a_marketplace_and_work_in_a_real_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    added = _cli(home, "plugins", "marketplace", "add", str(MARKET))
    assert added.returncode == 0, added.stderr
    for name in PLUGINS:
        done = _cli(home, "plugins", "install", f"{name}@anthropic-like")
        assert done.returncode == 0, done.stderr

    config = CONFIG + 'permissions: {allow: ["Write", "Bash(rm *)"]}\n'
    agents = {"main": agent_md("Main.", mode="primary", tools="[Write, Bash]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents, config=config)
    write(root, ".claude/hookify.no-rm-rf.local.md", RULE)
    (root / "build").mkdir()
    loaded = load(root, home)
    assert loaded.actions.get("hookify:list") is not None and loaded.actions.get("hookify:hookify") is not None
    assert loaded.agents.get("conversation-analyzer") is not None
    assert loaded.skills.get("writing-rules") is not None
    problems = [d for d in loaded.diagnostics(include_tools=False) if "hookify" in f"{d.source} {d.message}"]
    assert not problems, problems  # one load of each command and agent: nothing shadowed, nothing twice
    trust(root, workspace_trust_surface(loaded), env=isolated_env(home))

    async def go() -> list[dict[str, JsonValue]]:
        async with open_ws(root, home) as ws:
            result = await ws.run("set up CI")
            assert result.status == "succeeded", result.error
            return [{"type": e.event_type, **thaw_json_mapping(e.payload)} for e in ws.events(str(result.run_id))]

    events = asyncio.run(go())
    injected = [e for e in events if e["type"] == "MessageInjected"]
    assert len(injected) == 1 and "Explanatory output style is on" in str(injected[0]["text"])
    ends = [json.dumps(e) for e in events if e["type"] in ("ToolCallCompleted", "ToolCallFailed")]
    assert len(ends) == 3
    assert "Security reminder (github_actions_injection)" in ends[0]  # blocked once, with the warning
    assert "github.event.issue.title" in (root / ".github" / "workflows" / "ci.yml").read_text()  # then written
    assert "[hookify: no-rm-rf] Recursive deletes are not allowed here" in ends[2]
    assert (root / "build").is_dir()  # the hookify rule denied the command

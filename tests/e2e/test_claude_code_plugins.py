"""Claude Code plugins and marketplaces for real: `bearagent plugins install|list|enable|disable|uninstall` and
`plugins marketplace add` as processes (a folder, a local marketplace folder, a marketplace in a bare git repository
cloned through file://), and an installed plugin's commands, agent, skill, hooks and MCP server in a real run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugins.claude_plugins import PluginError, install, read_plugin
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

MARKET = Path(__file__).resolve().parents[1] / "fixtures" / "claude_marketplace"
PLUGIN = MARKET / "plugins" / "demo-plugin"


def _cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**isolated_env(home), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd or home,
    )


def _listed(home: Path) -> list[dict[str, object]]:
    out = _cli(home, "plugins", "list", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["claude_plugins"]


def test_a_plugin_folder_installs_lists_disables_enables_and_uninstalls(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    write(ws, ".bearagent/config.yaml", CONFIG)

    done = _cli(home, "plugins", "install", str(PLUGIN))
    assert done.returncode == 0, done.stderr
    assert "installed Claude Code plugin demo-plugin 1.2.0" in done.stdout
    installed = home / "bearagent" / "claude-plugins" / "plugins" / "demo-plugin"
    assert (installed / ".claude-plugin" / "plugin.json").is_file()
    assert os.access(installed / "bin" / "demo-tool", os.X_OK)
    [entry] = _listed(home)
    assert entry["id"] == "demo-plugin" and entry["enabled"] is True and entry["version"] == "1.2.0"

    loaded = load(ws, home)
    assert loaded.agents.get("demo-reviewer") is not None
    assert loaded.skills.get("demo-checklist") is not None
    greet = loaded.actions.get("demo-plugin:greet")
    assert greet is not None and greet.level == "platform"
    assert loaded.actions.get("demo-plugin:review:pr") is not None
    server = loaded.mcp.get("demo-plugin-info")
    assert server is not None and server.level == "platform"
    assert server.args == (str(installed / "mcp" / "server.py"),)
    assert server.env["CLAUDE_PLUGIN_DATA"] == str(home / "bearagent" / "claude-plugins" / "data" / "demo-plugin")
    prompt_hooks = loaded.hooks.matchers("UserPromptSubmit")
    assert [m.level for m in prompt_hooks] == ["platform"]
    assert str(installed / "hooks" / "record.py") in (prompt_hooks[0].hooks[0].command or "")
    assert not [
        d for d in loaded.diagnostics(include_tools=False) if "claude-plugins" in d.source or "plugin" in d.code
    ]
    # user-installed: nothing of it is on the workspace's trust surface
    assert "demo-plugin" not in repr(workspace_trust_surface(loaded).items)

    again = _cli(home, "plugins", "install", str(PLUGIN))
    assert again.returncode == 2
    assert "installed already" in again.stderr and "--force" in again.stderr
    assert _cli(home, "plugins", "install", "--force", str(PLUGIN)).returncode == 0

    assert _cli(home, "plugins", "disable", "demo-plugin").returncode == 0
    assert _listed(home)[0]["enabled"] is False
    off = load(ws, home)
    assert off.actions.get("demo-plugin:greet") is None
    assert off.mcp.get("demo-plugin-info") is None
    assert not off.hooks.matchers("UserPromptSubmit")
    assert _cli(home, "plugins", "enable", "demo-plugin").returncode == 0
    assert load(ws, home).actions.get("demo-plugin:greet") is not None

    table = _cli(home, "plugins", "list")
    assert "demo-plugin" in table.stdout and "enabled" in table.stdout

    gone = _cli(home, "plugins", "uninstall", "demo-plugin")
    assert gone.returncode == 0, gone.stderr
    assert "uninstalled Claude Code plugin demo-plugin" in gone.stdout
    assert not installed.exists()
    assert not (home / "bearagent" / "claude-plugins" / "data" / "demo-plugin").exists()
    assert _listed(home) == []
    missing = _cli(home, "plugins", "enable", "demo-plugin")
    assert missing.returncode == 2 and "no installed Claude Code plugin 'demo-plugin'" in missing.stderr


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def test_marketplaces_from_a_folder_and_from_a_git_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    added = _cli(home, "plugins", "marketplace", "add", str(MARKET))
    assert added.returncode == 0, added.stderr
    assert "added marketplace bear-test-market (1 plugin: demo-plugin)" in added.stdout
    dup = _cli(home, "plugins", "marketplace", "add", str(MARKET))
    assert dup.returncode == 2 and "known already" in dup.stderr

    done = _cli(home, "plugins", "install", "demo-plugin@bear-test-market")
    assert done.returncode == 0, done.stderr
    [entry] = _listed(home)
    assert entry["id"] == "demo-plugin@bear-test-market"
    unknown = _cli(home, "plugins", "install", "nothing@bear-test-market")
    assert unknown.returncode == 2 and "has no plugin 'nothing'" in unknown.stderr and "demo-plugin" in unknown.stderr
    assert _cli(home, "plugins", "uninstall", "demo-plugin@bear-test-market").returncode == 0
    assert _cli(home, "plugins", "marketplace", "remove", "bear-test-market").returncode == 0

    # the same marketplace as a git repository, cloned through file:// from a bare repository
    work = tmp_path / "market-src"
    shutil.copytree(MARKET, work)
    _git("init", "-q", "-b", "main", cwd=work)
    _git("add", "-A", cwd=work)
    _git("commit", "-q", "-m", "market", cwd=work)
    bare = tmp_path / "market.git"
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    url = bare.as_uri()
    added = _cli(home, "plugins", "marketplace", "add", url)
    assert added.returncode == 0, added.stderr
    listing = _cli(home, "plugins", "marketplace", "list", "--json")
    [market] = json.loads(listing.stdout)["marketplaces"]
    assert market["source"] == url
    assert Path(str(market["path"])).is_relative_to(home / "bearagent" / "claude-plugins" / "marketplaces")
    done = _cli(home, "plugins", "install", "demo-plugin@bear-test-market")
    assert done.returncode == 0, done.stderr
    installed = home / "bearagent" / "claude-plugins" / "plugins" / "demo-plugin"
    assert os.access(installed / "bin" / "demo-tool", os.X_OK)  # the mode survives git

    # a new version pushed to the marketplace's repository: `plugins update` fetches it, keeping the state
    manifest = work / "plugins" / "demo-plugin" / ".claude-plugin" / "plugin.json"
    manifest.write_text(manifest.read_text().replace('"1.2.0"', '"1.3.0"'))
    _git("commit", "-q", "-am", "1.3.0", cwd=work)
    _git("push", "-q", str(bare), "main", cwd=work)
    assert _cli(home, "plugins", "disable", "demo-plugin").returncode == 0
    updated = _cli(home, "plugins", "update", "demo-plugin")
    assert updated.returncode == 0, updated.stderr
    assert "updated Claude Code plugin demo-plugin@bear-test-market to 1.3.0" in updated.stdout
    assert _listed(home)[0]["enabled"] is False
    assert _cli(home, "plugins", "marketplace", "update").stdout.strip() == "updated marketplace bear-test-market"

    # a plugin straight from a git URL
    assert _cli(home, "plugins", "uninstall", "demo-plugin").returncode == 0
    plugin_repo = tmp_path / "plugin-src"
    shutil.copytree(PLUGIN, plugin_repo)
    _git("init", "-q", "-b", "main", cwd=plugin_repo)
    _git("add", "-A", cwd=plugin_repo)
    _git("commit", "-q", "-m", "plugin", cwd=plugin_repo)
    done = _cli(home, "plugins", "install", plugin_repo.as_uri())
    assert done.returncode == 0, done.stderr
    assert _listed(home)[0]["source"] == plugin_repo.as_uri()
    bad = _cli(home, "plugins", "marketplace", "add", (tmp_path / "nowhere.git").as_uri())
    assert bad.returncode == 2 and "git clone" in bad.stderr and "fix:" in bad.stderr


def test_an_installed_plugins_hooks_fire_and_its_mcp_server_runs_in_a_real_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user_dir = home / "bearagent"
    entry = install(user_dir, str(PLUGIN))
    installed = user_dir / "claude-plugins" / "plugins" / entry.name
    data = user_dir / "claude-plugins" / "data" / entry.name
    # the plugin's hook appends to its ${CLAUDE_PLUGIN_DATA}, outside the workspace: after the model's first Bash
    # call hooks run in the sandbox (docs/sandbox.md), where that is read-only, so this user runs them as configured
    (user_dir / "config.yaml").write_text("sandbox: {hooks_after_writes: unconfined}\n")
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo fine"}}]
  - tool_calls: [{name: Bash, arguments: {command: "demo-tool hi"}}]
  - tool_calls: [{name: Bash, arguments: {command: "echo forbidden"}}]
  - tool_calls: [{name: mcp__demo-plugin-info__plugin_info, arguments: {}}]
  - text: "done"
"""
    config = CONFIG + 'permissions: {allow: ["Bash(echo *)", "Bash(demo-tool *)"]}\n'
    agents = {"main": agent_md("Main.", mode="primary", tools="[Bash]", mcp="[demo-plugin-info]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=config)
    env = isolated_env(home)
    trust(root, workspace_trust_surface(load(root, home)), env=env)
    with open_workspace(root, env=env, plugins=PluginHost()) as ws:
        result = ws.run_sync("hello plugin")
        assert result.status == "succeeded", result.error
        events = ws.events(str(result.run_id))
    records = [json.loads(line) for line in (data / "events.jsonl").read_text().splitlines()]
    assert records[0] == {
        "kind": "prompt",
        "event": "UserPromptSubmit",
        "root": str(installed),
        "prompt": "hello plugin",
        "command": None,
    }
    assert [r["command"] for r in records[1:]] == ["echo fine", "demo-tool hi", "echo forbidden"]
    done = [
        e.model_dump(mode="json")["payload"] for e in events if e.event_type in ("ToolCallCompleted", "ToolCallFailed")
    ]
    assert "fine" in json.dumps(done[0])
    assert "demo-tool says hi" in json.dumps(done[1])  # the plugin's bin/ is on Bash's PATH, in the sandbox
    assert "forbidden commands are blocked" in json.dumps(done[2])
    assert f"root={installed} data={data}" in json.dumps(done[3])

    # the plugin's namespaced command, from the command line: its prompt is what the plugin's hook sees
    ran = _cli(home, "action", "run", "demo-plugin:greet", "Bob", cwd=root)
    assert ran.returncode == 0, ran.stderr
    prompts = [json.loads(line)["prompt"] for line in (data / "events.jsonl").read_text().splitlines()]
    assert prompts[-4] == "Say hello to Bob from the demo plugin."


def test_workspace_settings_turn_plugins_off_and_bring_their_own_on_the_trust_surface(tmp_path: Path) -> None:
    home = tmp_path / "home"
    install(home / "bearagent", str(PLUGIN))
    ws = tmp_path / "ws"
    write(ws, ".bearagent/config.yaml", CONFIG)
    write(ws, ".claude/settings.json", json.dumps({"enabledPlugins": {"demo-plugin": False}}))
    loaded = load(ws, home)
    assert loaded.actions.get("demo-plugin:greet") is None
    # the installed plugin's output style, chosen by outputStyle (the plugin is enabled again for it)
    write(ws, ".claude/settings.json", json.dumps({"outputStyle": "terse"}))
    styled = load(ws, home).output_style
    assert styled is not None and styled.name == "terse" and "as few words" in styled.text
    write(ws, ".claude/settings.json", json.dumps({"enabledPlugins": {"demo-plugin": False}}))
    assert not [d for d in loaded.diagnostics(include_tools=False) if d.code.startswith("claude.")]

    # a workspace's own marketplace folder: its plugin loads in place, at the workspace level
    ws2 = tmp_path / "ws2"
    write(ws2, ".bearagent/config.yaml", CONFIG)
    shutil.copytree(MARKET, ws2 / "tools" / "market")
    settings = {
        "extraKnownMarketplaces": {"team": {"source": {"source": "directory", "path": "./tools/market"}}},
        "enabledPlugins": {"demo-plugin@bear-test-market": True},
    }
    write(ws2, ".claude/settings.json", json.dumps(settings).replace("bear-test-market", "team"))
    loaded = load(ws2, tmp_path / "other-home")
    # a workspace plugin whose folder links out of the workspace is refused, with an error naming the link
    ws3 = tmp_path / "ws3"
    write(ws3, ".bearagent/config.yaml", CONFIG)
    shutil.copytree(MARKET, ws3 / "tools" / "market")
    shutil.rmtree(ws3 / "tools" / "market" / "plugins" / "demo-plugin" / "hooks")
    (tmp_path / "elsewhere").mkdir()
    (ws3 / "tools" / "market" / "plugins" / "demo-plugin" / "hooks").symlink_to(tmp_path / "elsewhere")
    write(ws3, ".claude/settings.json", json.dumps(settings).replace("bear-test-market", "team"))
    refused = load(ws3, tmp_path / "other-home")
    assert refused.actions.get("demo-plugin:greet") is None
    [problem] = [d for d in refused.diagnostics(include_tools=False) if d.code == "plugin.invalid"]
    assert "symlink out of the plugin folder" in problem.message and problem.severity == "error"
    greet = loaded.actions.get("demo-plugin:greet")
    assert greet is not None and greet.level == "workspace"
    server = loaded.mcp.get("demo-plugin-info")
    assert server is not None and server.level == "workspace"
    assert [m.level for m in loaded.hooks.matchers("PreToolUse")] == ["workspace"]
    keys = {item.key for item in workspace_trust_surface(loaded).items}
    assert "mcp demo-plugin-info" in keys
    assert "hook UserPromptSubmit[*]#1 tools/market/plugins/demo-plugin/hooks/hooks.json" in keys
    # the hook's script is fingerprinted: changing it asks for trust again
    assert "file tools/market/plugins/demo-plugin/hooks/record.py" in keys


def test_broken_plugins_are_refused_with_the_file_line_and_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bad = tmp_path / "bad"
    write(bad, ".claude-plugin/plugin.json", '{"name": "bad",\n "version": }\n')
    out = _cli(home, "plugins", "install", str(bad))
    assert out.returncode == 2
    assert f"invalid JSON in {bad / '.claude-plugin' / 'plugin.json'} line 2" in out.stderr
    assert "fix: fix the JSON syntax there" in out.stderr

    escaping = tmp_path / "escaping"
    write(escaping, ".claude-plugin/plugin.json", '{"name": "escaping", "commands": "../../etc"}')
    try:
        read_plugin(escaping)
    except PluginError as exc:
        assert "leaves the plugin folder" in exc.message
    else:
        raise AssertionError("a component path out of the plugin was accepted")

    linked = tmp_path / "linked"
    write(linked, ".claude-plugin/plugin.json", '{"name": "linked"}')
    (linked / "commands").mkdir()
    (linked / "commands" / "secret.md").symlink_to(home.parent / "outside.md")
    (home.parent / "outside.md").write_text("secret")
    out = _cli(home, "plugins", "install", str(linked))
    assert out.returncode == 2 and "symlink out of the plugin folder" in out.stderr
    assert _listed(home) == []

    named = tmp_path / "named"
    write(named, ".claude-plugin/plugin.json", '{"name": "Bad Name"}')
    out = _cli(home, "plugins", "install", str(named))
    assert out.returncode == 2 and "plugin name 'Bad Name'" in out.stderr and 'set "name"' in out.stderr


def test_a_plugin_written_for_claude_code_never_stops_a_run_with_an_event_or_command_bearagent_lacks(
    tmp_path: Path,
) -> None:
    from bearagent.config.claude_keys import CLAUDE_HOOK_EVENTS
    from bearagent.registries.hooks import HOOK_EVENTS

    lacking = next(e for e in sorted(CLAUDE_HOOK_EVENTS) if e not in HOOK_EVENTS)
    plugin = tmp_path / "cc-style"
    write(plugin, ".claude-plugin/plugin.json", '{"name": "cc-style"}')
    hook = {"hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/x.py", "timeout": 10}]}
    missing = {"hooks": [{"type": "command", "command": "no-such-program-for-bearagent --flag"}]}
    write(plugin, "x.py", "print('ok')\n")
    # hookify's shape: the events at the top level, "matcher": "*" on every one
    events = {"UserPromptSubmit": [{"matcher": "*", **hook}], lacking: [hook], "Stop": [{"matcher": "*", **missing}]}
    write(plugin, "hooks/hooks.json", json.dumps(events))
    home = tmp_path / "home"
    install(home / "bearagent", str(plugin))
    ws = tmp_path / "ws"
    write(ws, ".bearagent/config.yaml", CONFIG)
    loaded = load(ws, home)
    assert len(loaded.hooks.matchers("UserPromptSubmit")) == 1
    assert not loaded.hooks.matchers("Stop")
    found = {d.code: d for d in loaded.hooks.diagnostics}
    assert found["claude.hook_event_unsupported"].severity == "warning"
    assert lacking in found["claude.hook_event_unsupported"].message
    assert found["hooks.command_not_executable"].severity == "warning"
    assert "disable the plugin" in (found["hooks.command_not_executable"].fix or "")
    assert not loaded.hooks.has_errors

"""Claude Code's `.claude/settings.json` / `settings.local.json`: permissions, defaultMode, hooks and env become
workspace config files under the one precedence rule, on the trust surface, and fail closed when they do not parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.config_ws import codes, load, only, write

from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import HookMatcherSpec
from bearagent.trust import workspace_trust_surface
from bearagent.trust.guards import guard_failures, require_guards
from bearagent.workspace import LoadedWorkspace


def settings(root: Path, data: object, name: str = "settings.json") -> Path:
    path = root / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_permissions_merge_with_config_yaml_and_the_modes_follow_the_precedence(tmp_path: Path) -> None:
    settings(
        tmp_path,
        {"permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Bash(curl:*)"], "defaultMode": "plan"}},
    )
    settings(tmp_path, {"permissions": {"ask": ["Bash(git push:*)"], "defaultMode": "default"}}, "settings.local.json")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.config.permissions.allow == ("Bash(npm run test:*)",)
    assert ws.config.permissions.deny == ("Bash(curl:*)",)
    assert ws.config.permissions.ask == ("Bash(git push:*)",)
    assert ws.config.permission_mode == "default"  # settings.local.json outranks settings.json
    assert ws.config.permission_ceiling is None  # nothing in a workspace is a ceiling
    paths = [cf.path.name for cf in ws.config_files]
    assert paths == ["settings.json", "settings.local.json"]
    assert all(cf.level == "workspace" for cf in ws.config_files)

    write(tmp_path, ".bearagent/config.yaml", "permission_mode: acceptEdits\npermissions: {deny: [WebFetch]}\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.config.permission_mode == "acceptEdits"  # BearAgent's own workspace config outranks both
    assert ws.config.permissions.deny == ("Bash(curl:*)", "WebFetch")  # lists merge; a deny anywhere wins
    assert [cf.path.name for cf in ws.config_files] == ["settings.json", "settings.local.json", "config.yaml"]


def test_the_user_ceiling_caps_a_looser_default_mode(tmp_path: Path) -> None:
    settings(tmp_path, {"permissions": {"defaultMode": "bypassPermissions"}})
    write(tmp_path / "home", "bearagent/config.yaml", "permission_mode: default\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.config.permission_mode == "bypassPermissions" and ws.config.permission_ceiling == "default"


def test_compat_false_ignores_the_settings_files(tmp_path: Path) -> None:
    settings(tmp_path, {"permissions": {"deny": ["Bash"]}})
    write(tmp_path, ".bearagent/config.yaml", "compat: false\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.config.permissions.deny == () and [cf.path.name for cf in ws.config_files] == ["config.yaml"]


def test_allow_rules_a_looser_mode_hooks_and_env_are_trust_surface_and_deny_ask_are_not(tmp_path: Path) -> None:
    write(tmp_path, ".claude/hooks/guard.sh", "#!/bin/sh\nexit 0\n", executable=True)
    settings(
        tmp_path,
        {
            "permissions": {"allow": ["Bash(npm test)"], "ask": ["Bash(git push:*)"], "deny": ["Bash(curl:*)"]},
            "env": {"NODE_ENV": "test"},
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [{"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'}],
                    }
                ]
            },
        },
    )
    settings(tmp_path, {"permissions": {"defaultMode": "bypassPermissions"}}, "settings.local.json")
    ws = load(tmp_path, tmp_path / "home")
    rendered = [item.render() for item in workspace_trust_surface(ws).items]
    assert ".claude/settings.json:4: permissions.allow 'Bash(npm test)' lets calls run without asking" in rendered
    assert ".claude/settings.json:14: env NODE_ENV is set for hook commands and MCP servers" in rendered
    assert any(r.startswith(".claude/settings.json:23: command hook on PreToolUse (Bash) runs") for r in rendered)
    assert ".claude/hooks/guard.sh: file run by hook PreToolUse[Bash]#1 (its content is fingerprinted)" in rendered
    assert any("settings.local.json:3: permission_mode bypassPermissions" in r for r in rendered)
    assert not any("curl" in r or "git push" in r for r in rendered)
    group = only_group(ws)
    assert group.level == "workspace" and group.source == str(tmp_path / ".claude" / "settings.json")
    assert ws.settings_env == {"NODE_ENV": "test"}
    assert ws.child_env()["NODE_ENV"] == "test" and "NODE_ENV" not in ws.env


def only_group(ws: LoadedWorkspace) -> HookMatcherSpec:
    groups = ws.hooks.all()
    assert len(groups) == 1, groups
    return groups[0]


def test_a_json_syntax_error_is_a_diagnostic_that_stops_a_run(tmp_path: Path) -> None:
    path = settings(tmp_path, '{\n  "permissions": {\n    "deny": ["Bash(curl:*)",]\n  }\n}\n')
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.diagnostics(), "config.json_syntax")
    assert d.severity == "error" and d.source == str(path) and d.line == 3
    assert guard_failures(ws.diagnostics()) == [d]
    with pytest.raises(BearAgentError) as caught:
        require_guards(ws.diagnostics())
    assert (
        caught.value.info.code == "configuration.guard_file_invalid" and "settings.json:3" in caught.value.info.message
    )


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ([1, 2], "config.not_a_mapping"),
        ({"permisions": {"deny": ["Bash"]}}, "config.unknown_key"),
        ({"permissions": {"denny": ["Bash"]}}, "config.unknown_key"),
        ({"permissions": {"deny": "Bash"}}, "config.invalid_value"),
        ({"permissions": {"deny": ["Bash(curl:* x)"]}}, "config.invalid_value"),
        ({"permissions": {"deny": ["PowerShell(Remove-Item *)"]}}, "config.invalid_value"),
        ({"permissions": {"defaultMode": "yolo"}}, "config.invalid_value"),
    ],
)
def test_a_broken_guarding_setting_stops_a_run_in_the_local_file_too(tmp_path: Path, data: object, code: str) -> None:
    settings(tmp_path, data, "settings.local.json")
    ws = load(tmp_path, tmp_path / "home")
    failures = guard_failures(ws.diagnostics())
    assert [d.code for d in failures] == [code], [d.render() for d in ws.diagnostics()]


def test_unsupported_claude_code_settings_and_hook_events_are_named_never_dropped_silently(tmp_path: Path) -> None:
    settings(
        tmp_path,
        {
            "autoUpdates": False,
            "awsAuthRefresh": "aws sso login",
            "permissions": {"disableAutoMode": "disable", "defaultMode": "auto"},
            "hooks": {"WorktreeCreate": [{"hooks": [{"type": "command", "command": "true"}]}]},
        },
    )
    ws = load(tmp_path, tmp_path / "home")
    diags = ws.diagnostics()
    assert codes(diags).count("claude.setting_unsupported") == 4
    auto = next(d for d in diags if d.field == "permissions.disableAutoMode")
    assert auto.severity == "warning" and "no auto mode" in auto.message
    event = only(diags, "claude.hook_event_unsupported")
    assert event.severity == "warning" and "'WorktreeCreate'" in event.message and event.line == 9
    assert ws.hooks.all() == () and ws.config.permission_mode is None
    assert guard_failures(diags) == []


def test_disable_all_hooks_drops_the_settings_hooks(tmp_path: Path) -> None:
    settings(
        tmp_path,
        {"disableAllHooks": True, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}},
    )
    ws = load(tmp_path, tmp_path / "home")
    assert ws.hooks.all() == () and "claude.hooks_disabled" in codes(ws.diagnostics())


def test_a_hook_that_cannot_run_is_a_hook_error(tmp_path: Path) -> None:
    settings(tmp_path, {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "./missing.sh"}]}]}})
    ws = load(tmp_path, tmp_path / "home")
    assert ws.hooks.has_errors
    settings(tmp_path, {"hooks": ["not", "an", "object"]})
    assert load(tmp_path, tmp_path / "home").hooks.has_errors


def test_a_settings_file_linked_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"permissions": {"allow": ["Bash"]}}')
    ws_root = tmp_path / "ws"
    (ws_root / ".claude").mkdir(parents=True)
    (ws_root / ".claude" / "settings.json").symlink_to(outside)
    ws = load(ws_root, tmp_path / "home")
    assert "workspace.path_refused" in codes(ws.diagnostics())
    assert ws.config.permissions.allow == ()


def test_additional_directories_resolve_from_the_project_root_and_home_and_are_trust_surface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    monkeypatch.setenv("HOME", str(home))
    ws_root = tmp_path / "ws"
    path = settings(ws_root, {"permissions": {"additionalDirectories": ["../shared", "~/notes", "../missing"]}})
    ws = load(ws_root, home)
    expected = (str((tmp_path / "shared").resolve()), str((home / "notes").resolve()))
    assert ws.config.permissions.additional_directories == expected
    assert ws.config.sandbox.additional_directories == expected  # the shell's confinement gets them too
    missing = only(ws.diagnostics(), "claude.directory_missing")
    assert missing.severity == "warning" and "'../missing'" in missing.message and missing.line == 3
    items = [i for i in workspace_trust_surface(ws).items if i.key.startswith("additional directory")]
    assert sorted(str(i.canonical) for i in items) == sorted(expected)
    assert all(i.file == ".claude/settings.json" for i in items)
    assert items[0].render().startswith(".claude/settings.json:3: additional directory ")
    assert guard_failures(ws.diagnostics()) == [] and path.exists()


def test_the_users_additional_directories_are_trusted_and_a_relative_one_there_is_an_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "mine").mkdir()
    write(home, "bearagent/config.yaml", f"permissions:\n  additional_directories: [{tmp_path / 'mine'}, rel/dir]\n")
    ws = load(tmp_path / "ws", home)
    assert ws.config.permissions.additional_directories == (str((tmp_path / "mine").resolve()),)
    assert not [i for i in workspace_trust_surface(ws).items if i.key.startswith("additional directory")]
    bad = only(ws.diagnostics(), "config.invalid_value")
    assert "'rel/dir': a relative path has no base in the user config" in bad.message


def test_disable_bypass_permissions_mode_is_read_and_a_wrong_value_stops_the_run(tmp_path: Path) -> None:
    settings(tmp_path, {"permissions": {"disableBypassPermissionsMode": "disable", "defaultMode": "bypassPermissions"}})
    ws = load(tmp_path, tmp_path / "home")
    assert ws.config.bypass_disabled_by == str(tmp_path / ".claude" / "settings.json")
    assert not [i for i in workspace_trust_surface(ws).items if "disableBypass" in i.key]  # it only restricts
    settings(tmp_path, {"permissions": {"disableBypassPermissionsMode": True}}, "settings.local.json")
    failures = guard_failures(load(tmp_path, tmp_path / "home").diagnostics())
    assert [d.field for d in failures] == ["permissions.disableBypassPermissionsMode"]


def test_a_disabled_bypass_is_skipped_and_the_next_source_decides() -> None:
    from bearagent.domain.specs import AgentPolicy, AgentSpec
    from bearagent.trust.modes import mode_in_force

    agent = AgentSpec(name="a", description="A.", policy=AgentPolicy(permission_mode="bypassPermissions"))
    off = "/ws/.claude/settings.json"
    forced = mode_in_force(agent, workspace_mode="default", user_ceiling=None, bypass_disabled_by=off)
    assert forced.mode == "default" and not forced.user_bypass  # the agent's bypass is skipped: the workspace's mode
    assert forced.capped and "disabled by disableBypassPermissionsMode in /ws/.claude/settings.json" in forced.capped
    flagged = mode_in_force(
        agent, workspace_mode=None, user_ceiling=None, flag="bypassPermissions", bypass_disabled_by=off
    )
    assert flagged.mode == "acceptEdits" and flagged.capped and "(--permission-mode)" in flagged.capped
    allowed = mode_in_force(agent, workspace_mode=None, user_ceiling=None)
    assert allowed.mode == "bypassPermissions" and allowed.capped is None


def test_every_documented_setting_key_is_known_none_is_an_unknown_key_warning(tmp_path: Path) -> None:
    # the settings keys of Claude Code's reference (docs/claude-code.md lists each): implemented, or an info naming
    # what to use instead; never "unknown key"
    documented: dict[str, object] = {
        "strictKnownMarketplaces": [],
        "autoCompactEnabled": True,
        "autoCompactWindow": 100000,
        "autoMemoryEnabled": False,
        "fileCheckpointingEnabled": True,
        "worktree": {"symlinkDirectories": []},
        "policyHelper": "policy.sh",
        "subagentStatusLine": {"type": "command", "command": "true"},
        "cleanupPeriodDays": 30,
        "effortLevel": "high",
        "agent": "reviewer",
        "allowedHttpHookUrls": [],
        "httpHookAllowedEnvVars": [],
        "allowManagedHooksOnly": True,
        "otelHeadersHelper": "otel.sh",
    }
    settings(tmp_path, documented)
    diags = load(tmp_path, tmp_path / "home").diagnostics()
    unsupported = {d.field for d in diags if d.code == "claude.setting_unsupported"}
    assert unsupported == set(documented), [d.render() for d in diags]
    assert all(d.severity == "info" for d in diags if d.code == "claude.setting_unsupported")
    assert guard_failures(diags) == []

"""HookRegistry: Claude Code shape, validation at load."""

from __future__ import annotations

from pathlib import Path

from tests.support.config_ws import codes, load, only, write


def _hooks(tmp_path: Path, body: str) -> None:
    write(tmp_path, ".bearagent/config.yaml", "hooks:\n" + body)


def test_valid_command_hooks_parse_with_timeout_in_seconds(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/hooks/guard.sh", "#!/bin/sh\nexit 0\n", executable=True)
    _hooks(
        tmp_path,
        "  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: .bearagent/hooks/guard.sh, timeout: 30, on_failure: block, capabilities: [block]}]\n"
        "  PostToolUse:\n    - hooks: [{command: sh, args: [-c, 'exit 0']}]\n"
        "  Stop:\n    - hooks: [{type: command, command: 'FOO=1 \"$CLAUDE_PROJECT_DIR\"/.bearagent/hooks/guard.sh --x'}]\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert not [d for d in ws.hooks.diagnostics], [d.render() for d in ws.hooks.diagnostics]
    pre = ws.hooks.matchers("PreToolUse")[0]
    handler = pre.hooks[0]
    assert (
        pre.matcher == "Bash"
        and handler.timeout_s == 30
        and handler.on_failure == "block"
        and handler.capabilities == {"block"}
    )
    assert ws.hooks.matchers("PostToolUse")[0].hooks[0].args == ("-c", "exit 0")


def test_unknown_event_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    _hooks(tmp_path, "  preToolUse:\n    - hooks: [{command: sh}]\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.hooks.diagnostics, "hooks.unknown_event")
    assert (
        d.severity == "error"
        and "did you mean 'PreToolUse'" in d.message
        and d.line == 2
        and d.fix == "rename it to 'PreToolUse'"
    )


def test_missing_command_is_a_load_error(tmp_path: Path) -> None:
    _hooks(tmp_path, "  PreToolUse:\n    - hooks: [{type: command, command: .bearagent/hooks/nope.sh}]\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.hooks.diagnostics, "hooks.command_not_executable")
    assert d.severity == "error" and "does not exist" in d.message and "nope.sh" in d.message
    assert ws.hooks.has_errors and ws.hooks.matchers("PreToolUse") == ()


def test_non_executable_command_says_chmod(tmp_path: Path) -> None:
    write(tmp_path, "hook.sh", "#!/bin/sh\n")
    _hooks(tmp_path, "  PreToolUse:\n    - hooks: [{type: command, command: ./hook.sh}]\n")
    ws = load(tmp_path, tmp_path / "home")
    d = only(ws.hooks.diagnostics, "hooks.command_not_executable")
    assert "not an executable" in d.message and d.fix == "make it executable: chmod +x ./hook.sh"


def test_command_not_on_path_and_missing_script_of_interpreter(tmp_path: Path) -> None:
    _hooks(
        tmp_path,
        "  Stop:\n    - hooks: [{command: definitely-not-a-cmd-xyz}]\n    - hooks: [{command: 'bash scripts/missing.sh'}]\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    messages = [d.message for d in ws.hooks.diagnostics if d.code == "hooks.command_not_executable"]
    assert any("not found on PATH" in m for m in messages) and any("scripts/missing.sh" in m for m in messages)


def test_handler_shape_errors(tmp_path: Path) -> None:
    _hooks(
        tmp_path,
        "  PreToolUse:\n    - matcher: Bash\n      hooks: []\n    - hooks: [{type: http}]\n    - hooks: [{type: webhook, url: x}]\n"
        "    - hooks: [{type: http, url: 'http://127.0.0.1:1', timout: 3}]\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert codes(ws.hooks.diagnostics).count("hooks.invalid") == 3
    assert "did you mean 'timeout'" in only(ws.hooks.diagnostics, "config.unknown_key").message
    assert len(ws.hooks.matchers("PreToolUse")) == 1


def test_user_and_workspace_hooks_are_additive(tmp_path: Path) -> None:
    write(tmp_path, "home/bearagent/config.yaml", "hooks:\n  Stop:\n    - hooks: [{command: 'true'}]\n")
    write(tmp_path, "ws/.bearagent/config.yaml", "hooks:\n  Stop:\n    - hooks: [{command: 'true'}]\n")
    ws = load(tmp_path / "ws", tmp_path / "home")
    assert [m.level for m in ws.hooks.matchers("Stop")] == ["workspace", "platform"]


def test_chat_workspace_ignores_hooks_visibly(tmp_path: Path) -> None:
    write(tmp_path, ".bearagent/config.yaml", "kind: chat\nhooks:\n  Stop:\n    - hooks: [{command: 'true'}]\n")
    ws = load(tmp_path, tmp_path / "home")
    assert ws.hooks.all() == () and "hooks.ignored_in_chat" in codes(ws.hooks.diagnostics)

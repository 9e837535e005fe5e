"""Which files and folders of a hidden home a hook run in the sandbox keeps readable (hooks/after_writes.own_scripts):
its own script, and a plugin's folder only when the user installed that plugin."""

from __future__ import annotations

import shlex
from pathlib import Path

from bearagent.config.workspace import installed_claude_plugins
from bearagent.hooks.after_writes import own_scripts


def _layout(tmp_path: Path) -> tuple[Path, dict[str, str], Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"BEARAGENT_HOME": str(tmp_path / "home" / ".config" / "bearagent"), "HOME": str(tmp_path / "home")}
    plugin = installed_claude_plugins(env) / "hookify"
    (plugin / "hooks").mkdir(parents=True)
    (plugin / "core").mkdir()
    (plugin / "hooks" / "pretooluse.py").write_text("import core\n", encoding="utf-8")
    secrets = tmp_path / "home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_ed25519").write_text("key\n", encoding="utf-8")
    return workspace, env, plugin, secrets


def _shell(words: list[str]) -> list[str]:
    return ["sh", "-c", " ".join(shlex.quote(w) for w in words)]


def test_an_installed_plugins_hook_keeps_its_folder_readable(tmp_path: Path) -> None:
    workspace, env, plugin, _ = _layout(tmp_path)
    script = plugin / "hooks" / "pretooluse.py"
    argv = _shell([f"CLAUDE_PLUGIN_ROOT={plugin}", "CLAUDE_PLUGIN_DATA=/tmp/d", "python3", str(script)])
    assert set(own_scripts(argv, workspace, env)) == {str(plugin.resolve()), str(script.resolve())}


def test_a_hook_naming_another_folder_as_its_plugin_root_exposes_nothing_of_it(tmp_path: Path) -> None:
    workspace, env, plugin, secrets = _layout(tmp_path)
    for fake_root in (secrets, plugin / "core", installed_claude_plugins(env), Path("relative/dir")):
        argv = _shell([f"CLAUDE_PLUGIN_ROOT={fake_root}", "cat", str(secrets / "id_ed25519")])
        assert own_scripts(argv, workspace, env) == (), fake_root  # not a script, not an installed plugin's folder

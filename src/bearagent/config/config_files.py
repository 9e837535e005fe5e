"""The config files of one workspace and their order: the user's config.yaml, Claude Code's settings files (only
with `compat`), the workspace's `.bearagent/config.yaml`.

One owner for their precedence: settings merge lowest first (user, Claude Code's settings, workspace: the later
wins), additive sections (hooks) are read highest first, and the entries of config.yaml (`models:`,
`mcp_servers:`) come from the workspace's file, then the user's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bearagent.config.claude_settings import load_claude_settings, settings_env
from bearagent.config.model import BearConfig, ConfigFile, load_config_file, merge_config
from bearagent.config.safe_read import check_workspace_file
from bearagent.config.workspace import CONFIG_FILE, WORKSPACE_DIR
from bearagent.domain.diagnostics import Diagnostic


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """The config files that exist and parsed, by level, with the settings merged from them."""

    user: ConfigFile | None
    claude: tuple[ConfigFile, ...]
    """Claude Code's `.claude/settings.json` and `settings.local.json`, lowest first: workspace level, below
    `.bearagent/config.yaml` (config/claude_settings.py)."""
    workspace: ConfigFile | None
    config: BearConfig
    compat: bool
    """`compat` as the config.yaml files set it (Claude Code's settings are read only when it is on)."""
    hook_diagnostics: tuple[Diagnostic, ...] = ()
    """Problems with the `hooks` of Claude Code's settings: the hook registry's diagnostics (they stop a run as a
    broken hook entry of config.yaml does)."""

    def lowest_first(self) -> list[ConfigFile]:
        """Every file in merge order (the later wins)."""
        return [cf for cf in (self.user, *self.claude, self.workspace) if cf is not None]

    def highest_first(self) -> list[ConfigFile]:
        """Every file, the one that wins first: the order of additive sections (every hook group runs)."""
        return [cf for cf in (self.workspace, *reversed(self.claude), self.user) if cf is not None]

    def yaml_files(self) -> list[ConfigFile]:
        """The config.yaml files, the workspace's first: where `models:` and `mcp_servers:` entries come from."""
        return [cf for cf in (self.workspace, self.user) if cf is not None]

    def declaring(self) -> ConfigFile | None:
        """The config.yaml a diagnostic of a merged setting (`default_agent`) points at: the workspace's, else the
        user's."""
        return self.workspace or self.user

    def settings_env(self) -> Mapping[str, str]:
        """`env` of Claude Code's settings files (the local file wins name by name)."""
        return settings_env(list(self.claude))


def load_config_files(root: Path, user_dir: Path, diagnostics: list[Diagnostic]) -> ConfigFiles:
    """Read the user's and the workspace's config.yaml, and (when `compat` is on in them) Claude Code's settings.
    Never raises for a broken file: problems are diagnostics and the file contributes what it validly says."""
    user = load_config_file(user_dir / CONFIG_FILE, "platform", diagnostics)
    ws_config = root / WORKSPACE_DIR / CONFIG_FILE
    workspace = (  # never through a symlink out of the workspace (config/safe_read.py)
        load_config_file(ws_config, "workspace", diagnostics)
        if check_workspace_file(root, ws_config, diagnostics, what=f"{WORKSPACE_DIR}/{CONFIG_FILE}")
        else None
    )
    compat = merge_config([cf for cf in (user, workspace) if cf is not None]).compat
    hook_diagnostics: list[Diagnostic] = []
    claude = load_claude_settings(root, diagnostics, hook_diagnostics) if compat else []
    merged = merge_config([cf for cf in (user, *claude, workspace) if cf is not None])
    return ConfigFiles(user, tuple(claude), workspace, merged, compat, tuple(hook_diagnostics))

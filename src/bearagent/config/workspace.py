"""Where things live: workspace discovery, the user config dir, and the ordered list of configuration sources.

The one owner of precedence between sources: every `Source` (and so every rank) a registry resolves names with is
made here. The order of the config files themselves is `config/config_files.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import Level

WORKSPACE_DIR = ".bearagent"
CONFIG_FILE = "config.yaml"

# Precedence ranks: lower wins. Flags (rank 0) are applied by the caller on top of the registries.
RANK_WORKSPACE = 10_000
RANK_COMPAT_CLAUDE = 11_000
RANK_COMPAT_AGENTS = 12_000
RANK_USER = 20_000
RANK_PLUGIN = 30_000
RANK_BUILTIN = 40_000

SourceKind = Literal["workspace", "compat", "user", "plugin", "builtin"]


@dataclass(frozen=True, slots=True)
class Source:
    """One place definitions come from. Two definitions of one name in the same `Source` are an error."""

    id: str  # e.g. "workspace", "compat:.claude/agents", "user", "plugin:guard", "builtin"
    kind: SourceKind
    rank: int
    directory: Path | None = None
    namespace: str | None = None
    """A Claude Code plugin's name: its commands are `/namespace:command`."""

    @property
    def level(self) -> Level:
        return "workspace" if self.kind in ("workspace", "compat") else "platform"

    def describe(self) -> str:
        return self.id


def discover_workspace(cwd: Path, override: Path | None = None) -> Path:
    """`-w DIR` if given; else the nearest directory from `cwd` upwards holding `.bearagent/`; else `cwd`."""
    if override is not None:
        return override.expanduser().resolve()
    start = cwd.resolve()
    for candidate in (start, *start.parents):
        if (candidate / WORKSPACE_DIR).is_dir():
            return candidate
    return start


def user_config_dir(env: Mapping[str, str]) -> Path:
    """`$BEARAGENT_HOME`, else `$XDG_CONFIG_HOME/bearagent`, else `~/.config/bearagent`."""
    home = env.get("BEARAGENT_HOME")
    if home:
        return Path(home).expanduser()
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg).expanduser() / "bearagent"
    user_home = env.get("HOME")
    base = Path(user_home) if user_home else Path.home()
    return base / ".config" / "bearagent"


CLAUDE_PLUGINS_DIR = "claude-plugins"
"""Where Claude Code plugins the user installed live, under the user config dir (`plugins/<name>/` inside it)."""


def installed_claude_plugins(env: Mapping[str, str]) -> Path:
    """The folder holding the Claude Code plugins the user installed (`bearagent plugins install`), one per name."""
    return user_config_dir(env) / CLAUDE_PLUGINS_DIR / "plugins"


def workspace_source(root: Path, sub: str) -> Source:
    return Source("workspace", "workspace", RANK_WORKSPACE, root / WORKSPACE_DIR / sub)


def user_source(user_dir: Path, sub: str) -> Source:
    return Source("user", "user", RANK_USER, user_dir / sub)


def builtin_source(directory: Path | None) -> Source:
    return Source("builtin", "builtin", RANK_BUILTIN, directory)


def plugin_source(plugin: str, directory: Path | None, order: int) -> Source:
    # Plugins keep their own source each (a name in two plugins is shadowing, not a duplicate); ties are broken by
    # plugin name order so the result never depends on installation order.
    return Source(f"plugin:{plugin}", "plugin", RANK_PLUGIN + order, directory)


def claude_plugin_source(plugin: str, directory: Path, order: int, *, workspace: bool) -> Source:
    """A directory of a Claude Code plugin: one the user installed ranks with the plugins (below the user's own
    files); one the workspace brought ranks with Claude Code's workspace files (and is on the trust surface)."""
    if workspace:
        return Source(f"claude-plugin:{plugin}", "compat", RANK_COMPAT_CLAUDE + 500 + order, directory, plugin)
    return Source(f"claude-plugin:{plugin}", "plugin", RANK_PLUGIN + 5_000 + order, directory, plugin)


def config_file_source(level: Level) -> Source:
    """Where an entry of a config.yaml (`models:`, `mcp_servers:`) comes from: the workspace's file or the user's."""
    if level == "workspace":
        return Source("workspace", "workspace", RANK_WORKSPACE)
    return Source("user", "user", RANK_USER)


def mcp_json_source(root: Path) -> Source:
    """Claude Code's project `.mcp.json`: between the workspace's config.yaml and the user's."""
    return Source("compat:.mcp.json", "compat", RANK_COMPAT_CLAUDE, root)


def contribution_source(plugin: str) -> Source:
    """Where an entry a plugin registered in code (a model entry, an MCP server) comes from: below the user's."""
    return plugin_source(plugin, None, 0)


@dataclass(frozen=True, slots=True)
class PluginDirs:
    """The agent and skill directories plugins registered, a source each, ordered by plugin name."""

    agents: tuple[Source, ...]
    skills: tuple[Source, ...]


def plugin_dir_sources(
    agent_dirs: Sequence[tuple[str, str]], skill_dirs: Sequence[tuple[str, str]], diagnostics: list[Diagnostic]
) -> PluginDirs:
    """A source for each `(plugin, directory)` registered; a directory that does not exist is a warning."""
    names = sorted({p for p, _ in agent_dirs} | {p for p, _ in skill_dirs})
    order = {name: i for i, name in enumerate(names)}
    for plugin, directory in (*agent_dirs, *skill_dirs):
        if not Path(directory).is_dir():
            diagnostics.append(
                Diagnostic(
                    severity="warning",
                    code="plugin.missing_dir",
                    message=f"plugin {plugin!r} registered the directory {directory}, which does not exist; nothing was loaded from it",
                    source=f"plugin:{plugin}",
                    subject=plugin,
                    fix=f"reinstall the plugin; if it persists, report it to the author of {plugin!r} (package data missing?)",
                )
            )
    return PluginDirs(
        agents=tuple(plugin_source(p, Path(d), order[p]) for p, d in agent_dirs),
        skills=tuple(plugin_source(p, Path(d), order[p]) for p, d in skill_dirs),
    )


def agent_sources(
    root: Path,
    user_dir: Path,
    *,
    compat: bool,
    plugins: Sequence[Source] = (),
    builtin_dir: Path | None = None,
) -> list[Source]:
    """Where agent files are looked for, highest first: the workspace, Claude Code's `.claude/agents` (compat), the
    user, then (when given) the plugins' directories and the built-in agents."""
    sources = [workspace_source(root, "agents")]
    if compat:
        sources.append(Source("compat:.claude/agents", "compat", RANK_COMPAT_CLAUDE, root / ".claude" / "agents"))
    sources.append(user_source(user_dir, "agents"))
    sources.extend(plugins)
    if builtin_dir is not None:
        sources.append(builtin_source(builtin_dir))
    return sources


def skill_sources(
    root: Path,
    user_dir: Path,
    *,
    compat: bool,
    plugins: Sequence[Source] = (),
    builtin_dir: Path | None = None,
) -> list[Source]:
    """Where skill folders are looked for, highest first: the workspace, `.claude/skills` and `.agents/skills`
    (compat), the user, then (when given) the plugins' directories and the built-in skills."""
    sources = [workspace_source(root, "skills")]
    if compat:
        sources.append(Source("compat:.claude/skills", "compat", RANK_COMPAT_CLAUDE, root / ".claude" / "skills"))
        sources.append(Source("compat:.agents/skills", "compat", RANK_COMPAT_AGENTS, root / ".agents" / "skills"))
    sources.append(user_source(user_dir, "skills"))
    sources.extend(plugins)
    if builtin_dir is not None:
        sources.append(builtin_source(builtin_dir))
    return sources


def action_sources(root: Path, user_dir: Path) -> list[Source]:
    return [workspace_source(root, "actions"), user_source(user_dir, "actions")]


def command_sources(root: Path, user_dir: Path, *, compat: bool, plugins: Sequence[Source] = ()) -> list[Source]:
    """Custom slash commands (Claude Code's `commands/**/*.md`): below the actions of the same level, so an action
    of a name shadows a command of it."""
    sources = [Source("workspace:commands", "workspace", RANK_WORKSPACE + 500, root / WORKSPACE_DIR / "commands")]
    if compat:
        sources.append(Source("compat:.claude/commands", "compat", RANK_COMPAT_CLAUDE, root / ".claude" / "commands"))
    sources.append(Source("user:commands", "user", RANK_USER + 500, user_dir / "commands"))
    sources.extend(plugins)
    return sources

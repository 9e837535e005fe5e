"""Claude Code plugins and marketplaces: install, list, enable/disable, uninstall, and what an enabled plugin adds.

A Claude Code plugin is a folder: `.claude-plugin/plugin.json` (its name, version, and optional extra component
paths), `commands/`, `agents/`, `skills/`, `hooks/hooks.json`, `.mcp.json`, `output-styles/` and `bin/`. A
marketplace is a folder (or git repository) with `.claude-plugin/marketplace.json` listing plugins and where each one
is. BearAgent keeps what the user installed under `<user config dir>/claude-plugins/`:

- `installed.json`: the installed plugins (name, marketplace, source, version, enabled) and the known marketplaces;
- `plugins/<name>/`: a copy of each installed plugin (a git source is cloned, a folder copied);
- `marketplaces/<name>/`: a clone of each marketplace added from git (one added from a folder is read in place);
- `data/<name>/`: the plugin's `${CLAUDE_PLUGIN_DATA}`, kept across updates, removed by `uninstall`.

A plugin the user installed is trusted like the user's own config. A plugin a workspace brings (its
`.claude/settings.json` names a marketplace folder inside the workspace in `extraKnownMarketplaces` and enables
one of its plugins in `enabledPlugins`) is loaded in place at the workspace level: its hooks and MCP servers are on
the trust surface (`bearagent trust`), as every workspace item is.

Why it is over 400 lines: installing, the marketplace index and what an enabled plugin adds share one
file layout and one set of bounds (files, bytes, depth, no symlink); split, each part would re-read or re-check it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from bearagent.config.workspace import CLAUDE_PLUGINS_DIR
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import Level

STORE_DIR = CLAUDE_PLUGINS_DIR
STATE_FILE = "installed.json"
MANIFEST = ".claude-plugin/plugin.json"
MARKETPLACE_MANIFEST = ".claude-plugin/marketplace.json"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
MAX_FILES = 5_000
MAX_TOTAL_BYTES = 100 * 1024 * 1024
MAX_JSON_BYTES = 1024 * 1024
GIT_TIMEOUT_S = 300.0
_SKIP = frozenset({".git", "node_modules", "__pycache__"})
_GIT_PREFIXES = ("https://", "http://", "file://", "ssh://", "git://", "git@")


class PluginError(Exception):
    """A plugin or marketplace that cannot be installed or read: `message` says what, `fix` what to do."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}" + (f" ({self.fix})" if self.fix else "")


# ---- reading a plugin folder ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PluginManifest:
    """A plugin folder as read from disk: its name and the directories and files of each component kind."""

    name: str
    root: Path
    version: str | None = None
    description: str | None = None
    commands: tuple[Path, ...] = ()
    agents: tuple[Path, ...] = ()
    skills: tuple[Path, ...] = ()
    output_styles: tuple[Path, ...] = ()
    hooks_files: tuple[Path, ...] = ()
    inline_hooks: Mapping[str, object] | None = None
    mcp_files: tuple[Path, ...] = ()
    inline_mcp: Mapping[str, object] | None = None

    @property
    def bin_dir(self) -> Path | None:
        b = self.root / "bin"
        return b if b.is_dir() else None


def read_json_file(path: Path, what: str) -> object:
    """The JSON value of `path` (at most 1 MiB), or PluginError naming the file, line and fix."""
    try:
        if path.is_symlink() or not path.is_file():
            raise PluginError(f"{what} {path} is not a regular file", "replace it with a plain JSON file")
        if path.stat().st_size > MAX_JSON_BYTES:
            raise PluginError(f"{what} {path} is larger than {MAX_JSON_BYTES:,} bytes", "shorten it")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PluginError(f"cannot read {what} {path}: {exc.strerror or exc}", "check the file's permissions") from exc
    except UnicodeDecodeError as exc:
        raise PluginError(f"{what} {path} is not UTF-8 text", "save it as UTF-8") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PluginError(
            f"invalid JSON in {path} line {exc.lineno} column {exc.colno}: {exc.msg}", "fix the JSON syntax there"
        ) from exc


def _inside(root: Path, rel: str, field_name: str, manifest: Path) -> Path:
    if not rel.startswith("./") and not rel.startswith("../") and rel.startswith("/"):
        raise PluginError(f"{manifest}: {field_name} path {rel!r} is absolute", 'write it relative, e.g. "./extra"')
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise PluginError(
            f"{manifest}: {field_name} path {rel!r} leaves the plugin folder", "keep every path inside the plugin"
        )
    return target


def _paths(data: Mapping[str, object], key: str, root: Path, manifest: Path) -> list[Path]:
    value = data.get(key)
    if value is None:
        return []
    items: list[object] = list(cast(list[object], value)) if isinstance(value, list) else [value]
    out: list[Path] = []
    for item in items:
        if not isinstance(item, str):
            raise PluginError(f"{manifest}: {key} must be a path or a list of paths", f'write "{key}": "./{key}"')
        out.append(_inside(root, item, key, manifest))
    return out


def read_plugin(root: Path) -> PluginManifest:
    """Read a plugin folder. `.claude-plugin/plugin.json` is optional (the folder's name is the plugin's then), as
    in Claude Code; custom component paths in it add to the default folders."""
    root = root.resolve()
    if not root.is_dir():
        raise PluginError(f"{root} is not a folder", "give the plugin's folder (the one holding .claude-plugin/)")
    manifest = root / MANIFEST
    data: dict[str, object] = {}
    if manifest.exists():
        raw = read_json_file(manifest, "plugin manifest")
        if not isinstance(raw, dict):
            raise PluginError(f"{manifest} must be a JSON object", 'write {"name": "my-plugin"}')
        data = cast(dict[str, object], raw)
    elif not any((root / d).exists() for d in ("commands", "agents", "skills", "hooks", ".mcp.json")):
        raise PluginError(
            f"{root} is not a Claude Code plugin: no {MANIFEST} and none of commands/, agents/, skills/, hooks/, .mcp.json",
            "give the plugin's folder, or add .claude-plugin/plugin.json",
        )
    name = data.get("name", root.name)
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PluginError(
            f"{manifest}: plugin name {name!r} must be lowercase letters, digits, '-', '_' or '.' (at most 64)",
            'set "name" in plugin.json, e.g. "code-review"',
        )
    version = data.get("version")
    description = data.get("description")

    def within(p: Path) -> Path:
        if p.is_symlink() and not p.resolve().is_relative_to(root):
            raise PluginError(
                f"{p} is a symlink out of the plugin folder ({p.resolve()})",
                "replace it with a copy of what it points to, inside the plugin",
            )
        return p

    def defaults(sub: str) -> list[Path]:
        d = within(root / sub)
        return [d] if d.is_dir() else []

    def component(sub: str, key: str) -> tuple[Path, ...]:
        """The default folder, then the manifest's paths for `key`; a path naming the default folder again (or
        something inside a folder already listed) is dropped, so nothing is loaded twice (Claude Code's
        plugin.json often names `./commands` beside the default `commands/`)."""
        out: list[Path] = []
        for path in (*defaults(sub), *_paths(data, key, root, manifest)):
            resolved = path.resolve()
            if not any(resolved == seen or resolved.is_relative_to(seen) for seen in out):
                out.append(resolved)
        return tuple(out)

    hooks_files: list[Path] = []
    inline_hooks: Mapping[str, object] | None = None
    default_hooks = within(within(root / "hooks") / "hooks.json")
    if default_hooks.is_file():
        hooks_files.append(default_hooks)
    hooks_value = data.get("hooks")
    if isinstance(hooks_value, dict):
        inline_hooks = cast(dict[str, object], hooks_value)
    elif hooks_value is not None:
        hooks_files.extend(p for p in _paths(data, "hooks", root, manifest) if p not in hooks_files)
    mcp_files: list[Path] = [root / ".mcp.json"] if within(root / ".mcp.json").is_file() else []
    inline_mcp: Mapping[str, object] | None = None
    mcp_value = data.get("mcpServers")
    if isinstance(mcp_value, dict):
        inline_mcp = cast(dict[str, object], mcp_value)
    elif mcp_value is not None:
        mcp_files.extend(p for p in _paths(data, "mcpServers", root, manifest) if p not in mcp_files)
    return PluginManifest(
        name=name,
        root=root,
        version=version if isinstance(version, str) else None,
        description=description if isinstance(description, str) else None,
        commands=component("commands", "commands"),
        agents=component("agents", "agents"),
        skills=component("skills", "skills"),
        output_styles=component("output-styles", "outputStyles"),
        hooks_files=tuple(hooks_files),
        inline_hooks=inline_hooks,
        mcp_files=tuple(mcp_files),
        inline_mcp=inline_mcp,
    )


def substitute(value: object, root: Path, data_dir: Path) -> object:
    """Every string in `value` with `${CLAUDE_PLUGIN_ROOT}` / `${CLAUDE_PLUGIN_DATA}` (and the `$VAR` forms)
    replaced by the plugin's folder and data folder."""
    if isinstance(value, str):
        out = value
        for var, path in (("CLAUDE_PLUGIN_ROOT", root), ("CLAUDE_PLUGIN_DATA", data_dir)):
            out = out.replace("${" + var + "}", str(path))
            out = re.sub(r"\$" + var + r"(?![A-Za-z0-9_])", lambda _m, p=str(path): p, out)
        return out
    if isinstance(value, list):
        return [substitute(v, root, data_dir) for v in cast(list[object], value)]
    if isinstance(value, dict):
        return {k: substitute(v, root, data_dir) for k, v in cast(dict[str, object], value).items()}
    return value


def plugin_hooks(manifest: PluginManifest, data_dir: Path) -> list[tuple[Path, dict[str, object]]]:
    """`(file, {event: groups})` of each hooks source of the plugin, variables substituted. Claude Code's
    hooks.json wraps the events in `{"hooks": {...}}`; a bare `{event: ...}` object is accepted too."""
    out: list[tuple[Path, dict[str, object]]] = []
    raw_sources: list[tuple[Path, object]] = [(f, read_json_file(f, "plugin hooks file")) for f in manifest.hooks_files]
    if manifest.inline_hooks is not None:
        raw_sources.append((manifest.root / MANIFEST, dict(manifest.inline_hooks)))
    for path, raw in raw_sources:
        if not isinstance(raw, dict):
            raise PluginError(f"{path} must be a JSON object", 'write {"hooks": {"PreToolUse": [...]}}')
        obj = cast(dict[str, object], raw)
        inner = obj.get("hooks", obj) if "hooks" in obj else obj
        if not isinstance(inner, dict):
            raise PluginError(f"{path}: hooks must be an object of events", 'write {"hooks": {"PreToolUse": [...]}}')
        events = {k: v for k, v in cast(dict[str, object], inner).items() if k != "description"}
        env_prefix = f"CLAUDE_PLUGIN_ROOT={_sh(manifest.root)} CLAUDE_PLUGIN_DATA={_sh(data_dir)} "
        out.append((path, cast(dict[str, object], _with_env(substitute(events, manifest.root, data_dir), env_prefix))))
    return out


def _sh(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def _with_env(events: object, prefix: str) -> object:
    """A shell-form command handler gets `CLAUDE_PLUGIN_ROOT=... CLAUDE_PLUGIN_DATA=...` in front, so a script that
    reads the variables from its environment finds them (exec-form handlers had them substituted)."""
    if not isinstance(events, dict):
        return events
    out: dict[str, object] = {}
    for event, groups in cast(dict[str, object], events).items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        new_groups: list[object] = []
        for group in cast(list[object], groups):
            if isinstance(group, dict) and isinstance(cast(dict[str, object], group).get("hooks"), list):
                g = dict(cast(dict[str, object], group))
                handlers: list[object] = []
                for h in cast(list[object], g["hooks"]):
                    if isinstance(h, dict):
                        hd = dict(cast(dict[str, object], h))
                        cmd = hd.get("command")
                        if hd.get("type", "command") == "command" and isinstance(cmd, str) and "args" not in hd:
                            hd["command"] = prefix + cmd
                        handlers.append(hd)
                    else:
                        handlers.append(h)
                g["hooks"] = handlers
                new_groups.append(g)
            else:
                new_groups.append(cast(object, group))
        out[event] = new_groups
    return out


def plugin_mcp_servers(manifest: PluginManifest, data_dir: Path) -> list[tuple[Path, dict[str, object]]]:
    """`(file, {server: entry})` of each MCP source of the plugin (`.mcp.json`, `mcpServers` in plugin.json),
    variables substituted; a server's environment gets `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA`."""
    out: list[tuple[Path, dict[str, object]]] = []
    raw_sources: list[tuple[Path, object]] = [(f, read_json_file(f, "plugin MCP file")) for f in manifest.mcp_files]
    if manifest.inline_mcp is not None:
        raw_sources.append((manifest.root / MANIFEST, {"mcpServers": dict(manifest.inline_mcp)}))
    for path, raw in raw_sources:
        obj = cast(dict[str, object], raw) if isinstance(raw, dict) else None
        servers: object = obj.get("mcpServers", obj) if obj is not None else None
        if not isinstance(servers, dict):
            raise PluginError(f"{path} must be an object with `mcpServers`", 'write {"mcpServers": {"name": {...}}}')
        entries: dict[str, object] = {}
        for name, entry in cast(dict[str, object], substitute(cast(object, servers), manifest.root, data_dir)).items():
            if isinstance(entry, dict) and "url" not in entry:
                e = dict(cast(dict[str, object], entry))
                env = e.get("env")
                merged: dict[str, object] = dict(cast(dict[str, object], env)) if isinstance(env, dict) else {}
                merged.setdefault("CLAUDE_PLUGIN_ROOT", str(manifest.root))
                merged.setdefault("CLAUDE_PLUGIN_DATA", str(data_dir))
                e["env"] = merged
                entries[name] = e
            else:
                entries[name] = entry
        out.append((path, entries))
    return out


# ---- the user's store ----------------------------------------------------------------------------------------


@dataclass
class InstalledPlugin:
    name: str
    path: str
    source: str
    marketplace: str | None = None
    version: str | None = None
    enabled: bool = True
    installed_at: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}@{self.marketplace}" if self.marketplace else self.name


@dataclass
class Marketplace:
    name: str
    source: str
    path: str
    """Absolute for a folder added in place; relative to the store for a clone."""


@dataclass
class PluginStore:
    """`<user config dir>/claude-plugins/`: what is installed and which marketplaces are known."""

    root: Path
    plugins: dict[str, InstalledPlugin] = field(default_factory=lambda: {})
    marketplaces: dict[str, Marketplace] = field(default_factory=lambda: {})

    @classmethod
    def open(cls, user_dir: Path) -> PluginStore:
        root = user_dir / STORE_DIR
        store = cls(root)
        state = root / STATE_FILE
        if not state.exists():
            return store
        raw = read_json_file(state, "plugin state file")
        if not isinstance(raw, dict):
            raise PluginError(f"{state} is not a JSON object", f"remove {state} and install the plugins again")
        data = cast(dict[str, object], raw)
        try:
            for name, p in cast(dict[str, dict[str, object]], data.get("plugins", {})).items():
                store.plugins[name] = InstalledPlugin(
                    name=name,
                    path=str(p["path"]),
                    source=str(p.get("source", "")),
                    marketplace=cast(str | None, p.get("marketplace")),
                    version=cast(str | None, p.get("version")),
                    enabled=bool(p.get("enabled", True)),
                    installed_at=str(p.get("installed_at", "")),
                )
            for name, m in cast(dict[str, dict[str, object]], data.get("marketplaces", {})).items():
                store.marketplaces[name] = Marketplace(name, str(m["source"]), str(m["path"]))
        except (KeyError, TypeError, AttributeError) as exc:
            raise PluginError(f"{state} is damaged ({exc!r})", f"remove {state} and install the plugins again") from exc
        return store

    def save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        data = {
            "version": 1,
            "plugins": {
                n: {
                    "path": p.path,
                    "source": p.source,
                    "marketplace": p.marketplace,
                    "version": p.version,
                    "enabled": p.enabled,
                    "installed_at": p.installed_at,
                }
                for n, p in sorted(self.plugins.items())
            },
            "marketplaces": {n: {"source": m.source, "path": m.path} for n, m in sorted(self.marketplaces.items())},
        }
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.root / STATE_FILE)

    def plugin_dir(self, p: InstalledPlugin) -> Path:
        return self.root / p.path

    def data_dir(self, name: str) -> Path:
        return self.root / "data" / name

    def marketplace_dir(self, m: Marketplace) -> Path:
        path = Path(m.path)
        return path if path.is_absolute() else self.root / path

    def find(self, ref: str) -> InstalledPlugin:
        name = ref.split("@", 1)[0]
        found = self.plugins.get(name)
        if found is None or ("@" in ref and found.id != ref):
            known = ", ".join(p.id for p in self.plugins.values()) or "none"
            raise PluginError(f"no installed Claude Code plugin {ref!r}", f"installed: {known}")
        return found


def is_git_url(text: str) -> bool:
    return text.startswith(_GIT_PREFIXES) or (text.endswith(".git") and not Path(text).expanduser().exists())


def _git_clone(url: str, dest: Path) -> None:
    """A shallow clone of `url` into `dest`, through the hardened git runner (`sandbox/git_run.py`: no system
    config, no hooks, no prompt, `ext::` URLs refused, bounded in time)."""
    from bearagent.sandbox.git_run import git_run

    done = git_run(
        ["clone", "--depth", "1", "--quiet", "--", url, str(dest)],
        cwd=dest.parent,
        timeout_s=GIT_TIMEOUT_S,
        max_bytes=64 * 1024,
        network=True,
        check_local_config=False,  # nothing is read before the clone exists (cwd is a fresh folder's parent)
    )
    if done.returncode == 127:
        raise PluginError("git is not installed, so a git URL cannot be cloned", "install git, or give a local folder")
    if done.returncode == 124:
        raise PluginError(f"git clone {url} took longer than {GIT_TIMEOUT_S:g}s", "check the URL and network")
    if not done.ok:
        raise PluginError(
            f"git clone {url} failed: {done.reason or f'exit {done.returncode}'}",
            "check the URL and that you can clone it with git",
        )


def _check_tree(src: Path) -> None:
    """Refuse a folder too big to copy, or one whose symlinks lead out of it."""
    count = 0
    total = 0
    base = src.resolve()
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in _SKIP]
        for entry in (*dirnames, *filenames):
            p = Path(dirpath) / entry
            if p.is_symlink() and not p.resolve().is_relative_to(base):
                raise PluginError(
                    f"{p} is a symlink out of the plugin folder ({p.resolve()})",
                    "replace it with a copy of the file, inside the plugin",
                )
        for f in filenames:
            count += 1
            if count > MAX_FILES:
                raise PluginError(f"{src} holds more than {MAX_FILES:,} files", "is it the right folder?")
            try:
                total += (Path(dirpath) / f).stat().st_size
            except OSError:
                continue
            if total > MAX_TOTAL_BYTES:
                raise PluginError(f"{src} is larger than {MAX_TOTAL_BYTES // 2**20} MiB", "is it the right folder?")


def _copy(src: Path, dest: Path) -> None:
    _check_tree(src)
    shutil.copytree(src, dest, symlinks=False, ignore=shutil.ignore_patterns(*_SKIP))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def install(user_dir: Path, spec: str, *, force: bool = False) -> InstalledPlugin:
    """Install a plugin from a folder, a git URL, or `name@marketplace` (a marketplace added before)."""
    store = PluginStore.open(user_dir)
    marketplace: str | None = None
    with tempfile.TemporaryDirectory(prefix="bearagent-plugin-") as tmp:
        if "@" in spec and not is_git_url(spec) and not Path(spec).expanduser().exists():
            name, marketplace = spec.split("@", 1)
            src, source = _from_marketplace(store, name, marketplace, Path(tmp))
        elif is_git_url(spec):
            src = Path(tmp) / "clone"
            _git_clone(spec, src)
            source = spec
        else:
            src = Path(spec).expanduser().resolve()
            source = str(src)
        manifest = read_plugin(src)
        # a marketplace's entry name may differ from the folder's plugin.json name (an older entry named
        # "Explanatory Output Style"): the plugin.json name is the one commands are namespaced with
        existing = store.plugins.get(manifest.name)
        if existing is not None and not force:
            raise PluginError(
                f"a plugin named {manifest.name!r} is installed already (from {existing.source})",
                "uninstall it first, or pass --force to replace it",
            )
        dest = store.root / "plugins" / manifest.name
        staging = store.root / "plugins" / f".{manifest.name}.new"
        if staging.exists():
            shutil.rmtree(staging)
        staging.parent.mkdir(parents=True, exist_ok=True)
        _copy(src, staging)
        read_plugin(staging)  # the copy reads as the source did
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    entry = InstalledPlugin(
        name=manifest.name,
        path=f"plugins/{manifest.name}",
        source=source,
        marketplace=marketplace,
        version=manifest.version,
        enabled=True,
        installed_at=_now(),
    )
    store.data_dir(manifest.name).mkdir(parents=True, exist_ok=True)
    store.plugins[manifest.name] = entry
    store.save()
    return entry


def read_marketplace(root: Path) -> tuple[str, list[dict[str, object]], str]:
    """`(name, plugin entries, pluginRoot)` of a marketplace folder."""
    path = root / MARKETPLACE_MANIFEST
    if not path.exists():
        raise PluginError(f"{root} is not a marketplace: no {MARKETPLACE_MANIFEST}", "give the marketplace's folder")
    raw = read_json_file(path, "marketplace manifest")
    if not isinstance(raw, dict):
        raise PluginError(f"{path} must be a JSON object", 'write {"name": "...", "plugins": [...]}')
    data = cast(dict[str, object], raw)
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PluginError(f"{path}: marketplace name {name!r} is missing or not kebab-case", 'set "name"')
    plugins = data.get("plugins", [])
    if not isinstance(plugins, list):
        raise PluginError(f"{path}: plugins must be a list", 'write "plugins": [{"name": ..., "source": ...}]')
    entries = [cast(dict[str, object], p) for p in cast(list[object], plugins) if isinstance(p, dict)]
    metadata = data.get("metadata")
    plugin_root = ""
    if isinstance(metadata, dict):
        pr = cast(dict[str, object], metadata).get("pluginRoot")
        plugin_root = pr if isinstance(pr, str) else ""
    return name, entries, plugin_root


def _from_marketplace(store: PluginStore, name: str, marketplace: str, tmp: Path) -> tuple[Path, str]:
    m = store.marketplaces.get(marketplace)
    if m is None:
        known = ", ".join(store.marketplaces) or "none"
        raise PluginError(
            f"no marketplace named {marketplace!r}",
            f"add it with `bearagent plugins marketplace add DIR|GIT-URL` (known: {known})",
        )
    mroot = store.marketplace_dir(m)
    _, entries, plugin_root = read_marketplace(mroot)
    entry = next((e for e in entries if e.get("name") == name), None)
    if entry is None:
        listed = ", ".join(str(e.get("name")) for e in entries) or "none"
        raise PluginError(f"marketplace {marketplace!r} has no plugin {name!r}", f"it lists: {listed}")
    source = entry.get("source")
    if isinstance(source, str):
        base = mroot / plugin_root if plugin_root and not source.startswith("./") else mroot
        target = (base / source).resolve()
        if not target.is_relative_to(mroot.resolve()):
            raise PluginError(f"marketplace {marketplace!r}: {name}'s source {source!r} leaves the marketplace")
        return target, f"{name}@{marketplace}"
    if isinstance(source, dict):
        s = cast(dict[str, object], source)
        kind = s.get("source")
        url: str | None = None
        if kind == "github" and isinstance(s.get("repo"), str):
            url = f"https://github.com/{s['repo']}.git"
        elif kind in ("url", "git") and isinstance(s.get("url"), str):
            url = cast(str, s["url"])
        if url is not None:
            dest = tmp / "clone"
            _git_clone(url, dest)
            sub = s.get("path")
            if isinstance(sub, str) and sub:
                dest = (dest / sub).resolve()
            return dest, f"{name}@{marketplace}"
    raise PluginError(
        f"marketplace {marketplace!r}: {name}'s source {source!r} is not understood",
        'use a relative path ("./plugins/x"), {"source": "github", "repo": "o/r"} or {"source": "url", "url": "..."}',
    )


def add_marketplace(user_dir: Path, spec: str) -> Marketplace:
    store = PluginStore.open(user_dir)
    if is_git_url(spec):
        with tempfile.TemporaryDirectory(prefix="bearagent-market-") as tmp:
            clone = Path(tmp) / "clone"
            _git_clone(spec, clone)
            name, _, _ = read_marketplace(clone)
            _refuse_known(store, name)
            dest = store.root / "marketplaces" / name
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(clone), dest)
        m = Marketplace(name, spec, f"marketplaces/{name}")
    else:
        root = Path(spec).expanduser().resolve()
        name, _, _ = read_marketplace(root)
        _refuse_known(store, name)
        m = Marketplace(name, str(root), str(root))
    store.marketplaces[name] = m
    store.save()
    return m


def _refuse_known(store: PluginStore, name: str) -> None:
    if name in store.marketplaces:
        raise PluginError(
            f"a marketplace named {name!r} is known already (from {store.marketplaces[name].source})",
            f"remove it first: bearagent plugins marketplace remove {name}",
        )


def update_marketplace(user_dir: Path, name: str) -> Marketplace:
    """Fetch a git marketplace again (a fresh clone replaces the old one only once it reads); a folder one is read
    in place, so there is nothing to fetch."""
    store = PluginStore.open(user_dir)
    m = store.marketplaces.get(name)
    if m is None:
        raise PluginError(f"no marketplace named {name!r}", f"known: {', '.join(store.marketplaces) or 'none'}")
    if Path(m.path).is_absolute():
        read_marketplace(Path(m.path))
        return m
    with tempfile.TemporaryDirectory(prefix="bearagent-market-") as tmp:
        clone = Path(tmp) / "clone"
        _git_clone(m.source, clone)
        new_name, _, _ = read_marketplace(clone)
        if new_name != name:
            raise PluginError(
                f"the marketplace at {m.source} is now named {new_name!r}, not {name!r}",
                f"remove it (bearagent plugins marketplace remove {name}) and add it again",
            )
        dest = store.marketplace_dir(m)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.move(str(clone), dest)
    return m


def update(user_dir: Path, ref: str) -> InstalledPlugin:
    """Install a plugin again from where it came from (its folder, git URL, or marketplace, fetched again first),
    keeping its enabled state and its data folder."""
    store = PluginStore.open(user_dir)
    p = store.find(ref)
    if p.marketplace is not None:
        update_marketplace(user_dir, p.marketplace)
        spec = f"{p.name}@{p.marketplace}"
    else:
        spec = p.source
    entry = install(user_dir, spec, force=True)
    if not p.enabled:
        entry = set_enabled(user_dir, entry.name, False)
    return entry


def remove_marketplace(user_dir: Path, name: str) -> Marketplace:
    store = PluginStore.open(user_dir)
    m = store.marketplaces.pop(name, None)
    if m is None:
        raise PluginError(f"no marketplace named {name!r}", f"known: {', '.join(store.marketplaces) or 'none'}")
    if not Path(m.path).is_absolute():
        shutil.rmtree(store.root / m.path, ignore_errors=True)
    store.save()
    return m


def uninstall(user_dir: Path, ref: str, *, keep_data: bool = False) -> InstalledPlugin:
    store = PluginStore.open(user_dir)
    p = store.find(ref)
    shutil.rmtree(store.plugin_dir(p), ignore_errors=True)
    if not keep_data:
        shutil.rmtree(store.data_dir(p.name), ignore_errors=True)
    del store.plugins[p.name]
    store.save()
    return p


def set_enabled(user_dir: Path, ref: str, enabled: bool) -> InstalledPlugin:
    store = PluginStore.open(user_dir)
    p = store.find(ref)
    p.enabled = enabled
    store.save()
    return p


# ---- what is active in a workspace ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ActivePlugin:
    """An enabled plugin as a workspace loads it: `level` "platform" when the user installed it (trusted),
    "workspace" when the workspace brought it (its hooks and MCP servers are on the trust surface)."""

    manifest: PluginManifest
    data_dir: Path
    level: Level
    id: str


def enabled_plugins_setting(settings: Sequence[Mapping[str, object]]) -> dict[str, bool]:
    """`enabledPlugins` of Claude Code settings objects, lowest first (a later file overrides)."""
    out: dict[str, bool] = {}
    for data in settings:
        value = data.get("enabledPlugins")
        if isinstance(value, dict):
            for k, v in cast(dict[str, object], value).items():
                if isinstance(v, bool):
                    out[k] = v
    return out


def _setting_for(p_id: str, name: str, setting: Mapping[str, bool]) -> bool | None:
    if p_id in setting:
        return setting[p_id]
    if name in setting:
        return setting[name]
    return None


def active_plugins(
    user_dir: Path,
    root: Path,
    settings: Sequence[Mapping[str, object]],
    diagnostics: list[Diagnostic],
) -> list[ActivePlugin]:
    """The plugins enabled for the workspace at `root`: each installed plugin that is enabled (the workspace's
    `enabledPlugins` can turn one off or on), then the plugins of workspace marketplaces (`extraKnownMarketplaces`
    naming a folder inside the workspace) that `enabledPlugins` turns on. Problems are diagnostics, never raised."""
    setting = enabled_plugins_setting(settings)
    out: list[ActivePlugin] = []
    try:
        store = PluginStore.open(user_dir)
    except PluginError as exc:
        diagnostics.append(_diag("plugin.state", exc, str(user_dir / STORE_DIR / STATE_FILE)))
        return out
    for p in sorted(store.plugins.values(), key=lambda p: p.name):
        wanted = _setting_for(p.id, p.name, setting)
        if not (p.enabled if wanted is None else wanted):
            continue
        try:
            manifest = read_plugin(store.plugin_dir(p))
        except PluginError as exc:
            diagnostics.append(_diag("plugin.invalid", exc, str(store.plugin_dir(p)), subject=p.name))
            continue
        out.append(ActivePlugin(manifest, store.data_dir(p.name), "platform", p.id))
    taken = {a.manifest.name for a in out}
    for ws_plugin in _workspace_plugins(root, settings, setting, diagnostics):
        if ws_plugin.manifest.name in taken:
            diagnostics.append(
                Diagnostic(
                    severity="warning",
                    code="plugin.shadowed",
                    message=f"the workspace's plugin {ws_plugin.id!r} has the name of an installed plugin; the installed one is used",
                    source=str(ws_plugin.manifest.root),
                    subject=ws_plugin.manifest.name,
                    fix="uninstall or disable the installed plugin to use the workspace's",
                )
            )
            continue
        out.append(ws_plugin)
    return out


def _workspace_plugins(
    root: Path,
    settings: Sequence[Mapping[str, object]],
    setting: Mapping[str, bool],
    diagnostics: list[Diagnostic],
) -> Iterator[ActivePlugin]:
    markets: dict[str, Path] = {}
    for data in settings:
        extra = data.get("extraKnownMarketplaces")
        if not isinstance(extra, dict):
            continue
        for name, entry in cast(dict[str, object], extra).items():
            src = cast(dict[str, object], entry).get("source") if isinstance(entry, dict) else None
            if isinstance(src, dict):
                s = cast(dict[str, object], src)
                if s.get("source") == "directory" and isinstance(s.get("path"), str):
                    target = (root / cast(str, s["path"])).resolve()
                    if target.is_relative_to(root.resolve()):
                        markets[name] = target
                    else:
                        diagnostics.append(
                            Diagnostic(
                                severity="warning",
                                code="plugin.marketplace_outside",
                                message=f"extraKnownMarketplaces.{name} names a folder outside the workspace; it is not loaded",
                                source=str(root / ".claude" / "settings.json"),
                                field=f"extraKnownMarketplaces.{name}",
                                fix="add it yourself: bearagent plugins marketplace add DIR",
                            )
                        )
    for ref, on in sorted(setting.items()):
        if not on or "@" not in ref:
            continue
        name, market = ref.split("@", 1)
        mroot = markets.get(market)
        if mroot is None:
            continue
        try:
            _, entries, plugin_root = read_marketplace(mroot)
            entry = next((e for e in entries if e.get("name") == name), None)
            source = entry.get("source") if entry is not None else None
            if not isinstance(source, str):
                raise PluginError(
                    f"workspace marketplace {market!r} has no plugin {name!r} in a folder of its own",
                    "fix enabledPlugins or the marketplace's plugins list",
                )
            base = mroot / plugin_root if plugin_root and not source.startswith("./") else mroot
            target = (base / source).resolve()
            if not target.is_relative_to(root.resolve()):
                raise PluginError(f"workspace plugin {ref!r} lies outside the workspace")
            manifest = read_plugin(target)
        except PluginError as exc:
            diagnostics.append(_diag("plugin.invalid", exc, str(mroot), subject=ref))
            continue
        data_dir = root / ".bearagent" / "plugin-data" / manifest.name
        yield ActivePlugin(manifest, data_dir, "workspace", ref)


def _diag(code: str, exc: PluginError, source: str, subject: str | None = None) -> Diagnostic:
    return Diagnostic(
        severity="error",
        code=code,
        message=exc.message,
        source=source,
        subject=subject,
        fix=exc.fix or "reinstall the plugin",
    )

"""`bearagent plugins list`, `plugins install`, `plugins uninstall` (Python plugins into BearAgent's own environment:
`bearagent.plugins.install`; Claude Code plugins and marketplaces into the user config dir:
`bearagent.plugins.claude_plugins`), `plugins enable|disable` and `plugins marketplace add|list|remove`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from bearagent.cli._config_common import diag_json, emit_json, json_option, print_diagnostics, print_table
from bearagent.cli._groups import ListGroup


@click.group("plugins", cls=ListGroup)
def plugins() -> None:
    """Plugins: Python packages (entry-point group `bearagent`) installed in BearAgent's own environment, and Claude
    Code plugins (a folder with .claude-plugin/plugin.json, a git URL, or NAME@MARKETPLACE) installed in the user
    config dir."""


@plugins.command("list")
@click.option("--all", "show_all", is_flag=True, help="Also show the built-in plugin (built-in providers and tools).")
@json_option
def list_plugins(show_all: bool, as_json: bool) -> None:
    """Each plugin, its version, whether it loaded, and what it registered. BEARAGENT_LOAD_PLUGINS narrows the set."""
    from bearagent.plugins.manager import LOAD_ENV, PluginHost

    host = PluginHost.from_entry_points(dict(os.environ))
    host.contributions()
    infos = sorted(host.plugins.values(), key=lambda p: p.name)
    diagnostics = list(host.diagnostics)
    if show_all:
        host.tools()  # the built-in tools are registered on first use
        infos.insert(0, host.builtin)
        diagnostics.extend(host.builtin_diagnostics)
    claude_rows, claude_json, claude_problem = _claude_listing()
    if as_json:
        emit_json(
            {
                "claude_plugins": claude_json,
                "filter": os.environ.get(LOAD_ENV),
                "plugins": [
                    {
                        "name": p.name,
                        "version": p.version,
                        "distribution": p.distribution,
                        "status": p.status,
                        "error": p.error,
                        "registered": p.registered,
                    }
                    for p in infos
                ],
                "diagnostics": [diag_json(d) for d in diagnostics],
            }
        )
        return
    if claude_rows:
        print_table(["CLAUDE CODE PLUGIN", "VERSION", "STATUS", "SOURCE"], claude_rows)
        click.echo("")
    if claude_problem:
        click.echo(f"error: {claude_problem}", err=True)
    if not infos:
        click.echo("no plugins installed" + (f" (or none selected by {LOAD_ENV})" if LOAD_ENV in os.environ else ""))
        return
    rows = [
        [
            p.name,
            p.version or "-",
            p.status,
            "; ".join(f"{kind}: {', '.join(items)}" for kind, items in sorted(p.registered.items()) if items)
            or (p.error or "-"),
        ]
        for p in infos
    ]
    print_table(["PLUGIN", "VERSION", "STATUS", "REGISTERED"], rows)
    print_diagnostics(diagnostics, heading="\nproblems:")


def _user_dir() -> Path:
    from bearagent.config.workspace import user_config_dir

    return user_config_dir(dict(os.environ))


def _claude_listing() -> tuple[list[list[str]], list[dict[str, object]], str | None]:
    """Table rows and JSON objects of the installed Claude Code plugins (and a problem reading the store)."""
    from bearagent.plugins.claude_plugins import PluginError, PluginStore

    try:
        store = PluginStore.open(_user_dir())
    except PluginError as exc:
        return [], [], str(exc)
    items = sorted(store.plugins.values(), key=lambda p: p.name)
    rows = [[p.id, p.version or "-", "enabled" if p.enabled else "disabled", p.source] for p in items]
    data: list[dict[str, object]] = [
        {
            "name": p.name,
            "id": p.id,
            "marketplace": p.marketplace,
            "version": p.version,
            "enabled": p.enabled,
            "source": p.source,
            "path": str(store.plugin_dir(p)),
        }
        for p in items
    ]
    return rows, data, None


def _fail(exc: Exception) -> NoReturn:
    from bearagent.plugins.claude_plugins import PluginError

    if isinstance(exc, PluginError):
        click.echo(f"error: {exc.message}", err=True)
        if exc.fix:
            click.echo(f"fix: {exc.fix}", err=True)
    else:
        click.echo(f"error: {exc}", err=True)
    sys.exit(2)


def _is_claude_spec(spec: str) -> bool:
    """A Claude Code plugin: a folder with .claude-plugin/ (and no Python packaging), a git URL, or
    NAME@MARKETPLACE of a known marketplace. Anything else is a Python package spec."""
    from bearagent.plugins.claude_plugins import MANIFEST, PluginError, PluginStore, is_git_url

    path = Path(spec).expanduser()
    if path.is_dir():
        python = (path / "pyproject.toml").exists() or (path / "setup.py").exists()
        return (path / MANIFEST).exists() and not python
    if spec.endswith((".whl", ".tar.gz", ".zip")):
        return False
    if is_git_url(spec):
        return True
    if "@" in spec:
        try:
            return spec.split("@", 1)[1] in PluginStore.open(_user_dir()).marketplaces
        except PluginError:
            return False
    return False


def _installed_plugins() -> dict[str, str | None]:
    """Entry-point name -> distribution name of every installed plugin (nothing is imported)."""
    from importlib.metadata import entry_points

    out: dict[str, str | None] = {}
    for ep in entry_points(group="bearagent"):
        dist = getattr(ep, "dist", None)
        out[ep.name] = getattr(dist, "name", None)
    return out


def _run_installer(argv: list[str], dry_run: bool) -> None:
    import shlex
    import subprocess

    click.echo(f"$ {shlex.join(argv)}", err=True)
    if dry_run:
        return
    if argv[1:3] == ["-m", "pip"] and argv[0] == sys.executable:
        import importlib.util

        if importlib.util.find_spec("pip") is None:
            click.echo("error: uv is not on PATH and BearAgent's environment has no pip", err=True)
            click.echo(
                f"fix: install uv (https://docs.astral.sh/uv/), or pip into it: {sys.executable} -m ensurepip", err=True
            )
            sys.exit(2)
    try:
        code = subprocess.run(argv, check=False).returncode
    except OSError as exc:
        click.echo(f"error: cannot run {argv[0]}: {exc.strerror or exc}", err=True)
        click.echo("fix: install uv (https://docs.astral.sh/uv/) or pip into BearAgent's environment", err=True)
        sys.exit(2)
    if code != 0:
        click.echo(f"error: the installer exited with {code}; nothing was changed by BearAgent", err=True)
        sys.exit(1)


@plugins.command("install")
@click.argument("packages", nargs=-1, required=True)
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade the packages if they are installed.")
@click.option("-e", "--editable", is_flag=True, help="Install local directories in editable mode.")
@click.option("--dry-run", is_flag=True, help="Print the installer command and do not run it.")
@click.option("--force", is_flag=True, help="Replace an installed Claude Code plugin of the same name.")
def install_plugins(packages: tuple[str, ...], upgrade: bool, editable: bool, dry_run: bool, force: bool) -> None:
    """Install plugin PACKAGES. A Claude Code plugin (a folder with .claude-plugin/plugin.json, a git URL, or
    NAME@MARKETPLACE of a marketplace added with `plugins marketplace add`) is copied into the user config dir and
    enabled. Anything else (names, paths such as ./my-plugin, wheels) is a Python plugin, installed into BearAgent's
    own environment however BearAgent was installed (uv tool, pipx, a virtualenv): `uv pip install --python
    <BearAgent's python>` when uv is on PATH, else `<BearAgent's python> -m pip install`."""
    from bearagent.plugins.claude_plugins import PluginError, install
    from bearagent.plugins.install import detect_environment, install_command

    claude = [p for p in packages if _is_claude_spec(p)]
    packages = tuple(p for p in packages if p not in claude)
    for spec in claude:
        if dry_run:
            click.echo(f"would install the Claude Code plugin {spec} into {_user_dir()}", err=True)
            continue
        try:
            entry = install(_user_dir(), spec, force=force)
        except (PluginError, OSError) as exc:
            _fail(exc)
        click.echo(f"installed Claude Code plugin {entry.id}" + (f" {entry.version}" if entry.version else ""))
    if not packages:
        return

    env = detect_environment()
    click.echo(f"installing into {env.describe()}", err=True)
    before = set(_installed_plugins())
    _run_installer(install_command(env, packages, upgrade=upgrade, editable=editable, cwd=Path.cwd()), dry_run)
    if dry_run:
        return
    new = sorted(set(_installed_plugins()) - before)
    click.echo(f"installed plugin{'s' if len(new) != 1 else ''}: {', '.join(new)}" if new else "done")
    if env.kind in ("uv-tool", "pipx"):
        tool = "uv tool upgrade" if env.kind == "uv-tool" else "pipx reinstall"
        click.echo(
            f"note: `{tool} bearagent` rebuilds this environment without plugins; run `bearagent plugins install` "
            "again afterwards"
            + (
                f" (or `uv tool install bearagent --with {' --with '.join(packages)}`)" if env.kind == "uv-tool" else ""
            ),
            err=True,
        )


@plugins.command("uninstall")
@click.argument("names", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Print the installer command and do not run it.")
@click.option("--keep-data", is_flag=True, help="Keep a Claude Code plugin's ${CLAUDE_PLUGIN_DATA} folder.")
def uninstall_plugins(names: tuple[str, ...], dry_run: bool, keep_data: bool) -> None:
    """Uninstall plugins: a Claude Code plugin by its name (or NAME@MARKETPLACE) from the user config dir (with its
    data folder unless --keep-data), a Python plugin by plugin name (`guard`) or distribution name
    (`bearagent-guard`) from BearAgent's own environment."""
    from bearagent.plugins.claude_plugins import PluginError, PluginStore, uninstall
    from bearagent.plugins.install import detect_environment, distribution_of, is_protected, uninstall_command

    try:
        installed_claude = PluginStore.open(_user_dir()).plugins
    except PluginError as exc:
        _fail(exc)
    claude = [n for n in names if n.split("@", 1)[0] in installed_claude]
    names = tuple(n for n in names if n not in claude)
    for name in claude:
        if dry_run:
            click.echo(f"would uninstall the Claude Code plugin {name}", err=True)
            continue
        try:
            gone_plugin = uninstall(_user_dir(), name, keep_data=keep_data)
        except (PluginError, OSError) as exc:
            _fail(exc)
        click.echo(f"uninstalled Claude Code plugin {gone_plugin.id}")
    if not names:
        return

    installed = _installed_plugins()
    dists = [distribution_of(name, installed) for name in names]
    refused = [d for d in dists if is_protected(d)]
    if refused:
        click.echo(f"error: {', '.join(refused)} is part of BearAgent, not a plugin; it was not uninstalled", err=True)
        click.echo("fix: name a plugin (`bearagent plugins list` shows them)", err=True)
        sys.exit(2)
    env = detect_environment()
    click.echo(f"uninstalling from {env.describe()}", err=True)
    _run_installer(uninstall_command(env, dists), dry_run)
    if not dry_run:
        gone = sorted(set(installed) - set(_installed_plugins()))
        click.echo(f"uninstalled plugin{'s' if len(gone) != 1 else ''}: {', '.join(gone)}" if gone else "done")


def _set_enabled(name: str, enabled: bool) -> None:
    from bearagent.plugins.claude_plugins import PluginError, set_enabled

    try:
        entry = set_enabled(_user_dir(), name, enabled)
    except (PluginError, OSError) as exc:
        _fail(exc)
    click.echo(f"{'enabled' if enabled else 'disabled'} Claude Code plugin {entry.id}")


@plugins.command("enable")
@click.argument("name")
def enable_plugin(name: str) -> None:
    """Enable an installed Claude Code plugin (NAME or NAME@MARKETPLACE) for every workspace; a workspace's
    `enabledPlugins` in .claude/settings.json still wins there."""
    _set_enabled(name, True)


@plugins.command("disable")
@click.argument("name")
def disable_plugin(name: str) -> None:
    """Disable an installed Claude Code plugin (NAME or NAME@MARKETPLACE) without uninstalling it; a workspace's
    `enabledPlugins` in .claude/settings.json still wins there."""
    _set_enabled(name, False)


@plugins.command("update")
@click.argument("name")
def update_plugin(name: str) -> None:
    """Install a Claude Code plugin again from where it came from (its folder, git URL, or marketplace, which is
    fetched again first), keeping whether it is enabled and its data folder."""
    from bearagent.plugins.claude_plugins import PluginError, update

    try:
        entry = update(_user_dir(), name)
    except (PluginError, OSError) as exc:
        _fail(exc)
    click.echo(f"updated Claude Code plugin {entry.id}" + (f" to {entry.version}" if entry.version else ""))


@plugins.group("marketplace", cls=ListGroup)
def marketplace() -> None:
    """Claude Code plugin marketplaces (.claude-plugin/marketplace.json): add, list, remove."""


@marketplace.command("add")
@click.argument("source")
def marketplace_add(source: str) -> None:
    """Add a marketplace from a folder (read in place) or a git URL (cloned into the user config dir); then
    `bearagent plugins install NAME@MARKETPLACE`."""
    from bearagent.plugins.claude_plugins import PluginError, add_marketplace, read_marketplace
    from bearagent.plugins.claude_plugins import PluginStore as Store

    try:
        m = add_marketplace(_user_dir(), source)
        _, entries, _ = read_marketplace(Store.open(_user_dir()).marketplace_dir(m))
    except (PluginError, OSError) as exc:
        _fail(exc)
    names = ", ".join(str(e.get("name")) for e in entries) or "none"
    click.echo(f"added marketplace {m.name} ({len(entries)} plugin{'s' if len(entries) != 1 else ''}: {names})")


@marketplace.command("list")
@json_option
def marketplace_list(as_json: bool) -> None:
    """The known marketplaces and where each one is."""
    from bearagent.plugins.claude_plugins import PluginError, PluginStore

    try:
        store = PluginStore.open(_user_dir())
    except PluginError as exc:
        _fail(exc)
    items = sorted(store.marketplaces.values(), key=lambda m: m.name)
    if as_json:
        emit_json(
            {
                "marketplaces": [
                    {"name": m.name, "source": m.source, "path": str(store.marketplace_dir(m))} for m in items
                ]
            }
        )
        return
    if not items:
        click.echo("no marketplaces (add one: bearagent plugins marketplace add DIR|GIT-URL)")
        return
    print_table(["MARKETPLACE", "SOURCE"], [[m.name, m.source] for m in items])


@marketplace.command("update")
@click.argument("names", nargs=-1)
def marketplace_update(names: tuple[str, ...]) -> None:
    """Fetch git marketplaces again (all of them without NAMES); a folder marketplace is read in place."""
    from bearagent.plugins.claude_plugins import PluginError, PluginStore, update_marketplace

    try:
        chosen = list(names) or sorted(PluginStore.open(_user_dir()).marketplaces)
        for name in chosen:
            update_marketplace(_user_dir(), name)
            click.echo(f"updated marketplace {name}")
    except (PluginError, OSError) as exc:
        _fail(exc)


@marketplace.command("remove")
@click.argument("name")
def marketplace_remove(name: str) -> None:
    """Forget a marketplace (its clone is deleted; plugins installed from it stay installed)."""
    from bearagent.plugins.claude_plugins import PluginError, remove_marketplace

    try:
        m = remove_marketplace(_user_dir(), name)
    except (PluginError, OSError) as exc:
        _fail(exc)
    click.echo(f"removed marketplace {m.name}")

"""`bearagent plugins list`, `plugins install`, `plugins uninstall` (into BearAgent's own environment:
`bearagent.plugins.install`)."""

from __future__ import annotations

import os

import click

from bearagent.cli._config_common import diag_json, emit_json, json_option, print_diagnostics, print_table
from bearagent.cli._groups import ListGroup


@click.group("plugins", cls=ListGroup)
def plugins() -> None:
    """Plugins (entry-point group `bearagent`): list them, install and uninstall them in BearAgent's own
    environment."""


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
    if as_json:
        emit_json(
            {
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
    import sys

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
def install_plugins(packages: tuple[str, ...], upgrade: bool, editable: bool, dry_run: bool) -> None:
    """Install plugin PACKAGES (names, paths such as ./my-plugin, wheels) into BearAgent's own environment, however
    BearAgent was installed (uv tool, pipx, a virtualenv): `uv pip install --python <BearAgent's python>` when uv is
    on PATH, else `<BearAgent's python> -m pip install`."""
    from pathlib import Path

    from bearagent.plugins.install import detect_environment, install_command

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
def uninstall_plugins(names: tuple[str, ...], dry_run: bool) -> None:
    """Uninstall plugins by plugin name (`guard`) or distribution name (`bearagent-guard`) from BearAgent's own
    environment."""
    import sys

    from bearagent.plugins.install import detect_environment, distribution_of, is_protected, uninstall_command

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

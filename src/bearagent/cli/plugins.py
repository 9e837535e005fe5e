"""`bearagent plugins list`."""

from __future__ import annotations

import os

import click

from bearagent.cli._config_common import diag_json, emit_json, json_option, print_diagnostics, print_table


@click.group("plugins")
def plugins() -> None:
    """Installed plugins (entry-point group `bearagent`)."""


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

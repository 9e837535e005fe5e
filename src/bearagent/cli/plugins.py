"""`bearagent plugins list`."""

from __future__ import annotations

import os

import click

from bearagent.cli._config_common import diag_json, emit_json, json_option, print_diagnostics, print_table


@click.group("plugins")
def plugins() -> None:
    """Installed plugins (entry-point group `bearagent`)."""


@plugins.command("list")
@json_option
def list_plugins(as_json: bool) -> None:
    """Each plugin, its version, whether it loaded, and what it registered. BEARAGENT_LOAD_PLUGINS narrows the set."""
    from bearagent.plugins.manager import LOAD_ENV, PluginHost

    host = PluginHost.from_entry_points(dict(os.environ))
    host.contributions()
    infos = sorted(host.plugins.values(), key=lambda p: p.name)
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
                "diagnostics": [diag_json(d) for d in host.diagnostics],
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
    print_diagnostics(host.diagnostics, heading="\nproblems:")

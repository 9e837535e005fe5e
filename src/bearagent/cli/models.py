"""`bearagent models list|show`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import (
    diag_json,
    emit_json,
    fail,
    json_option,
    load,
    print_diagnostics,
    print_fields,
    print_table,
    problems,
    workspace_option,
)
from bearagent.cli._groups import ListGroup

if TYPE_CHECKING:
    from bearagent.domain.specs import ModelEntry
    from bearagent.providers.model_ids import ServerModels


@click.group("models", cls=ListGroup)
def models() -> None:
    """List and inspect model entries (workspace/<name> and platform/<name>)."""


@models.command("list")
@workspace_option
@json_option
@click.option(
    "--remote",
    is_flag=True,
    help="Also ask the servers of the entries (the model in use first, at most 4) which models they list.",
)
def list_models(workspace: Path | None, as_json: bool, remote: bool) -> None:
    """Every model entry with its ref, provider and source; the default model is marked. With --remote, also the
    model ids each entry's server lists (Anthropic's /v1/models, an OpenAI or OpenAI-compatible /models)."""
    ws = load(workspace)
    registry = ws.models
    # the model in use: default_model, else the only configured entry (or the zero-config one beside its catalog)
    default = registry.get(ws.config.default_model) if ws.config.default_model else registry.only_entry()
    shown = problems(registry.diagnostics)
    bare = registry.bare_shadowed()  # platform ref -> the workspace ref its bare name resolves to
    hides = {w: p for p, w in bare.items()}
    servers = _server_listings(registry.all(), default, ws.env) if remote else []
    if as_json:
        emit_json(
            {
                "default_model": default.ref if default else None,
                **({"servers": [_server_json(s, default) for s in servers]} if remote else {}),
                "providers": list(registry.providers),
                "models": [
                    {
                        "ref": r.item.ref,
                        "provider": r.item.provider,
                        "api": r.item.api,
                        "model": r.item.model,
                        "source": r.source.id,
                        "path": r.path,
                        "default": default is not None and r.item.ref == default.ref,
                        "shadows": [{"source": c.source.id, "path": c.path} for c in r.shadows],
                        "bare_name_shadows": hides.get(r.item.ref),
                        "bare_name_resolves_to": bare.get(r.item.ref, r.item.ref),
                    }
                    for r in registry.entries()
                ],
                "diagnostics": [diag_json(d) for d in shown],
            }
        )
        return
    rows = [
        [
            r.item.ref + (" *" if default is not None and r.item.ref == default.ref else ""),
            r.item.provider,
            r.item.model or "-",
            r.source.id,
            ", ".join(
                [c.source.id for c in r.shadows]
                + ([f"{hides[r.item.ref]} (bare name)"] if r.item.ref in hides else [])
                + ([f"bare name is {bare[r.item.ref]}"] if r.item.ref in bare else [])
            )
            or "-",
        ]
        for r in registry.entries()
    ]
    print_table(["REF", "PROVIDER", "MODEL", "SOURCE", "SHADOWS"], rows)
    if default is not None:
        click.echo("\n* the model in use (default_model, else the only entry or the one from the environment)")
    for listing in servers:
        _print_server(listing, default)
    if remote and not servers:
        click.echo("\nno entry's server has a model listing (scripted and plugin providers do not list models)")
    print_diagnostics(shown, heading="\nproblems:")


MAX_SHOWN_IDS = 50
"""How many of a server's ids the table shows (`--json` has up to `MAX_LISTED_IDS`), then `and N more`."""


@dataclass(frozen=True, slots=True)
class _Listing:
    server: ServerModels
    refs: Mapping[str, tuple[str, ...]]
    """model id -> the refs of the entries that run it at this server"""


def _server_listings(entries: list[ModelEntry], default: ModelEntry | None, env: Mapping[str, str]) -> list[_Listing]:
    from bearagent.providers.model_ids import fetch_server_models, listed_endpoints, listing_endpoint

    ordered = ([default] if default is not None else []) + [
        e for e in entries if default is None or e.ref != default.ref
    ]
    endpoint_of = {e.ref: found[0].split("?", 1)[0] for e in entries if (found := listing_endpoint(e, env)) is not None}
    out: list[_Listing] = []
    for entry in listed_endpoints(ordered, env):
        server = fetch_server_models(entry, env)
        refs: dict[str, list[str]] = {}
        for other in entries:
            if other.model and endpoint_of.get(other.ref) == server.endpoint:
                refs.setdefault(other.model, []).append(other.ref)
        out.append(_Listing(server, {k: tuple(v) for k, v in refs.items()}))
    return out


def _server_json(listing: _Listing, default: ModelEntry | None) -> dict[str, object]:
    server = listing.server
    in_use = default.ref if default else None
    return {
        "endpoint": server.endpoint,
        "provider": server.provider,
        "error": server.error,
        "total": server.total,
        "models": [
            {"id": i, "entries": list(listing.refs.get(i, ())), "in_use": in_use in listing.refs.get(i, ())}
            for i in server.ids
        ],
    }


def _print_server(listing: _Listing, default: ModelEntry | None) -> None:
    from bearagent.cli.safe_text import visible

    server = listing.server
    click.echo(f"\nmodels listed by {visible(server.endpoint)} ({server.provider}):")
    if server.error is not None:
        click.echo(f"  not listed: {server.error}")
        return
    if not server.ids:
        click.echo("  none")
        return
    width = min(max(len(i) for i in server.ids[:MAX_SHOWN_IDS]), 48)
    for model in server.ids[:MAX_SHOWN_IDS]:
        refs = [r + (" *" if default is not None and r == default.ref else "") for r in listing.refs.get(model, ())]
        click.echo(f"  {visible(model).ljust(width)}  {', '.join(refs) if refs else '-'}".rstrip())
    if server.total > MAX_SHOWN_IDS:
        click.echo(f"  and {server.total - MAX_SHOWN_IDS} more (--json lists up to {len(server.ids)})")
    if any(model not in listing.refs for model in server.ids):
        click.echo(
            "  an id without an entry ('-') is used through one: `models: {NAME: {provider: "
            f"{server.provider}, model: ID}}` in config.yaml, then `--model NAME` or /model NAME"
        )


@models.command("show")
@click.argument("ref")
@workspace_option
@json_option
def show_model(ref: str, workspace: Path | None, as_json: bool) -> None:
    """One model entry (the API key itself is never shown, only the variable that holds it)."""
    from bearagent.domain.errors import BearAgentError

    ws = load(workspace)
    try:
        entry = ws.models.resolve(ref, where="bearagent models show")
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    diags = [d for d in ws.models.diagnostics if d.subject == entry.name and d.source == entry.source]
    # Header values may hold literal credentials: show only `${VAR}` references, mask everything else.
    masked = {k: v if v.startswith("${") and v.endswith("}") else "***" for k, v in entry.headers.items()}
    entry = entry.model_copy(update={"headers": masked})
    if as_json:
        data = entry.model_dump(mode="json")
        data["ref"] = entry.ref
        data["diagnostics"] = [diag_json(d) for d in diags]
        emit_json(data)
        return
    fields = [(k, v) for k, v in entry.model_dump(mode="json").items() if v not in (None, {}, "")]
    if entry.context_window is None:
        fields.append(("context_window", _window_note(entry.model or entry.name, entry.provider)))
    if entry.api_key_env:
        state = "set" if ws.env.get(entry.api_key_env) else "NOT SET"
        fields.append(("api key", f"${entry.api_key_env} is {state}"))
    print_fields(fields, 18)
    print_diagnostics(diags, heading="\ndiagnostics:")


def _window_note(model: str, provider: str) -> str:
    """Where the window of an entry without `context_window` comes from (docs/runtime.md#context-accounting)."""
    from bearagent.runtime.context_size import default_context_window

    default = default_context_window(model)
    listing = provider.startswith("openai")
    if default is None:
        asked = " (the server's /v1/models listing is asked at the first request)" if listing else ""
        return f"unknown{asked}; set context_window to compact by threshold"
    wins = " (the server's /v1/models listing wins when it reports one)" if listing else ""
    return f"{default:,} by default for {model}{wins}"

"""`bearagent models list|show`."""

from __future__ import annotations

from pathlib import Path

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


@click.group("models", cls=ListGroup)
def models() -> None:
    """List and inspect model entries (workspace/<name> and platform/<name>)."""


@models.command("list")
@workspace_option
@json_option
def list_models(workspace: Path | None, as_json: bool) -> None:
    """Every model entry with its ref, provider and source; the default model is marked."""
    ws = load(workspace)
    registry = ws.models
    # the model in use: default_model, else the only configured entry (or the zero-config one beside its catalog)
    default = registry.get(ws.config.default_model) if ws.config.default_model else registry.only_entry()
    shown = problems(registry.diagnostics)
    bare = registry.bare_shadowed()  # platform ref -> the workspace ref its bare name resolves to
    hides = {w: p for p, w in bare.items()}
    if as_json:
        emit_json(
            {
                "default_model": default.ref if default else None,
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
    print_diagnostics(shown, heading="\nproblems:")


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

"""`bearagent skills list|show`."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import (
    diag_json,
    emit_json,
    json_option,
    load,
    print_diagnostics,
    print_table,
    rel,
    related,
    shadows_of,
    short,
    show_missing,
    workspace_option,
)


@click.group("skills")
def skills() -> None:
    """List and inspect skills (skills/<name>/SKILL.md from every source)."""


@skills.command("list")
@workspace_option
@json_option
def list_skills(workspace: Path | None, as_json: bool) -> None:
    """Every skill with its source and shadowing, plus the catalog budget report (what the catalog would cut)."""
    ws = load(workspace)
    registry = ws.skills
    budget = ws.config.skill_catalog_chars
    catalog = registry.catalog(budget_chars=budget)
    problems = [d for d in registry.diagnostics if d.severity != "info"]
    if as_json:
        emit_json(
            {
                "workspace": str(ws.root),
                "skills": [
                    {
                        "name": r.name,
                        "level": r.item.level,
                        "source": r.source.id,
                        "path": rel(r.path, ws.root),
                        "description": r.item.description,
                        "files": list(r.item.files),
                        "shadows": shadows_of(r, ws.root),
                    }
                    for r in registry.entries()
                ],
                "catalog": {
                    "budget_chars": budget,
                    "chars": len(catalog.text),
                    "dropped_descriptions": list(catalog.dropped_descriptions),
                    "dropped_skills": list(catalog.dropped_skills),
                },
                "broken": {name: list(paths) for name, paths in registry.broken.items()},
                "diagnostics": [diag_json(d) for d in problems],
            }
        )
        return
    rows = [
        [
            r.name,
            r.source.id,
            rel(r.path, ws.root),
            ", ".join(c.source.id for c in r.shadows) or "-",
            short(r.item.description, 60),
        ]
        for r in registry.entries()
    ]
    rows.extend(
        [name, "ERROR", "duplicate: " + ", ".join(rel(p, ws.root) for p in paths), "-", "unusable until fixed"]
        for name, paths in registry.broken.items()
    )
    print_table(["NAME", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    click.echo(f"\ncatalog: {len(catalog.text)} of {budget} chars (skills.catalog_budget_chars)")
    if catalog.dropped_descriptions:
        click.echo(f"catalog over budget: descriptions dropped for: {', '.join(catalog.dropped_descriptions)}")
    if catalog.dropped_skills:
        click.echo(f"catalog over budget: skills left out entirely: {', '.join(catalog.dropped_skills)}")
    print_diagnostics(problems, heading="\nproblems (skipped or suspicious skill folders):")


@skills.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_skill(name: str, workspace: Path | None, as_json: bool) -> None:
    """One skill: description, source, shadowing, bundled files and diagnostics."""
    ws = load(workspace)
    resolved = ws.skills.resolved(name)
    if resolved is None:
        show_missing("skill", name, ws.skills.names(), dict(ws.skills.broken))
    skill = resolved.item
    diags = related(ws.skills.diagnostics, path=resolved.path, name=name)
    if as_json:
        data = skill.model_dump(mode="json")
        data.update(
            source=resolved.source.id,
            path=resolved.path,
            shadows=shadows_of(resolved, ws.root),
            diagnostics=[diag_json(d) for d in diags],
        )
        emit_json(data)
        return
    click.echo(f"name         {skill.name}")
    click.echo(f"description  {skill.description}")
    click.echo(f"source       {resolved.source.id}  {resolved.path}")
    click.echo(f"shadows      {'; '.join(f'{c.source.id} {c.path}' for c in resolved.shadows) or '-'}")
    if skill.license:
        click.echo(f"license      {skill.license}")
    if skill.allowed_tools:
        click.echo(f"allowed-tools {', '.join(skill.allowed_tools)}")
    click.echo(f"files        {', '.join(skill.files) or '-'}")
    click.echo(f"\nbody ({len(skill.body)} chars):\n{short(skill.body, 400)}")
    print_diagnostics(diags, heading="\ndiagnostics:")

"""`bearagent skills list|show`."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import (
    broken_rows,
    emit_list_json,
    emit_show_json,
    entry_json,
    entry_row,
    json_option,
    load,
    origin_fields,
    print_diagnostics,
    print_fields,
    print_table,
    problems,
    resolve_shown,
    short,
    workspace_option,
)
from bearagent.cli._groups import ListGroup
from bearagent.domain.diagnostics import name_list


@click.group("skills", cls=ListGroup)
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
    shown = problems(registry.diagnostics)
    if as_json:
        entries = [entry_json(r, ws.root, after={"files": list(r.item.files)}) for r in registry.entries()]
        catalog_json = {
            "budget_chars": budget,
            "chars": len(catalog.text),
            "dropped_descriptions": list(catalog.dropped_descriptions),
            "dropped_skills": list(catalog.dropped_skills),
        }
        emit_list_json(ws, "skills", registry, entries, shown, catalog=catalog_json)
        return
    rows = [entry_row(r, ws.root) for r in registry.entries()]
    rows.extend(broken_rows(registry.broken, ws.root))
    print_table(["NAME", "SOURCE", "PATH", "SHADOWS", "DESCRIPTION"], rows)
    click.echo(f"\ncatalog: {len(catalog.text)} of {budget} chars (skills.catalog_budget_chars)")
    if catalog.dropped_descriptions:
        click.echo(f"catalog over budget: descriptions dropped for: {name_list(catalog.dropped_descriptions)}")
    if catalog.dropped_skills:
        click.echo(f"catalog over budget: skills left out entirely: {name_list(catalog.dropped_skills)}")
    print_diagnostics(shown, heading="\nproblems (skipped or suspicious skill folders):")


@skills.command("show")
@click.argument("name")
@workspace_option
@json_option
def show_skill(name: str, workspace: Path | None, as_json: bool) -> None:
    """One skill: description, source, shadowing, bundled files and diagnostics."""
    ws = load(workspace)
    resolved, diags = resolve_shown("skill", ws.skills, name)
    skill = resolved.item
    if as_json:
        emit_show_json(skill.model_dump(mode="json"), resolved, ws.root, diags)
        return
    fields: list[tuple[str, object]] = [
        ("name", skill.name),
        ("description", skill.description),
        *origin_fields(resolved),
    ]
    if skill.license:
        fields.append(("license", skill.license))
    if skill.allowed_tools:
        fields.append(("allowed-tools", ", ".join(skill.allowed_tools)))
    fields.append(("files", ", ".join(skill.files) or "-"))
    print_fields(fields, 12)
    click.echo(f"\nbody ({len(skill.body)} chars):\n{short(skill.body, 400)}")
    print_diagnostics(diags, heading="\ndiagnostics:")

"""`bearagent db status` and `bearagent db migrate`: the schema of the workspace's store (SQLite or PostgreSQL,
chosen by the user or server config or `BEARAGENT_DATABASE_URL`; docs/store.md). The store is named by its display
form only: a DSN's password never reaches the terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from bearagent.cli._config_common import emit_json, json_option, load, workspace_option
from bearagent.cli._run_common import EXIT_USAGE, die, die_from

if TYPE_CHECKING:
    from bearagent.store_status import StoreStatus

F = TypeVar("F", bound=Callable[..., object])


@click.group("db")
def db() -> None:
    """The store's schema: status (versions, runs waiting) and migrate."""


def _debug_option(func: F) -> F:
    return click.option("--debug", is_flag=True, help="Show the traceback of an error.")(func)


@db.command("status", short_help="Backend, location, schema version vs this BearAgent's, runs by status.")
@workspace_option
@json_option
@_debug_option
def status(workspace: Path | None, as_json: bool, debug: bool) -> None:
    """Show the store: backend, where it is, its schema version against this BearAgent's, whether it needs
    `db migrate`, and its runs by status. Reads only: nothing is created or migrated. Exits 2 when the store is
    newer than this BearAgent or cannot be read."""
    from bearagent.domain.errors import BearAgentError
    from bearagent.store_status import newer_error, read_status_sync

    loaded = load(workspace)
    try:
        found = read_status_sync(loaded)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    if as_json:
        emit_json({"workspace": str(loaded.root), **found.to_json()})
    else:
        _print_status(found)
    if found.state == "newer":
        error = newer_error(found)
        die(error.info.message, error.hint, EXIT_USAGE)


def _print_status(found: StoreStatus) -> None:
    click.echo(f"backend   {found.backend}")
    click.echo(f"store     {found.display}")
    click.echo(f"chosen by {found.source or 'the default (no store: in the user or server config)'}")
    version = "none (no store yet)" if found.version is None else str(found.version)
    click.echo(f"schema    {version} in the database, {found.supported} known to this BearAgent")
    migration = {
        "missing": "yes: `bearagent db migrate` creates the store (so does the first run)",
        "outdated": "yes: run `bearagent db migrate` (opening the store also applies it)",
        "current": "no",
        "newer": "no: the store is newer than this BearAgent",
    }[found.state]
    click.echo(f"migrate   {migration}")
    click.echo(f"runs      {found.describe_runs()}")


@db.command("migrate", short_help="Bring the schema up to date (creates the store; safe to run at once).")
@workspace_option
@_debug_option
def migrate(workspace: Path | None, debug: bool) -> None:
    """Bring the store's schema up to this BearAgent's version, creating the store if there is none. Idempotent and
    safe with several processes at once (one migrates, the others wait for it). A store of a newer BearAgent is
    refused and left untouched."""
    from bearagent.domain.errors import BearAgentError
    from bearagent.store_status import migrate_store

    loaded = load(workspace)
    try:
        done = migrate_store(loaded)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    if done.before is None:
        click.echo(f"created {done.display} at schema version {done.after}")
    elif done.before == done.after:
        click.echo(f"{done.display} is up to date (schema version {done.after})")
    else:
        click.echo(f"migrated {done.display} from schema version {done.before} to {done.after}")

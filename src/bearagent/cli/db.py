"""`bearagent db status`, `db migrate` and `db check`: the schema of the workspace's store (SQLite or PostgreSQL,
chosen by the user or server config or `BEARAGENT_DATABASE_URL`; docs/store.md). With `--config FILE` (a server
config), every store of the workspaces that server serves, with its `store:`. The store is named by its display form
only: a DSN's password never reaches the terminal."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from bearagent.cli._config_common import emit_json, json_option, load, workspace_option
from bearagent.cli._run_common import EXIT_USAGE, die, die_from
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.app.store_status import StoreStatus
    from bearagent.domain.errors import BearAgentError
    from bearagent.workspace import LoadedWorkspace

F = TypeVar("F", bound=Callable[..., object])


@click.group("db")
def db() -> None:
    """The store's schema: status (versions, runs waiting), migrate, and check (is the file whole)."""


def _options(func: F) -> F:
    func = click.option("--debug", is_flag=True, help="Show the traceback of an error.")(func)
    func = click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        default=None,
        help="A server config (`bearagent serve --config`): every store of the workspaces it serves, with its store:.",
    )(func)
    return workspace_option(func)


@dataclass(frozen=True, slots=True)
class _Target:
    loaded: LoadedWorkspace
    workspaces: tuple[str, ...]
    """The server config's workspace ids sharing this store (empty without --config)."""


def _targets(workspace: Path | None, config_file: Path | None, *, debug: bool) -> list[_Target]:
    """The workspace's store; with a server config, each distinct store of its workspaces once."""
    if config_file is None:
        return [_Target(load(workspace), ())]
    from bearagent.app.stores import postgres_schema
    from bearagent.domain.errors import BearAgentError
    from bearagent.server.config import load_server_config
    from bearagent.workspace import load_workspace

    try:
        config = load_server_config(config_file, [workspace] if workspace is not None else [])
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    found: dict[tuple[str, str, str], tuple[LoadedWorkspace, list[str]]] = {}
    for ws_id, entry in config.workspaces.items():
        loaded = load_workspace(entry.root_path, store=config.store)
        settings = loaded.config.store
        if settings.backend == "postgres":  # the variable's value is only a key here, never shown
            key = ("postgres", loaded.env.get(settings.dsn_env, ""), postgres_schema(loaded, settings))
        else:
            key = ("sqlite", str(loaded.state_dir), "")
        found.setdefault(key, (loaded, []))[1].append(ws_id)
    return [_Target(loaded, tuple(ids)) for loaded, ids in found.values()]


def _report(exc: BearAgentError, *, debug: bool) -> None:
    """One store's error, as `die` prints it (what, then how to fix it), without ending the command."""
    if debug:
        traceback.print_exception(exc)
    click.echo(visible(f"error: {exc.info.message}"), err=True)
    click.echo(visible(f"fix: {exc.hint or 'see docs/store.md'}"), err=True)


@db.command("status", short_help="Backend, location, schema version vs this BearAgent's, runs by status.")
@_options
@json_option
def status(workspace: Path | None, config_file: Path | None, as_json: bool, debug: bool) -> None:
    """Show the store: backend, where it is, its schema version against this BearAgent's, whether it needs
    `db migrate`, and its runs by status. Reads only: nothing is created or migrated. Exits 2 when a store is newer
    than this BearAgent or cannot be read. `--json`: one object (with --config: a list, each with its
    `workspaces`)."""
    from bearagent.app.store_status import newer_error, read_status_sync
    from bearagent.domain.errors import BearAgentError

    targets = _targets(workspace, config_file, debug=debug)
    if config_file is None:  # one store: an error that keeps it from being read is the command's error
        try:
            found = read_status_sync(targets[0].loaded)
        except BearAgentError as exc:
            die_from(exc, debug=debug)
        if as_json:
            emit_json({"workspace": str(targets[0].loaded.root), **found.to_json()})
        else:
            _print_status(found, ())
        if found.state == "newer":
            error = newer_error(found)
            die(error.info.message, error.hint, EXIT_USAGE)
        return
    shown: list[dict[str, object]] = []
    failed = 0
    for index, target in enumerate(targets):
        if index and not as_json:
            click.echo("")
        try:
            found = read_status_sync(target.loaded)
        except BearAgentError as exc:
            failed += 1
            shown.append({"workspaces": list(target.workspaces), "error": exc.info.code})
            if not as_json:
                click.echo(f"workspaces {', '.join(target.workspaces)}")
            _report(exc, debug=debug)
            continue
        shown.append({"workspaces": list(target.workspaces), **found.to_json()})
        if not as_json:
            _print_status(found, target.workspaces)
        if found.state == "newer":
            failed += 1
            _report(newer_error(found), debug=False)
    if as_json:
        emit_json(shown)
    if failed:
        sys.exit(EXIT_USAGE)


def _print_status(found: StoreStatus, workspaces: tuple[str, ...]) -> None:
    if workspaces:
        click.echo(f"workspaces {', '.join(workspaces)}")
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
@_options
def migrate(workspace: Path | None, config_file: Path | None, debug: bool) -> None:
    """Bring the store's schema up to this BearAgent's version, creating the store if there is none. Idempotent and
    safe with several processes at once (one migrates, the others wait for it). A store of a newer BearAgent is
    refused and left untouched. With --config, every store of the server's workspaces (exit 2 if any failed)."""
    from bearagent.app.store_status import migrate_store
    from bearagent.domain.errors import BearAgentError

    targets = _targets(workspace, config_file, debug=debug)
    failed = 0
    for target in targets:
        try:
            done = migrate_store(target.loaded)
        except BearAgentError as exc:
            if config_file is None:
                die_from(exc, debug=debug)
            failed += 1
            _report(exc, debug=debug)
            continue
        if done.before is None:
            click.echo(f"created {done.display} at schema version {done.after}")
        elif done.before == done.after:
            click.echo(f"{done.display} is up to date (schema version {done.after})")
        else:
            click.echo(f"migrated {done.display} from schema version {done.before} to {done.after}")
    if failed:
        die(f"{failed} of {len(targets)} stores could not be migrated", "fix what the errors above say", EXIT_USAGE)


@db.command("check", short_help="Whether the store file is whole (read-only; never repairs or replaces it).")
@workspace_option
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
def check(workspace: Path | None, debug: bool) -> None:
    """Check the workspace's SQLite store without changing it: SQLite's full integrity check, then every stored row
    read once. A damaged file is named with what to do (exit 2); BearAgent never repairs or replaces it itself."""
    from bearagent.app.store_check import check_sqlite_store
    from bearagent.app.stores import STATE_DB
    from bearagent.domain.errors import BearAgentError

    loaded = load(workspace)
    if loaded.config.store.backend == "postgres":
        die(
            "db check reads SQLite stores; this workspace's store is PostgreSQL",
            "check it with PostgreSQL's own tools (amcheck, pg_amcheck); `bearagent db status` shows where it is",
            EXIT_USAGE,
        )
    path = loaded.state_dir / STATE_DB
    try:
        found = check_sqlite_store(path)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    if not found.exists:
        click.echo(visible(f"{path}: no store yet (the first run creates it)"))
        return
    click.echo(visible(f"ok: {path} is whole ({found.rows} rows read, SQLite's integrity check passed)"))


@db.command("prune", short_help="Remove old finished runs (pinned runs stay) and say how much that freed.")
@workspace_option
@json_option
@click.option(
    "--older-than",
    "older_than",
    default=None,
    help="Remove finished runs created longer ago than this (30d, 12h, 2w); default: retention.keep_days.",
)
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@click.option("--vacuum", is_flag=True, help="Then give the space back to the file system (SQLite: rewrites the file).")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
def prune(
    workspace: Path | None, as_json: bool, older_than: str | None, dry_run: bool, vacuum: bool, debug: bool
) -> None:
    """Remove runs that ended (succeeded, failed, cancelled) before a cut-off, with their subagents' runs, their
    search index rows and the tool results they spilled to `.bearagent/tool-results/`; then the stored contents of
    changed files (`.bearagent/blobs/`, for `bearagent rewind`) that no kept run names, older than an hour.

    Runs that can still continue (queued, running, waiting, interrupted) and runs pinned with `bearagent runs pin`
    are kept, whatever their age. Everything of a run goes in one transaction, or nothing does.
    """
    from datetime import UTC, datetime, timedelta

    from bearagent.app.retention import prune_workspace
    from bearagent.app.stores import open_store
    from bearagent.cli._ages import AgeError, parse_age
    from bearagent.domain.errors import BearAgentError

    loaded = load(workspace)
    keep_days = loaded.config.retention.keep_days
    if older_than is not None:
        try:
            age = parse_age(older_than)
        except AgeError as exc:
            die(f"--older-than {exc}", "e.g. --older-than 30d", code=EXIT_USAGE)
    elif keep_days is not None:
        age = timedelta(days=keep_days)
    else:
        die(
            "no age given: `db prune` removes runs older than --older-than, or retention.keep_days of your user config",
            "run `bearagent db prune --older-than 30d --dry-run`, or set `retention: {keep_days: 90}` in your user config",
            code=EXIT_USAGE,
        )
    before = datetime.now(UTC) - age
    try:
        store = open_store(loaded, create=False)
        try:
            report = prune_workspace(loaded, store, before, dry_run=dry_run)
            if vacuum and not dry_run:
                store.vacuum()
        finally:
            store.close()
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    result = report.result
    if as_json:
        emit_json(
            {
                "dry_run": dry_run,
                "before": before.isoformat(),
                "runs": result.top_level,
                "runs_with_subagents": len(result.run_ids),
                "events": result.events,
                "event_bytes": result.event_bytes,
                "files": report.files,
                "file_bytes": report.file_bytes,
                "blobs": report.blobs,
                "blob_bytes": report.blob_bytes,
                "freed_bytes": report.freed_bytes,
                "kept_pinned": result.kept_pinned,
                "run_ids": list(result.run_ids),
            }
        )
        return
    verb = "would remove" if dry_run else "removed"
    children = len(result.run_ids) - result.top_level
    click.echo(
        f"{verb} {result.top_level} run(s) created before {before.astimezone().strftime('%Y-%m-%d %H:%M')}"
        + (f" (and {children} subagent run(s))" if children else "")
        + f": {result.events} events, {report.files} spilled tool result(s), "
        + (f"{report.blobs} stored file content(s) no kept run names, " if report.blobs else "")
        + f"{report.freed_bytes / 1e6:,.2f} MB {'to free' if dry_run else 'freed'}"
    )
    if result.kept_pinned:
        click.echo(f"kept {result.kept_pinned} pinned run(s) (`bearagent runs unpin RUN` lets a prune remove one)")
    if not dry_run and not vacuum and result.top_level:
        click.echo("the store reuses the space; `--vacuum` gives it back to the file system")

"""`bearagent runs export RUN --format atif|markdown|jsonl|<plugin format> [-o FILE]`: a run's log as a trajectory for
benchmark harnesses (ATIF v1.7), a readable conversation (Markdown), or its events (JSONL, as `events --json` prints
them); or handed to a plugin's run exporter (`--format otlp` / `--otlp`: the bearagent-otel plugin's spans).

The document is built from the stored events only (`runtime/trajectory.py`); a file is written whole or not at all
(a temporary file beside it, renamed into place)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from bearagent.plugins.contributions import RunExporter

from bearagent.cli._config_common import fail, workspace_option
from bearagent.cli.runs import open_recovered, resolve_ref
from bearagent.plugins.manager import BUILTIN_EXPORT_FORMATS

FORMATS = BUILTIN_EXPORT_FORMATS


@click.command("export")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@click.option(
    "--format",
    "fmt",
    default=None,
    metavar="FORMAT",
    help="atif: ATIF v1.7 JSON (Harbor); markdown: the conversation (default); jsonl: the events, one per line; "
    "or a format a plugin adds (`bearagent plugins list`), e.g. otlp.",
)
@click.option(
    "--otlp", is_flag=True, help="Short for --format otlp: the run's spans to the OTLP endpoint (bearagent-otel)."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write to FILE (created or replaced whole) instead of standard output.",
)
def export(run_ref: str, workspace: Path | None, fmt: str | None, otlp: bool, output: Path | None) -> None:
    """Export a run: its trajectory (ATIF), its conversation (Markdown), its events (JSONL), or through a plugin's
    exporter (--otlp: OpenTelemetry spans).

    RUN is a full run id, a unique prefix of one, or `last`. Subagent runs are embedded (ATIF) or shown inline
    (Markdown) after the call that started them.
    """
    from bearagent import __version__
    from bearagent.runtime.trajectory import atif_trajectory, markdown_of

    if otlp and fmt not in (None, "otlp"):
        fail(f"--otlp and --format {fmt} ask for two formats", "pass one of them")
    fmt = "otlp" if otlp else (fmt or "markdown")
    exporter = None if fmt in FORMATS else _plugin_exporter(fmt, output)
    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
    if exporter is not None:
        click.echo(_run_plugin_exporter(exporter, workspace, str(run_id)))
        return
    if fmt == "jsonl":
        text = "".join(
            json.dumps(event.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"
            for event in store.read_events(run_id)
        )
    else:
        document = atif_trajectory(lambda rid: store.read_events(rid), run_id, version=__version__)
        text = json.dumps(document, ensure_ascii=False, indent=2) + "\n" if fmt == "atif" else markdown_of(document)
    if output is None:
        click.echo(text, nl=False)
        return
    _write_whole(output, text)
    click.echo(f"wrote {output} ({fmt}, {len(text.encode())} bytes)", err=True)


def _plugin_exporter(fmt: str, output: Path | None) -> RunExporter:
    from bearagent.plugins.manager import PluginHost

    exporters = {
        item.name: item for item in PluginHost.from_entry_points(dict(os.environ)).contributions().run_exporters
    }
    exporter = exporters.get(fmt)
    if exporter is None:
        known = ", ".join([*FORMATS, *sorted(exporters)])
        hint = "; the otlp format comes with the bearagent-otel plugin (docs/observability.md)" if fmt == "otlp" else ""
        fail(f"no export format named {fmt!r} (formats: {known})", f"pass one of them{hint}")
    if output is not None:
        fail(
            f"-o/--output does not apply to --format {fmt}: plugin {exporter.plugin!r} sends the run itself", "drop -o"
        )
    return exporter


def _run_plugin_exporter(exporter: RunExporter, workspace: Path | None, run_id: str) -> str:
    from bearagent import BearAgentError
    from bearagent.config.workspace import discover_workspace

    try:
        return exporter.export(discover_workspace(Path.cwd(), workspace), run_id, dict(os.environ))
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint or f"see the documentation of plugin {exporter.plugin!r}")
    except Exception as exc:
        fail(
            f"plugin {exporter.plugin!r} failed to export the run ({exporter.name}): {type(exc).__name__}: {exc}",
            "report it to the plugin's authors; `bearagent plugins list` shows its version",
        )


def _write_whole(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        fail(f"cannot write {path}: the folder {directory} does not exist", "create it, or name another file with -o")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        fail(f"cannot write {path}: {exc.strerror or exc}", "check the path and its permissions")

"""`bearagent runs export RUN --format atif|markdown|jsonl [-o FILE]`: a run's log as a trajectory for benchmark
harnesses (ATIF v1.7), a readable conversation (Markdown), or its events (JSONL, as `events --json` prints them).

The document is built from the stored events only (`runtime/trajectory.py`); a file is written whole or not at all
(a temporary file beside it, renamed into place)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click

from bearagent.cli._config_common import fail, workspace_option
from bearagent.cli.runs import open_recovered, resolve_ref

FORMATS = ("atif", "markdown", "jsonl")


@click.command("export")
@click.argument("run_ref", metavar="RUN")
@workspace_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="markdown",
    show_default=True,
    help="atif: ATIF v1.7 JSON (Harbor); markdown: the conversation; jsonl: the events, one per line.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write to FILE (created or replaced whole) instead of standard output.",
)
def export(run_ref: str, workspace: Path | None, fmt: str, output: Path | None) -> None:
    """Export a run: its trajectory (ATIF), its conversation (Markdown) or its events (JSONL).

    RUN is a full run id, a unique prefix of one, or `last`. Subagent runs are embedded (ATIF) or shown inline
    (Markdown) after the call that started them.
    """
    from bearagent import __version__
    from bearagent.runtime.trajectory import atif_trajectory, markdown_of

    store = open_recovered(workspace)
    run_id = resolve_ref(store, run_ref)
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

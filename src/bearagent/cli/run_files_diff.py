"""`bearagent runs diff RUN [--call ID] [--json]`: the file changes a run recorded (each tool call's `FilesChanged`,
Bash included), as unified diffs of the contents kept in the blob store (`service/file_diffs.py`). Bounded: at most
50 changed paths and 200,000 bytes of diff text, what was cut said at the end. The text is the workspace's and
the model's: shown through `safe_text.visible` (control sequences shown, never interpreted); `--json` prints it
exactly."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import emit_json, fail, json_option, workspace_option

if TYPE_CHECKING:
    from bearagent.rewind.diff import RunDiff


@click.command("diff")
@click.argument("run_ref", metavar="RUN")
@click.option("--call", "tool_call", default=None, metavar="ID", help="Only this tool call's changes (8+ characters).")
@workspace_option
@json_option
def diff(run_ref: str, tool_call: str | None, workspace: Path | None, as_json: bool) -> None:
    """Show the file changes RUN recorded (or --call one tool call of it) as diffs: created, modified, deleted.

    RUN is a full run id, a unique prefix of one, or `last`. Binary files, directories, symlinks and contents not
    kept in the blob store are named with what changed instead of a diff.
    """
    from bearagent.cli._config_common import load
    from bearagent.cli.runs import recovered_store, resolve_ref
    from bearagent.domain.errors import BearAgentError
    from bearagent.service.file_diffs import files_diff

    loaded = load(workspace)
    store = recovered_store(loaded)
    try:
        run_id = resolve_ref(store, run_ref)
        try:
            found = files_diff(store, loaded.root, run_id, tool_call)
        except BearAgentError as exc:
            fail(exc.info.message, exc.hint)
    finally:
        store.close()
    if as_json:
        emit_json(found.to_json())
        return
    if not found.files:
        click.echo(f"run {found.run_id} recorded no file changes" + (f" in tool call {tool_call}" if tool_call else ""))
    for text, style in diff_lines(found):
        click.echo(click.style(text, bold=True) if style == "bold" else click.style(text, fg=style) if style else text)
    for cut in found.cut:
        click.echo(f"note: {cut}", err=True)


def diff_lines(found: RunDiff) -> list[tuple[str, str | None]]:
    """`found`'s files as display lines, each with its style (`bold` for a file's heading, `green` / `red` for an
    added / removed line, None): the one drawing of a diff, for `runs diff` and the session's `/diff`. The text is
    the workspace's and the model's, so it goes through `safe_text.visible`."""
    from bearagent.cli.safe_text import visible

    out: list[tuple[str, str | None]] = []
    for one in found.files:
        call = (one.tool_call_id or "?")[:8]
        out.append((f"── {one.action} {visible(one.path)}  (call {call}, {one.tool_name})", "bold"))
        if one.diff is not None:
            for line in visible(one.diff).splitlines():
                plain = line.startswith(("+++", "---"))
                out.append(
                    (
                        line,
                        None if plain else "green" if line.startswith("+") else "red" if line.startswith("-") else None,
                    )
                )
        if one.note is not None:
            out.append((f"   {visible(one.note)}", None))
    return out

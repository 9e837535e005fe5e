"""`bearagent runs search TEXT`: runs whose prompt, answers, tool calls or results hold every word of TEXT, newest
first, each with the piece of its log that matched (`domain/search.py`; the stores keep a full-text index caught up
with the log before each search). Like `llm logs -q`, for the event log."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import emit_json, fail, json_option, workspace_option
from bearagent.cli.runs import open_recovered
from bearagent.cli.safe_text import visible
from bearagent.domain.search import DEFAULT_HITS, MAX_HITS

_STATUSES = ["queued", "running", "waiting", "interrupted", "succeeded", "failed", "cancelled"]


@click.command("search")
@click.argument("text")
@workspace_option
@json_option
@click.option("--agent", default=None, help="Only runs of this agent.")
@click.option("--status", type=click.Choice(_STATUSES), default=None, help="Only runs in this state.")
@click.option("--since", default=None, help="Only runs created since: an age (90m, 12h, 7d, 2w) or an ISO date.")
@click.option("--session", default=None, help="Only runs of this session id.")
@click.option(
    "--limit", type=click.IntRange(1, MAX_HITS), default=DEFAULT_HITS, show_default=True, help="How many runs."
)
def search(
    text: str,
    workspace: Path | None,
    as_json: bool,
    agent: str | None,
    status: str | None,
    since: str | None,
    session: str | None,
    limit: int,
) -> None:
    """Search the runs' prompts, answers, tool calls and results for every word of TEXT.

    Words match whole and regardless of case and accents; the best-matching piece of each run is shown with the
    words in [brackets]. `bearagent events RUN` shows the whole log around it (the hit names its sequence).
    """
    from bearagent.cli._ages import AgeError, parse_since
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.ids import SessionId
    from bearagent.domain.search import RunSearch

    try:
        since_at = parse_since(since) if since is not None else None
    except AgeError as exc:
        fail(f"--since {exc}", "e.g. --since 7d or --since 2026-11-01")
    session_id = None
    if session is not None:
        try:
            session_id = SessionId(session)
        except ValueError:
            fail(f"--session {session!r} is not a session id", "copy a session id from `bearagent runs list --json`")
    try:
        query = RunSearch.of(
            text,
            agent=agent,
            status=status,  # pyright: ignore[reportArgumentType]
            since=since_at,
            session_id=session_id,
            limit=limit,
        )
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    store = open_recovered(workspace)
    try:
        hits = store.search_runs(query)
    except BearAgentError as exc:
        fail(exc.info.message, exc.hint)
    if as_json:
        emit_json(
            [
                {
                    "run_id": str(hit.run_id),
                    "session_id": None if hit.session_id is None else str(hit.session_id),
                    "status": hit.status,
                    "agent": hit.agent_name,
                    "created_at": hit.created_at.isoformat(),
                    "goal": hit.goal,
                    "sequence": hit.sequence,
                    "event_type": hit.event_type,
                    "snippet": hit.snippet,
                }
                for hit in hits
            ]
        )
        return
    if not hits:
        click.echo(f"no run matches {visible(text)!s}: try fewer words, or drop --since/--status/--agent")
        return
    for hit in hits:
        when = hit.created_at.astimezone().strftime("%Y-%m-%d %H:%M")
        head = f"{str(hit.run_id)[:8]}  {hit.status}  {hit.agent_name or '-'}  {when}"
        click.echo(click.style(visible(head), bold=True))
        if hit.goal:
            click.echo(f"  goal: {visible(hit.goal[:120])}")
        click.echo(f"  #{hit.sequence} {hit.event_type}: {visible(hit.snippet)}")

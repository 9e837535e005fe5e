"""`bearagent approvals list` and `approvals answer RUN ID allow|allow-always|deny`: approvals as facts.

A run that asked for an approval nobody attached could give (`bearagent run --wait-approvals`, a server) waits in
the log (status `waiting`). `answer` records the answer once (`ApprovalResolved`) and, unless the process that
asked is still attached to the run (an interactive terminal picks the answer up itself), continues the run here.
What the listing shows came from a model (tool arguments): it goes through `safe_text.visible`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from bearagent.cli._config_common import emit_json, json_option, print_table, short, workspace_option
from bearagent.cli._groups import ListGroup
from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace

DECISIONS = {"allow": "allow_once", "allow-once": "allow_once", "allow-always": "allow_always", "deny": "deny"}
QUESTION_ANSWERS = ("accept", "decline", "cancel")
"""The answers to an MCP server's question mid-call (an `el_` id, `service/elicitations.py`)."""


@click.group("approvals", cls=ListGroup)
def approvals() -> None:
    """List the runs waiting for an approval; answer one (allow/deny) and the run continues."""


@approvals.command("list")
@workspace_option
@json_option
def list_approvals(workspace: Path | None, as_json: bool) -> None:
    """The approvals runs wait for: run, approval id, tool, what it would do, and why it asks."""
    import json

    from bearagent.cli.runs import open_recovered

    store = open_recovered(workspace)
    rows: list[dict[str, object]] = []
    for run in store.list_runs(status="waiting", limit=10_000):
        pending = run.pending_approval
        if pending is None:
            continue
        asked = next(
            (
                e
                for e in reversed(store.read_events(run.run_id))
                if e.event_type == "ApprovalRequested" and e.payload.get("approval_id") == pending.approval_id
            ),
            None,
        )
        payload: dict[str, object] = asked.model_dump(mode="json")["payload"] if asked is not None else {}
        rows.append(
            {
                "run_id": str(run.run_id),
                "approval_id": pending.approval_id,
                "tool": pending.tool_name,
                "arguments": payload.get("arguments", {}),
                "reason": payload.get("reason", ""),
                "suggested_rule": payload.get("suggested_rule"),
                "requested_at": pending.requested_at.isoformat(),
                "answered": pending.decision,
                "goal": run.goal or "",
            }
        )
    from bearagent.service.elicitations import pending_elicitations

    for run in store.list_runs(status="running", limit=10_000):  # MCP servers' questions its calls wait on
        for question in pending_elicitations(run, store.read_events(run.run_id)):
            rows.append(
                {
                    "run_id": str(run.run_id),
                    "approval_id": question["approval_id"],
                    "tool": f"MCP {question['server']}",
                    "arguments": question["requested_schema"] or {},
                    "reason": question["reason"],
                    "kind": "elicitation",
                    "requested_schema": question["requested_schema"],
                    "requested_at": question["requested_at"],
                    "answered": None,
                    "goal": run.goal or "",
                }
            )
    if as_json:
        emit_json(rows)  # pyright: ignore[reportArgumentType]
        return
    if not rows:
        click.echo("no run waits for an approval")
        return
    table = [
        [
            str(row["run_id"])[:8],
            str(row["approval_id"]),
            str(row["tool"]),
            short(json.dumps(row["arguments"], ensure_ascii=False), 50),
            short(str(row["reason"]), 60),
            str(row["answered"] or "-"),
        ]
        for row in rows
    ]
    print_table(["RUN", "APPROVAL", "TOOL", "ARGUMENTS", "WHY", "ANSWERED"], [[visible(c) for c in r] for r in table])
    click.echo("answer with: bearagent approvals answer RUN APPROVAL allow|allow-always|deny")
    if any(row.get("kind") == "elicitation" for row in rows):
        click.echo(
            "an MCP server's question (el_...): bearagent approvals answer RUN ID accept --content JSON|decline|cancel"
        )


@approvals.command("answer")
@click.argument("run_ref", metavar="RUN")
@click.argument("approval_id", metavar="APPROVAL")
@click.argument("decision", type=click.Choice(sorted([*DECISIONS, *QUESTION_ANSWERS])))
@click.option("--message", default=None, help="A note kept with the answer (shown to nobody but the log).")
@click.option(
    "--content",
    default=None,
    metavar="JSON",
    help="Accepting an MCP server's question: the form's fields as a JSON object (checked against its schema).",
)
@click.option("--no-continue", "no_continue", is_flag=True, help="Only record the answer; do not continue the run.")
@workspace_option
@json_option
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def answer(
    run_ref: str,
    approval_id: str,
    decision: str,
    message: str | None,
    content: str | None,
    no_continue: bool,
    workspace: Path | None,
    as_json: bool,
    debug: bool,
) -> None:
    """Answer approval APPROVAL of run RUN once (a second or late answer is refused), then continue the run here
    (unless its asking process is still attached, or --no-continue). Exit codes as for `bearagent run`."""
    import asyncio

    from bearagent.app.runtime import open_runtime
    from bearagent.cli._config_common import load
    from bearagent.cli._run_common import die_from, execute_and_exit
    from bearagent.cli.render import make_console
    from bearagent.cli.runs import recovered_store, resolve_ref
    from bearagent.cli.terminal_stream import attach_terminal
    from bearagent.domain.errors import BearAgentError
    from bearagent.runtime.observer import NullObserver, RunObserver
    from bearagent.service.resuming import answer_approval, attached_elsewhere
    from bearagent.service.run_types import local_user_name
    from bearagent.service.runner import RunResult

    loaded = load(workspace)  # once: the store's recovery and the runtime share it
    store = recovered_store(loaded)
    run_id = resolve_ref(store, run_ref)
    run = store.get_run(run_id)
    store.close()
    if approval_id.startswith("el_") or decision in QUESTION_ANSWERS or content is not None:
        _answer_question(loaded, run_id, approval_id, decision, content, message, debug=debug)
        return
    go_on = not no_continue and run is not None and not attached_elsewhere(run)
    try:
        runtime = open_runtime(loaded)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    who = f"cli:{local_user_name()}"
    choice = DECISIONS[decision]

    async def record() -> None:
        await answer_approval(runtime, run_id, approval_id, choice, answered_by=who, message=message)  # pyright: ignore[reportArgumentType]
        click.echo(f"approval {approval_id} of run {str(run_id)[:8]}: {choice} (by {who})", err=True)

    if not go_on:

        async def only_record() -> None:
            try:
                await record()
            finally:
                await runtime.aclose()

        try:
            asyncio.run(only_record())
        except BearAgentError as exc:
            die_from(exc, debug=debug)
        if not no_continue:
            click.echo("the process that asked is still attached to the run: it continues there", err=True)
        return

    async def answer_and_continue() -> RunResult:
        await record()
        observer: RunObserver = NullObserver() if as_json else attach_terminal(runtime, run_id, make_console())
        return await runtime.resume(run_id, observer)

    execute_and_exit(runtime, answer_and_continue, output="json" if as_json else "text", debug=debug)


def _answer_question(
    loaded: LoadedWorkspace,
    run_id: object,
    question_id: str,
    decision: str,
    content: str | None,
    message: str | None,
    *,
    debug: bool,
) -> None:
    """Answer an MCP server's question a running run's call waits on: recorded once, read there by the call."""
    import asyncio
    import json

    from bearagent.app.runtime import open_runtime
    from bearagent.cli._run_common import die_from
    from bearagent.domain.errors import BearAgentError, ErrorInfo
    from bearagent.domain.ids import RunId
    from bearagent.service.elicitations import answer_elicitation
    from bearagent.service.run_types import local_user_name

    def refuse(text: str, hint: str) -> BearAgentError:
        return BearAgentError(ErrorInfo.of("invalid_request", "elicitation_answer", text), hint=hint)

    try:
        if not question_id.startswith("el_") or decision not in QUESTION_ANSWERS:
            raise refuse(
                f"{question_id} with {decision}: an MCP server's question (el_...) takes accept, decline or cancel; "
                "a tool approval allow, allow-always or deny",
                "`bearagent approvals list` shows each id and what it waits for",
            )
        try:
            parsed: object = json.loads(content) if content is not None else None
        except json.JSONDecodeError as exc:
            raise refuse(f"--content is not JSON: {exc}", "e.g. --content '{\"proceed\": true}'") from None
        runtime = open_runtime(loaded)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    who = f"cli:{local_user_name()}"

    async def record() -> None:
        try:
            await answer_elicitation(
                runtime,
                RunId(str(run_id)),
                question_id,
                decision,  # pyright: ignore[reportArgumentType]
                parsed,
                answered_by=who,
                message=message,
            )
        finally:
            await runtime.aclose()

    try:
        asyncio.run(record())
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    click.echo(f"question {question_id} of run {str(run_id)[:8]}: {decision} (by {who}); the run goes on", err=True)

"""`bearagent run PROMPT`: one run, streamed to the terminal (or as JSON / JSONL), with the SPEC §15 exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bearagent.cli._config_common import workspace_option
from bearagent.cli._run_common import (
    budget_options,
    collect_budgets,
    die,
    die_from,
    execute_and_exit,
    handle_termination_like_ctrl_c,
    run_choice_options,
    run_choices,
)


def read_prompt_parts(prompt: str) -> tuple[str, str | None]:
    """The prompt the user wrote (PROMPT, or stdin for `-`) and what is piped besides it (appended after it; its
    `@` words are data, never mentions)."""
    if prompt != "-":
        from bearagent.cli._stdin import piped_text

        return prompt, piped_text()
    if sys.stdin.isatty():
        die("PROMPT is '-' but nothing is piped on stdin", 'pipe the prompt in (echo "..." | bearagent run -)')
    return sys.stdin.read(), None


@click.command("run")
@click.argument("prompt")
@click.option("-a", "--agent", default=None, help="Agent to run (default: the session's agent, else default_agent).")
@click.option("-m", "--model", default=None, help="Model ref to use instead of the agent's (workspace/x, platform/x).")
@workspace_option
@click.option("--continue", "continue_", is_flag=True, help="Continue the latest session of this workspace.")
@click.option("--session", default=None, help="Continue the session with this id.")
@click.option(
    "--fork-session",
    default=None,
    metavar="SESSION",
    help="Run in a new session whose history is SESSION's conversation as it is now (`bearagent sessions fork`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print only the final record as one JSON object.")
@click.option("--stream-json", is_flag=True, help="Print the live stream protocol as JSON lines.")
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "stream-json"]),
    default=None,
    help="Print Claude Code's headless output (`claude -p --output-format ...`): text = the final answer only; "
    "json = one result object; stream-json = system/init, assistant, user and result objects as JSON lines.",
)
@click.option(
    "--permission-mode",
    default=None,
    help="Permission mode for this run (default, acceptEdits, plan, dontAsk, bypassPermissions); outranks every file.",
)
@click.option(
    "--wait-approvals",
    is_flag=True,
    help="When a tool call needs approval, leave the run waiting (exit 4) for `bearagent approvals answer` "
    "instead of denying it.",
)
@run_choice_options()
@budget_options
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def run(
    prompt: str,
    agent: str | None,
    model: str | None,
    workspace: Path | None,
    continue_: bool,
    session: str | None,
    fork_session: str | None,
    as_json: bool,
    stream_json: bool,
    output_format: str | None,
    permission_mode: str | None,
    wait_approvals: bool,
    debug: bool,
    **flags: object,
) -> None:
    """Run PROMPT once (`-` reads it from stdin; piped stdin is appended to a PROMPT) and exit: 0 success, 1 run
    failed or cancelled, 2 usage or configuration error, 3 a budget stopped the run, 4 the run waits for an
    approval (--wait-approvals)."""
    from bearagent.cli.startup import importing

    with importing("run_imports"):
        from bearagent.app.runtime import open_runtime
        from bearagent.cli.render import make_console
        from bearagent.cli.terminal_stream import attach_terminal
        from bearagent.domain.errors import BearAgentError
        from bearagent.domain.ids import RunId
        from bearagent.domain.stream import StreamEventModel, encode_stream_event
        from bearagent.runtime.observer import NullObserver, RunObserver
        from bearagent.runtime.streaming import RunTreeStream
        from bearagent.service.runner import RunOptions, RunResult

    handle_termination_like_ctrl_c()  # SIGTERM / SIGHUP from here on: as Ctrl-C (cancel the run, exit 1)
    if as_json and stream_json:
        die("--json and --stream-json exclude each other", "pick one output format")
    if output_format is not None and (as_json or stream_json):
        flag = "--json" if as_json else "--stream-json"
        die(
            f"--output-format and {flag} exclude each other",
            "use --output-format for Claude Code's shapes, or --json/--stream-json for BearAgent's own",
        )
    if continue_ and session:
        die("--continue and --session exclude each other", "use --session ID, or --continue for the latest session")
    if fork_session is not None and (continue_ or session):
        die(
            "--fork-session and --session/--continue exclude each other",
            "--fork-session starts a new session from SESSION's history; use one of them",
        )
    allow_rules, choices = run_choices(flags)
    typed, piped = read_prompt_parts(prompt)
    try:
        from bearagent.cli._config_common import load

        loaded = load(workspace)
        if permission_mode is not None:
            from bearagent.domain.permission_modes import parse_permission_mode

            permission_mode = parse_permission_mode(permission_mode, where="--permission-mode")
        runtime = open_runtime(loaded, permission_mode=permission_mode)
        from bearagent.cli._stdin import with_piped_input
        from bearagent.service.mentions import workspace_mentions

        mentioned = workspace_mentions(
            loaded, typed, add_dirs=choices.add_dirs
        )  # @path: attached, or refused before anything runs
        for note in mentioned.notes:
            click.echo(f"note: {note}", err=True)
        text = with_piped_input(mentioned.prompt, piped)
        if allow_rules:
            from bearagent.tools.permissions import PermissionRules

            PermissionRules.parse(allow=allow_rules, root=loaded.root)  # a malformed rule: refused before the run
        if choices.disallowed_tools:
            from bearagent.tools.permissions import PermissionRules

            PermissionRules.parse(deny=choices.disallowed_tools, root=loaded.root)
        if fork_session is not None:  # the new session first: its history is the origin's conversation now
            from bearagent.cli.session_fork import fork

            session = str(
                fork(loaded, runtime.store, fork_session, None, restore_files=False, force=False)[0].session_id
            )
        if session is None and not continue_:  # refused before the terminal opens the store (nothing is written)
            from bearagent.service.admission import check_model

            check_model(loaded, runtime.plans.require_agent(agent or loaded.config.default_agent), model)
        for notice in runtime.notices(agent):
            click.echo(notice, err=True)
        from bearagent.sandbox.probe import probe as probe_sandbox

        sandbox_warning = probe_sandbox(loaded.config.sandbox).warning()
        if sandbox_warning is not None:  # the one message when Bash cannot be confined: it will ask instead
            click.echo(sandbox_warning, err=True)
    except BearAgentError as exc:
        die_from(exc, debug=debug)

    def emit(event: StreamEventModel) -> None:
        from bearagent.cli.pipe import echo_line

        echo_line(encode_stream_event(event))  # `| head` closing the pipe ends the output quietly

    def emit_json(obj: object) -> None:
        import json

        click.echo(json.dumps(obj, ensure_ascii=False))

    options = RunOptions(
        agent=agent,
        model=model,
        session="continue" if continue_ else session,
        budgets=collect_budgets(flags),
        run_id=runtime.ids.new(RunId),
        wait_approvals=wait_approvals,
        allowed_tools=allow_rules,
        choices=choices,
    )

    async def go() -> RunResult:
        # --stream-json and the terminal follow the run writer (the events of the log, with run_id and seq); the
        # terminal's observer shows only the notices, which are not facts of the log
        assert options.run_id is not None
        observer: RunObserver = NullObserver()
        if stream_json:
            runtime.writer.subscribe(RunTreeStream(options.run_id, emit))
        elif output_format == "stream-json":
            from bearagent.cli.claude_output import ClaudeStream, init_extras

            extras = init_extras(runtime, agent)
            runtime.writer.subscribe(ClaudeStream(options.run_id, runtime.root, emit_json, extras))
        elif not as_json and output_format is None:
            observer = attach_terminal(runtime, options.run_id, make_console())
        return await runtime.run(text, options, observer)

    output = "stream-json" if stream_json else ("json" if as_json else "text")
    if output_format is not None:
        output = f"claude-{output_format}"
    execute_and_exit(runtime, go, output=output, debug=debug)

"""`bearagent` with no arguments: an interactive session in the workspace.

One event loop lives for the whole session (`asyncio.Runner`), so providers, MCP connections and the session lock
behave as in one long conversation. Ctrl-C during a run cancels that run (its log ends with RunCancelled) and
returns to the prompt; Ctrl-C at the prompt clears the line; Ctrl-D or `/exit` leaves. SIGTERM and SIGHUP (the
terminal closed) cancel a run as Ctrl-C does, then leave the session with exit code 1. `ask` permission decisions
are asked here: allow once, always (for this session), or deny.

Why it is over 400 lines: the session loop, its asker (the one-key approval) and its slash commands share the
session's state (`InteractiveState`) and the one event loop of the session; a command's rendering is
`session_commands.py`, the terminal's stream `terminal_stream.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.text import Text

from bearagent.app.runtime import open_runtime
from bearagent.cli._run_common import EXIT_RUN_FAILED, failure_lines, handle_termination_like_ctrl_c, summary_line
from bearagent.cli.model_hint import key_config_lines, no_model_fix
from bearagent.cli.one_key import one_key_terminal
from bearagent.cli.render import make_console, preview_arguments
from bearagent.cli.safe_text import visible
from bearagent.cli.session_commands import SESSION_COMMANDS, SessionTotals, StatusLine, run_session_command
from bearagent.cli.slash_commands import command_help, workspace_command
from bearagent.cli.terminal_stream import TerminalAttachment, attach_terminal
from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId
from bearagent.runtime.observer import NullObserver
from bearagent.runtime.plan import CommandExpansion
from bearagent.service.planner import RunChoices
from bearagent.service.runner import RunOptions, WorkspaceRuntime
from bearagent.tools.gate import AskAnswer, Asker, AskRequest

if TYPE_CHECKING:
    from bearagent.cli.memory_commands import InitRun
    from bearagent.cli.status_command import StatusCommand

HELP = """commands:
  /agent NAME       switch the session's primary agent
  /agents           list agents
  /skills           list skills
  /tools            tools of the current agent
  /model [NAME]     show or switch the model
  /mcp              MCP servers
  /permissions      permission mode and rules
  /cost             session usage
  /compact [FOCUS]  summarise the earlier turns now (FOCUS: what to keep)
  /rewind           put files and conversation back (before a prompt/tool call)
  /diff [N]         the files the last prompt (or prompt N) changed, as diffs
  /clear            start a new session
  /resume [ID]      pick an earlier session and continue it
  /memory           the memory files (AGENTS.md); edit one
  /init             let the agent write AGENTS.md from the repository
  /exit             leave (or Ctrl-D)
  !CMD              run a shell command (Bash's rules), output kept in context
keys: Enter sends · Alt-Enter or \\ then Enter: a new line · Tab completes
      Up/Down, Ctrl-R: history · Ctrl-C cancels a running answer"""
"""Every line fits 80 columns: the session's console leaves wrapping to the terminal, which breaks mid-word."""
MAX_HELP_COMMANDS = 40
"""How many workspace commands and skills `/help` lists before `and N more` (`bearagent actions list` has all)."""


def fit(line: str, width: int) -> str:
    """`line` cut to `width` columns with `…`: a listing line never wraps mid-word on the terminal."""
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


@contextlib.contextmanager
def no_control_echo() -> Generator[None, None, None]:
    """While a run draws its live region: the terminal does not echo Ctrl-C as `^C` (ECHOCTL off; Ctrl-C still
    interrupts). The echo lands after the region's last line, and when that line is full it wraps to a new row the
    region does not know of, so its last redraw started a row too low and left the frame above it on the screen:
    the partial answer was shown twice. Restored afterwards; nothing is done off a terminal."""
    try:
        import termios
    except ImportError:  # not POSIX
        yield
        return
    fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else -1
    try:
        saved = termios.tcgetattr(fd) if fd >= 0 else None
    except termios.error:
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] = saved[3] & ~termios.ECHOCTL
    with contextlib.suppress(termios.error):
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):  # after SIGHUP the terminal may be gone
            termios.tcsetattr(fd, termios.TCSANOW, saved)


@dataclass
class InteractiveState:
    agent: str
    session: str | None = None
    model: str | None = None  # -m or /model; None: the agent's own
    totals: SessionTotals = field(default_factory=SessionTotals)


def _session_rules(runtime: WorkspaceRuntime, session: str | None) -> tuple[str, ...]:
    """The rules answered "always" in the current session (kept on its record in the store)."""
    from bearagent.domain.ids import SessionId

    if session is None:
        return ()
    try:
        record = runtime.store.get_session(SessionId(session))
    except (ValueError, BearAgentError):
        return ()
    return runtime.seals.rules(session, record.allowed_rules) if record is not None else ()


def _history_file(runtime: WorkspaceRuntime) -> Path:
    return runtime.loaded.user_dir / "history"


def _setup_readline(path: Path) -> Callable[[], None]:
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        return lambda: None
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(1_000)

    def save() -> None:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)

    return save


def make_asker(console: Console, state: InteractiveState, read: Callable[[str], str]) -> Asker:
    async def ask(request: AskRequest) -> AskAnswer:
        # "always" is remembered on the session record (the approval broker stores it; the next plan allows it)
        console.print(
            Text(
                f"? {visible(request.tool_name)}({preview_arguments(request.arguments)}) needs approval", style="yellow"
            )
        )
        console.print(Text(visible(f"  {request.reason}"), style="dim"))
        if read is input and one_key_terminal():
            return await _one_key_answer(console)
        while True:
            answer = (
                (await asyncio.to_thread(read, "  allow [y]es once, [a]lways this session, [n]o? ")).strip().lower()
            )
            if answer in ("y", "yes"):
                return "allow_once"
            if answer in ("a", "always"):
                return "allow_always"
            if answer in ("n", "no", ""):
                return "deny"

    return ask


APPROVAL_KEYS: dict[str, tuple[AskAnswer, str]] = {
    "y": ("allow_once", "yes"),
    "a": ("allow_always", "always"),
    "n": ("deny", "no"),
    "\n": ("deny", "no"),
    "\x1b": ("deny", "no"),
}
"""One key answers the approval question on a terminal: y, a, n; Enter and Esc say no (the safe default)."""


async def _one_key_answer(console: Console) -> AskAnswer:
    import threading

    from bearagent.cli.one_key import read_key

    stop = threading.Event()
    prompt = "  allow [y]es once, [a]lways this session, [n]o? (one key) "  # with the answer: under 80 columns
    try:
        key = await asyncio.to_thread(read_key, prompt, "yan", stop, console.file)
    finally:
        stop.set()  # a cancelled run: the reading thread ends within 0.1 s and leaves the terminal as it was
    answer, said = APPROVAL_KEYS.get(key or "n", APPROVAL_KEYS["n"])
    console.print(said, markup=False, highlight=False)
    return answer


def interactive(
    workspace: Path | None,
    *,
    agent: str | None,
    model: str | None,
    session: str | None,
    read: Callable[[str], str] = input,
    allowed_tools: tuple[str, ...] = (),
    choices: RunChoices | None = None,
) -> None:
    """The session; `allowed_tools` and `choices` (the session's `--allowed-tools`, `--disallowed-tools`,
    `--system-prompt`, `--append-system-prompt`, `--add-dir`) apply to each of its runs, sealed in each run."""
    from bearagent.cli._config_common import load

    choices = choices or RunChoices()

    termination = handle_termination_like_ctrl_c()
    console = make_console()
    loaded = load(workspace)
    state = InteractiveState(agent=agent or loaded.config.default_agent, session=session, model=model)
    runtime = open_runtime(loaded)
    runtime.ask = make_asker(console, state, read)
    from bearagent.cli.elicitation_prompt import make_elicitation_asker

    runtime.answer_elicitation = make_elicitation_asker(console, read)  # MCP servers' questions no hook answers
    save_history = _setup_readline(_history_file(runtime))
    from bearagent.sandbox.probe import probe as probe_sandbox
    from bearagent.sandbox.settings import network_label

    sandbox = probe_sandbox(loaded.config.sandbox)
    sandbox_state = (sandbox.backend or "on") if sandbox.active else "off"
    read_prompt = read
    if read is input:  # on a terminal, the line editor (history search, pastes, multi-line, completion)
        from bearagent.cli.line_editor import workspace_reader

        status = StatusLine(runtime, sandbox_state, _status_command(runtime))
        read_prompt = (
            workspace_reader(loaded, status=lambda: status(state.agent, state.model, state.totals, state.session))
            or read
        )
    console.print(
        Text(
            visible(
                f"BearAgent · {loaded.root} · agent {state.agent} · sandbox "
                f"{sandbox.describe(network_label(loaded.config.sandbox.network))} · /help for commands"
            ),
            style="bold",
        )
    )
    if sandbox.warning() is not None:
        console.print(Text(str(sandbox.warning()), style="yellow"))
    if read is input and sys.stdin.isatty():
        from bearagent.cli.trust_door import trust_at_the_door

        trust_at_the_door(loaded, console, read)
    for notice in runtime.notices(state.agent):
        console.print(Text(visible(notice), style="yellow"))
    try:
        loaded.project(state.agent)
    except BearAgentError as exc:  # say it now, not at the first prompt (with the config lines for a key in env)
        if exc.info.code.endswith(".no_model"):
            console.print(Text(visible(f"note: {exc.info.message}"), style="yellow"))
            for line in key_config_lines() or ([f"fix: {exc.hint}"] if exc.hint else []):
                console.print(Text(visible(line), style="yellow"))
    with asyncio.Runner() as runner:
        try:
            while True:
                try:
                    line = read_prompt(f"{state.agent}> ")
                except KeyboardInterrupt:
                    console.print()
                    if termination.signal is not None:
                        break
                    continue
                except EOFError:
                    console.print()
                    break
                text = line.strip()
                if not text:
                    continue
                options = RunOptions(
                    agent=state.agent,
                    model=state.model,
                    session=state.session,
                    allowed_tools=allowed_tools,
                    choices=choices,
                )
                wrote_memory = False
                if text.startswith("/"):
                    invocation = workspace_command(text, runtime.loaded)  # .claude/commands, actions
                    if isinstance(invocation, str):
                        console.print(Text(visible(f"error: {invocation}"), style="red"))
                        continue
                    if invocation is None and text.split(maxsplit=1)[0] == "/rewind":
                        from bearagent.cli.rewind_command import rewind_in_session

                        rewind_in_session(runner, runtime, state.session, console, read)
                        continue
                    if invocation is None and text.split(maxsplit=1)[0] == "/diff":
                        from bearagent.cli.diff_command import diff_in_session

                        diff_in_session(runtime, state.session, text[len("/diff") :].strip(), console)
                        continue
                    if invocation is None and text.split(maxsplit=1)[0] == "/compact":
                        _compact(runner, runtime, state, console, text[len("/compact") :].strip() or None)
                        continue
                    if invocation is None and text.split(maxsplit=1)[0] == "/resume":
                        _resume(text[len("/resume") :].strip(), runtime, state, console, read)
                        continue
                    if invocation is None and text.split(maxsplit=1)[0] in ("/memory", "/init"):
                        init = _memory(text, runtime, console, read)  # memory_commands.py
                        if init is None:
                            continue
                        text, wrote_memory = init.prompt, True
                        options.allowed_tools = (*allowed_tools, *init.allowed_tools)
                    elif invocation is None:
                        if not _command(text, runtime, state, console):
                            break
                        continue
                    else:
                        for note in invocation.notes:
                            console.print(Text(visible(f"note: {note}"), style="yellow"))
                        text = invocation.prompt
                        options.agent = invocation.agent or state.agent
                        options.model = invocation.model or state.model
                        options.allowed_tools = (*allowed_tools, *invocation.allowed_tools)
                        if invocation.action.kind == "command":  # a command or skill: UserPromptExpansion fires
                            options.expansion = CommandExpansion.of(invocation.action, invocation.arguments)
                elif text.startswith("!"):  # the user's shell command, through Bash's rules (service/user_shell.py)
                    command = _shell_command(text, console)
                    if command is None:
                        continue
                    options.user_shell = command
                else:
                    prompt = _mentioned(text, runtime, console, choices.add_dirs)  # @path: attached, or refused
                    if prompt is None:
                        continue
                    text = prompt
                options.run_id = runtime.ids.new(RunId)  # known up front: the terminal follows it in the stream
                started = time.monotonic()
                try:
                    terminal: TerminalAttachment | None = None
                    try:
                        terminal = attach_terminal(runtime, options.run_id, console, markdown=True)
                        terminal.waiting()  # MCP servers start, the model thinks: a spinner until text arrives
                        with no_control_echo():
                            result = runner.run(runtime.run(text, options, terminal))
                    finally:
                        if terminal is not None:
                            terminal.close()
                except KeyboardInterrupt:
                    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                        console.print(Text("cancelled", style="yellow"))
                    if termination.signal is not None:
                        break
                    continue
                except BearAgentError as exc:
                    console.print(Text(visible(f"error: {exc.info.message}"), style="red"))
                    fix = no_model_fix(exc.info.code, exc.hint)
                    if fix:
                        console.print(Text(visible(f"fix: {fix}"), style="red"))
                    continue
                state.session = str(result.session_id) if result.session_id is not None else state.session
                if result.agent != state.agent:
                    state.agent = result.agent
                lines = failure_lines(result)
                if lines is not None:
                    console.print(Text(lines[0], style="red"))
                    console.print(Text(lines[1], style="red"))
                elapsed = time.monotonic() - started
                state.totals.add(result, elapsed)
                console.print(Text(summary_line(result, wall_time_s=elapsed), style="dim"))
                if wrote_memory:  # /init: the next prompt uses the file it wrote
                    from bearagent.cli.memory_commands import reload_instructions

                    reload_instructions(runtime.loaded)
        finally:
            save_history()
            with contextlib.suppress(BaseException):
                runner.run(runtime.aclose())
    if termination.signal is not None:
        sys.exit(EXIT_RUN_FAILED)


def _shell_command(text: str, console: Console) -> str | None:
    """The command of `!cmd`, or None (said in red) when there is none or it is too long."""
    from bearagent.service.user_shell import MAX_SHELL_COMMAND_CHARS

    command = text[1:].strip()
    if not command:
        console.print(Text("error: ! needs a command (e.g. !git status)", style="red"))
        return None
    if len(command) > MAX_SHELL_COMMAND_CHARS:
        console.print(Text(f"error: the command is over {MAX_SHELL_COMMAND_CHARS:,} characters", style="red"))
        return None
    return command


def _mentioned(text: str, runtime: WorkspaceRuntime, console: Console, add_dirs: tuple[str, ...]) -> str | None:
    """The prompt with its `@path` mentions attached (`service/mentions.py`); None (said in red) when one is
    refused."""
    from bearagent.service.mentions import workspace_mentions

    try:
        mentioned = workspace_mentions(runtime.loaded, text, add_dirs=add_dirs)
    except BearAgentError as exc:
        console.print(Text(visible(f"error: {exc.info.message}"), style="red"))
        if exc.hint:
            console.print(Text(visible(f"fix: {exc.hint}"), style="red"))
        return None
    for note in mentioned.notes:
        console.print(Text(visible(f"note: {note}"), style="yellow"))
    if mentioned.attached:
        console.print(Text(visible("attached: " + ", ".join(mentioned.attached)), style="dim"))
    return mentioned.prompt


def _memory(text: str, runtime: WorkspaceRuntime, console: Console, read: Callable[[str], str]) -> InitRun | None:
    """`/memory` (list, edit) or `/init` (the run that writes the memory file, returned to be run)."""
    from bearagent.cli.memory_commands import init_command, memory_command

    if text.split(maxsplit=1)[0] == "/memory":
        memory_command(runtime.loaded, console, read)
        return None
    return init_command(runtime.loaded, console, read)


def _resume(
    arg: str, runtime: WorkspaceRuntime, state: InteractiveState, console: Console, read: Callable[[str], str]
) -> None:
    """`/resume [ID]` (`resume_command.py`): the next prompt continues the session picked."""
    from bearagent.cli.resume_command import resume_command

    chosen = resume_command(arg, runtime, console, read, current=state.session)
    if chosen is None or chosen.session == state.session:
        return
    state.session = chosen.session
    state.totals = SessionTotals()  # the status line and /cost count what this session does from now on
    if chosen.agent is not None:
        state.agent = chosen.agent


def _status_command(runtime: WorkspaceRuntime) -> StatusCommand | None:
    """Claude Code's `statusLine` command, for a trusted workspace only (it is trust surface)."""
    helper = runtime.loaded.status_line
    if helper is None:
        return None
    from bearagent.cli.status_command import StatusCommand
    from bearagent.service import admission

    try:
        admission.check_trust(runtime.loaded)
    except BearAgentError:
        return None
    from bearagent.rewind.workspace_writes import record_for_env

    return StatusCommand(
        helper[0],
        runtime.loaded.root,
        runtime.loaded.child_env(),
        sandbox=runtime.loaded.config.sandbox,
        writes=record_for_env(runtime.loaded.env),
    )


class _NoticePrinter(NullObserver):
    """Shows a compaction's notices (what is compacted, retries) as they happen."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def notice(self, run_id: RunId, text: str) -> None:
        self._console.print(Text(visible(f"! {text}"), style="yellow"))


def _compact(
    runner: asyncio.Runner, runtime: WorkspaceRuntime, state: InteractiveState, console: Console, focus: str | None
) -> None:
    """`/compact [focus]`: the session's earlier turns become a summary now (`service/compacting.py`)."""
    from bearagent.service.compacting import compact_session

    if state.session is None:
        console.print(Text("nothing to compact: the session has no runs yet", style="red"))
        return
    try:
        result = runner.run(
            compact_session(
                runtime,
                state.session,
                agent=state.agent,
                model=state.model,
                focus=focus,
                observer=_NoticePrinter(console),
            )
        )
    except KeyboardInterrupt:
        console.print(Text("cancelled", style="yellow"))
        return
    except BearAgentError as exc:
        console.print(Text(visible(f"error: {exc.info.message}"), style="red"))
        if exc.hint:
            console.print(Text(visible(f"fix: {exc.hint}"), style="red"))
        return
    lines = failure_lines(result)
    if lines is not None:
        console.print(Text(lines[0], style="red"))
        console.print(Text(lines[1], style="red"))
    else:
        console.print(Text(visible(result.final), style="magenta"))
    state.totals.add(result, result.usage.wall_time_ms / 1000)


def _command(text: str, runtime: WorkspaceRuntime, state: InteractiveState, console: Console) -> bool:
    """Handle a slash command; False means leave."""
    name, _, arg = text[1:].partition(" ")
    arg = arg.strip()
    loaded = runtime.loaded
    if name in ("exit", "quit"):
        return False
    if name == "help":
        console.print(HELP, markup=False)
        lines = command_help(loaded)
        for line in lines[:MAX_HELP_COMMANDS]:
            console.print(fit(visible(line), console.width - 1), markup=False)
        if len(lines) > MAX_HELP_COMMANDS:
            more = len(lines) - MAX_HELP_COMMANDS
            console.print(f"  and {more} more (bearagent actions list, bearagent skills list)", markup=False)
    elif name == "agent":
        if not arg:
            console.print(visible(f"current agent: {state.agent}"), markup=False)
        else:
            try:  # "no agent named X" (with its did-you-mean, or why a file was skipped) is the registry's
                spec = loaded.agents.require(arg)
            except BearAgentError as exc:
                names = name_list(a.name for a in loaded.agents.all() if a.is_primary)
                console.print(Text(visible(f"{exc.info.message}; primary agents: {names}"), style="red"))
                return True
            if not spec.is_primary:
                console.print(Text(visible(f"{arg} is a subagent; switch to a primary agent"), style="red"))
            else:
                state.agent = arg
                console.print(Text(visible(f"agent: {arg}"), style="magenta"))
    elif name == "agents":
        for spec in loaded.agents.all():
            marker = "*" if spec.name == state.agent else " "
            first = visible(spec.description).split("\n", 1)[0]
            line = visible(f"{marker} {spec.name:<16} {spec.mode:<9} ") + first
            console.print(fit(line, console.width - 1), markup=False)
    elif name == "skills":
        skills = loaded.skills.all()
        if not skills:
            console.print("no skills", markup=False)
        for skill in skills:
            first = visible(skill.description).split("\n", 1)[0]
            console.print(fit(visible(f"  {skill.name:<20} ") + first, console.width - 1), markup=False)
    elif name == "tools":
        try:
            projection = loaded.project(state.agent, require_model=False)
        except BearAgentError as exc:
            console.print(Text(visible(f"error: {exc.info.message}"), style="red"))
        else:
            for tool in projection.tools:
                console.print(visible(f"  {tool.name:<24} {tool.source:<8} {tool.origin}"), markup=False)
    elif name in SESSION_COMMANDS:
        chosen = run_session_command(
            name,
            arg,
            runtime,
            agent=state.agent,
            model=state.model,
            session_rules=_session_rules(runtime, state.session),
            totals=state.totals,
            console=console,
        )
        if chosen is not None:
            state.model = chosen
    elif name == "clear":
        state.session = None
        state.totals = SessionTotals()  # the status line and /cost count the new session only
        console.print(Text("new session", style="magenta"))
    else:
        console.print(Text(visible(f"unknown command /{name}; /help lists the commands"), style="red"))
    return True


def interactive_command(ctx: click.Context) -> None:
    from bearagent.cli._run_common import run_choices

    params = ctx.params
    allowed, choices = run_choices(params)
    if allowed or choices.disallowed_tools:  # a malformed rule: refused before the session opens
        from bearagent.cli._run_common import die_from
        from bearagent.tools.permissions import PermissionRules

        try:
            PermissionRules.parse(allow=allowed, deny=choices.disallowed_tools)
        except BearAgentError as exc:
            die_from(exc, debug=False)
    interactive(
        params.get("workspace"),
        agent=params.get("agent"),
        model=params.get("model"),
        session="continue" if params.get("continue_") else params.get("session"),
        allowed_tools=allowed,
        choices=choices,
    )

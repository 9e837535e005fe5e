"""Shared pieces of the commands that start runs (`run`, `action run`, interactive): budget flags, exit codes,
error output (one line of what, one line of how to fix; a traceback only with --debug), the summary line, and
SIGTERM / SIGHUP handled like Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from bearagent.cli._choice_flags import CHOICE_FLAGS as CHOICE_FLAGS
from bearagent.cli._choice_flags import run_choice_options as run_choice_options
from bearagent.cli._die import EXIT_USAGE as EXIT_USAGE
from bearagent.cli._die import die as die
from bearagent.cli.safe_text import visible
from bearagent.domain.budgets import BUDGETS

if TYPE_CHECKING:
    from bearagent.domain.errors import BearAgentError
    from bearagent.service.planner import RunChoices
    from bearagent.service.runner import RunResult, WorkspaceRuntime

F = TypeVar("F", bound=Callable[..., object])

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_BUDGET = 3
EXIT_WAITING = 4
"""The run waits for an approval (`--wait-approvals`): answer it with `bearagent approvals answer`."""

BUDGET_FLAGS: tuple[tuple[str, str], ...] = tuple((name, text) for name, (_unit, text) in BUDGETS.items())


def budget_options(func: F) -> F:
    for field, text in reversed(BUDGET_FLAGS):
        flag = "--" + field.replace("_", "-")
        func = click.option(flag, field, type=click.IntRange(min=0), default=None, help=text)(func)
    return func


def run_choices(values: Mapping[str, object]) -> tuple[tuple[str, ...], RunChoices]:
    """The allowed rules and the `RunChoices` of the flags `run_choice_options` declared, from a command's
    parameters; a bad value is a usage error naming its flag (`_run_flags.py`)."""
    from bearagent.cli._run_flags import added_directories, prompt_text, split_rules
    from bearagent.service.planner import RunChoices

    def many(name: str) -> tuple[str, ...]:
        value = values.get(name)
        return tuple(str(v) for v in value) if isinstance(value, tuple) else ()  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

    def one(name: str) -> str | None:
        value = values.get(name)
        return value if isinstance(value, str) else None

    choices = RunChoices(
        disallowed_tools=split_rules(many("disallowed_tools"), "--disallowed-tools"),
        system_prompt=prompt_text(one("system_prompt"), "--system-prompt"),
        append_system_prompt=prompt_text(one("append_system_prompt"), "--append-system-prompt"),
        add_dirs=added_directories(many("add_dirs")),
    )
    return split_rules(many("allowed_tools"), "--allowed-tools"), choices


def collect_budgets(values: Mapping[str, object]) -> dict[str, int]:
    out: dict[str, int] = {}
    for field, _ in BUDGET_FLAGS:
        value = values.get(field)
        if isinstance(value, int):
            out[field] = value
    return out


def exit_code_for(result: RunResult) -> int:
    if result.status == "succeeded":
        return EXIT_OK
    if result.status == "waiting":
        return EXIT_WAITING
    if result.error is not None and result.error.category == "budget":
        return EXIT_BUDGET
    return EXIT_RUN_FAILED


FIXES: dict[str, str] = {
    "authentication": "check the API key variable named by `api_key_env` in the model entry",
    "permission": "check the permission rules in .bearagent/config.yaml",
    "rate_limit": "wait a moment and run again, or lower the request rate",
    "quota": "check the billing / quota of the provider account",
    "overloaded": "the provider is overloaded: run again later",
    "server": "the provider failed: run again later",
    "network": "check the network connection and `base_url` of the model entry",
    "timeout": "raise the limit the message names on the model entry (`timeout_s`, `stream_idle_timeout_s` or "
    "`max_stream_s`), or try again",
    "context_overflow": "the request did not fit in the model's window, even after compacting the history once (unless "
    "`compaction.enabled: false`): shorten the prompt, lower `compaction.keep_recent_turns`, set the model entry's "
    "`context_window` to its real size, or start a new session (omit --continue)",
    "budget": "raise the budget with the matching --max-* flag or `budgets:` in .bearagent/config.yaml",
    "content_filter": "rephrase the request",
    "max_output_tokens": "raise `max_output_tokens` on the model entry or the agent",
    "truncated_stream": "the connection to the provider broke: run again",
}


def die_from(exc: BearAgentError, *, debug: bool, code: int | None = None) -> NoReturn:
    category = exc.info.category
    fix = exc.hint or FIXES.get(category) or "see `bearagent doctor` for configuration problems"
    from bearagent.cli.model_hint import no_model_fix

    fix = no_model_fix(exc.info.code, fix)
    if code is None:
        code = EXIT_BUDGET if category == "budget" else EXIT_USAGE
    die(exc.info.message, fix, code, debug=debug)


def summary_line(result: RunResult, steps: int | None = None, *, wall_time_s: float | None = None) -> str:
    """One line: status, calls, tokens, cost, time, run id. `wall_time_s` is the time the user waited (measured by
    the command, MCP start-up included); without it, the run's own recorded wall time."""
    usage = result.usage
    parts = [result.status]
    if steps is not None:
        parts.append(f"{steps} step{'s' if steps != 1 else ''}")
    parts.append(f"{usage.model_iterations} model call{'s' if usage.model_iterations != 1 else ''}")
    parts.append(f"{usage.tool_calls} tool call{'s' if usage.tool_calls != 1 else ''}")
    parts.append(f"{usage.input_tokens + usage.output_tokens:,} tokens")
    parts.append(f"${usage.cost_microusd / 1_000_000:.4f}")
    parts.append(f"{wall_time_s if wall_time_s is not None else usage.wall_time_ms / 1000:.1f}s")
    parts.append(f"run {str(result.run_id)[:8]}")
    return " · ".join(parts)


def failure_lines(result: RunResult) -> tuple[str, str] | None:
    """The two lines a failed run prints (what, how to fix), safe for a terminal: an error message may quote what a
    provider or a model sent."""
    if result.error is None:
        return None
    fix = FIXES.get(result.error.category, f"`bearagent inspect {str(result.run_id)[:8]}` shows the run")
    return (visible(f"error: {result.error.message}"), f"fix: {fix}")


TERMINATION_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Termination:
    """Which termination signal arrived (None: none did). See `handle_termination_like_ctrl_c`."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self.installed = False


_termination = Termination()


def handle_termination_like_ctrl_c() -> Termination:
    """Make SIGTERM and SIGHUP do what Ctrl-C does, and remember that one came.

    Each is passed to whatever handles SIGINT at that moment: while a run is going, asyncio's handler, which cancels
    the run (the loop records RunCancelled, the in-flight tool is cancelled and Bash kills its process group), and a
    second signal interrupts at once; elsewhere Python's default, which raises KeyboardInterrupt. Installed once per
    process, from the main thread only (elsewhere signals are left alone)."""
    if _termination.installed:
        return _termination

    def forward(signum: int, frame: FrameType | None) -> None:
        _termination.signal = signal.Signals(signum)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIGINT ignored or left to the OS: still stop, as a terminated process must
            raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread (an embedding application)
        for sig in TERMINATION_SIGNALS:
            signal.signal(sig, forward)
        _termination.installed = True
    return _termination


def execute_and_exit(
    runtime: WorkspaceRuntime,
    start: Callable[[], Awaitable[RunResult]],
    *,
    output: str,
    debug: bool,
) -> NoReturn:
    """Run `start()` to its end (closing the runtime), print the outcome for `output` (`text`: failure lines and
    the summary on stderr; `json`: the final record; `stream-json`: nothing more; `claude-text|json|stream-json`:
    Claude Code's final text or `result` object, `cli/claude_output.py`) and exit with its code. Ctrl-C,
    SIGTERM and SIGHUP cancel the run (recorded as RunCancelled) and exit 1."""
    import asyncio
    import json

    from bearagent.cli.render import make_console
    from bearagent.cli.startup import start_up_over
    from bearagent.domain.errors import BearAgentError

    async def main() -> RunResult:
        try:
            return await start()
        finally:
            await runtime.aclose()

    err = make_console(stderr=True)
    termination = handle_termination_like_ctrl_c()
    started = time.monotonic()
    start_up_over("run")
    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        by = f" by {termination.signal.name}" if termination.signal is not None else ""
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            err.print(f"cancelled: the run was stopped{by} (its log ends with RunCancelled)")
        sys.exit(EXIT_RUN_FAILED)
    except BearAgentError as exc:
        die_from(exc, debug=debug)
    if output.startswith("claude-"):  # --output-format: Claude Code's result object / final text
        from bearagent.cli.claude_output import result_object

        record = result_object(result, duration_ms=int((time.monotonic() - started) * 1000))
        if output == "claude-text":
            click.echo(result.final)
            for line in failure_lines(result) or ():
                err.print(line, markup=False)
        else:
            click.echo(json.dumps(record, ensure_ascii=False))
    elif output == "json":
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    elif output == "text":
        lines = failure_lines(result)
        if lines is not None:
            err.print(lines[0], markup=False)
            err.print(lines[1], markup=False)
        if result.status == "waiting":
            err.print(
                f"waiting: run {str(result.run_id)[:8]} needs an approval; see it with `bearagent approvals list`, "
                f"answer it with `bearagent approvals answer {str(result.run_id)[:8]} ID allow|deny`",
                markup=False,
            )
        err.print(summary_line(result, wall_time_s=time.monotonic() - started), style="dim", markup=False)
    sys.exit(exit_code_for(result))

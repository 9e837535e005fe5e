"""`/rewind` in the interactive session, as Claude Code's: pick a prompt of the session (a numbered list), then
optionally one of its tool calls (another numbered list: the state before that call), choose what to put back (code, conversation, or both), see what would change, confirm. The rules are `bearagent
rewind`'s (`service/rewinding.py`): a file changed since by someone else is named and kept unless the user says to
overwrite it; the rewind is recorded in the log and can itself be rewound (docs/rewind.md). Prompts are workspace
users' text: shown through `safe_text.visible`, one short line each."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import SessionId
from bearagent.domain.state import RunProjection
from bearagent.service.runner import WorkspaceRuntime

MAX_LISTED = 30
"""How many of the session's latest prompts `/rewind` lists (an older one: `bearagent rewind RUN`)."""
MAX_CALLS = 40
"""How many of a prompt's tool calls `/rewind` lists (a later one: `bearagent rewind RUN --to TOOL_CALL`)."""
CHOICES = {"": "both", "b": "both", "both": "both", "c": "code", "code": "code", "n": "conversation"}
CHOICES["conversation"] = "conversation"


def session_prompts(runtime: WorkspaceRuntime, session: str | None) -> list[RunProjection]:
    """The session's prompts, oldest first: its top-level runs that started (numbered from 1 by `/rewind` and
    `/diff`)."""
    if session is None:
        return []
    runs = [
        r
        for r in runtime.store.list_runs(session_id=SessionId(session), limit=10_000)
        if r.parent_run_id is None and r.started_at is not None
    ]
    return sorted(runs, key=lambda r: r.created_at)


def _say(console: Console, text: str, style: str | None = None) -> None:
    console.print(Text(visible(text), style=style or ""), markup=False)


def rewind_in_session(
    runner: asyncio.Runner,
    runtime: WorkspaceRuntime,
    session: str | None,
    console: Console,
    read: Callable[[str], str],
) -> None:
    """Ask, show, confirm, rewind. Every answer can be left empty (or Ctrl-C / Ctrl-D) to change nothing."""
    try:
        _rewind(runner, runtime, session, console, read)
    except (KeyboardInterrupt, EOFError):
        console.print()
        _say(console, "rewind cancelled: nothing changed", "yellow")
    except BearAgentError as exc:
        _say(console, f"error: {exc.info.message}", "red")
        if exc.hint:
            _say(console, f"fix: {exc.hint}", "red")


def _rewind(
    runner: asyncio.Runner,
    runtime: WorkspaceRuntime,
    session: str | None,
    console: Console,
    read: Callable[[str], str],
) -> None:
    from bearagent.rewind.capture import capture_for
    from bearagent.service.rewinding import apply_files, prepare_rewind, record_rewind

    store = runtime.store
    runs = session_prompts(runtime, session)
    if not runs:
        _say(console, "nothing to rewind: the session has no prompts yet", "red")
        return
    shown = runs[-MAX_LISTED:]
    first_number = len(runs) - len(shown) + 1
    _say(console, "rewind to before which prompt?")
    for number, run in enumerate(shown, start=first_number):
        prompt = (run.goal or "").strip().split("\n", 1)[0]
        _say(console, f"  {number:>3}. {prompt[:100]}")
    picked = read("prompt number (Enter: cancel)> ").strip()
    if not picked:
        _say(console, "rewind cancelled: nothing changed", "yellow")
        return
    if not picked.isdigit() or not first_number <= int(picked) <= len(runs):
        _say(console, f"no prompt {picked[:20]}: type a number from {first_number} to {len(runs)}", "red")
        return
    run = runs[int(picked) - 1]
    calls = _tool_calls(store.read_events(run.run_id))
    to_call: str | None = None
    point = f"prompt {picked}"
    if calls:
        _say(console, f"before which tool call of prompt {picked}? (Enter: before the whole prompt)")
        for number, (_call, name, summary) in enumerate(calls[:MAX_CALLS], start=1):
            _say(console, f"  {number:>3}. {name} {summary}")
        if len(calls) > MAX_CALLS:
            _say(console, f"  ... and {len(calls) - MAX_CALLS} more: `bearagent rewind {run.run_id} --to TOOL_CALL`")
        which = read("tool call number (Enter: the whole prompt)> ").strip()
        if which:
            if not which.isdigit() or not 1 <= int(which) <= min(len(calls), MAX_CALLS):
                _say(console, f"no tool call {which[:20]}: type a number from 1 to {min(len(calls), MAX_CALLS)}", "red")
                return
            to_call = calls[int(which) - 1][0]
            point = f"tool call {which} of prompt {picked}"
    answer = read("restore [b]oth, [c]ode or co[n]versation? (Enter: both)> ").strip().lower()
    what = CHOICES.get(answer)
    if what is None:
        _say(console, f"{answer[:20]!r} is none of b, c, n: nothing changed", "red")
        return
    code, conversation = what in ("both", "code"), what in ("both", "conversation")
    root = runtime.loaded.root
    prepared = prepare_rewind(
        store, root, run, to_tool_call=to_call, code=code, conversation=conversation, sessions=runtime.sessions
    )
    if prepared.nothing_to_do:
        _say(console, "nothing to rewind: the files and the conversation are as they were")
        return
    for item in prepared.listing:
        mark = "  (changed since by someone else)" if item["changed_since"] else ""
        _say(console, f"  will {item['action']} {item['path']}{mark}")
    if prepared.conversation is not None:
        _say(console, f"  will rewind the conversation to before {point}")
    force = False
    if prepared.conflicts:
        _say(console, "changed since by someone else: " + ", ".join(prepared.conflicts), "yellow")
        force = read("overwrite them (their content is kept)? [y/N]> ").strip().lower() in ("y", "yes")
        if not force:
            _say(console, "rewind cancelled: nothing changed", "yellow")
            return
    if read("rewind? [y/N]> ").strip().lower() not in ("y", "yes"):
        _say(console, "rewind cancelled: nothing changed", "yellow")
        return
    capture = capture_for(root)
    rewound = apply_files(prepared, root, capture.blobs, force=force)
    if rewound is not None:
        capture.forget()
    runner.run(record_rewind(store, runtime.writer, runtime.clock, runtime.ids, prepared, rewound))
    done = len(prepared.listing)
    parts = [f"{done} file(s) put back"] if code else []
    if prepared.conversation is not None:
        parts.append(f"the conversation goes on from before {point}")
    _say(console, "rewound: " + "; ".join(parts), "magenta")


def _tool_calls(events: Sequence[Event]) -> list[tuple[str, str, str]]:
    """The run's own tool calls in the order requested: id, tool name, a short summary of its arguments (the path
    or the command it names)."""
    out: list[tuple[str, str, str]] = []
    for event in events:
        if event.event_type != "ToolCallRequested":
            continue
        payload = event.payload
        arguments = payload.get("arguments")
        summary = ""
        if isinstance(arguments, Mapping):
            for key in ("file_path", "notebook_path", "command", "path", "pattern", "url", "description"):
                value = cast(Mapping[str, object], arguments).get(key)
                if isinstance(value, str) and value:
                    summary = value.strip().split("\n", 1)[0]
                    break
        summary = summary if len(summary) <= 80 else summary[:79] + "…"
        out.append((str(payload.get("tool_call_id", "")), str(payload.get("tool_name", "?")), summary))
    return out

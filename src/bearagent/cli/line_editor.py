"""The interactive session's line editor (prompt_toolkit), used when stdin and stdout are a terminal.

- History across sessions (`~/.bearagent/prompt_history`); Up/Down walk it, Ctrl-R searches it.
- A paste is one prompt: the terminal's bracketed paste puts a multi-line paste in the buffer, newlines and all.
- Enter sends (so does Ctrl-J: some terminals send LF for Enter). Alt-Enter (or Esc then Enter), or a `\\` at
  the end of the line followed by Enter, start a new line of the same prompt.
- Tab completes slash commands (built-in and the workspace's commands) and, after `/agent `, primary agent names;
  `@src/ap` completes workspace paths (`MentionCompleter`: listed through the file tools' path safety, bounded).
- `NO_COLOR` is respected (prompt_toolkit reads it); Ctrl-C clears the line (KeyboardInterrupt), Ctrl-D on an empty
  line leaves (EOFError), as with `input()`.

Off a terminal the session reads lines with `input()`: one line is one prompt.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, merge_completers
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace


class SlashCompleter(Completer):
    """`/ag` -> `/agent`, `/agents`; `/agent p` -> `/agent plan`. `commands()` and `agents()` are asked on every
    completion, so a `/agent` switch or a reloaded workspace is seen at once."""

    def __init__(
        self,
        commands: Callable[[], Iterable[tuple[str, str]]],
        agents: Callable[[], Iterable[tuple[str, str]]],
    ) -> None:
        self._commands = commands
        self._agents = agents

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        if " " not in text:
            typed = text[1:]
            for name, meta in self._commands():
                if name.startswith(typed):
                    yield Completion(name, start_position=-len(typed), display="/" + name, display_meta=meta)
            return
        command, _, arg = text[1:].partition(" ")
        if command == "agent" and " " not in arg:
            for name, meta in self._agents():
                if name.startswith(arg):
                    yield Completion(name, start_position=-len(arg), display_meta=meta)


MAX_PATH_COMPLETIONS = 100


class MentionCompleter(Completer):
    """`look at @src/ap` -> `@src/app.py`: the last word, when it starts with `@`, completes to the entries of its
    directory in the workspace (directories end in `/`, so Tab walks down). Listed through the file tools' path
    resolution (no `..` out, no symlink out); `.git` left out; at most `MAX_PATH_COMPLETIONS`."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        if not word.startswith("@") or word.startswith("@/") or ".." in word:
            return
        typed = word[1:]
        folder, _, stem = typed.rpartition("/")
        for name, is_dir in _entries(self._root, folder):
            if name.startswith(stem) and (stem.startswith(".") or not name.startswith(".")):
                shown = name + ("/" if is_dir else "")
                yield Completion(shown, start_position=-len(stem), display=shown)


def _entries(root: Path, folder: str) -> list[tuple[str, bool]]:
    import os
    import stat

    from bearagent.domain.errors import BearAgentError
    from bearagent.tools.paths import WorkspacePaths

    try:
        fd, _rel = WorkspacePaths(root).open_dir(folder)
    except (BearAgentError, OSError):
        return []
    out: list[tuple[str, bool]] = []
    try:
        with os.scandir(fd) as listing:
            for entry in listing:
                if entry.name == ".git":
                    continue
                try:
                    is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                out.append((entry.name, is_dir))
                if len(out) >= MAX_PATH_COMPLETIONS * 10:
                    break
    finally:
        os.close(fd)
    return sorted(out)[: MAX_PATH_COMPLETIONS * 10]


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add(Keys.Escape, Keys.Enter)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add(Keys.Enter)
    @keys.add(Keys.ControlJ)
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\") and buffer.document.is_cursor_at_the_end:
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    return keys


def terminal_reader(
    history: Path,
    *,
    commands: Callable[[], Iterable[tuple[str, str]]],
    agents: Callable[[], Iterable[tuple[str, str]]],
    status: Callable[[], str] | None = None,
    root: Path | None = None,
) -> Callable[[str], str] | None:
    """A `read(prompt)` on the line editor, or None when stdin or stdout is not a terminal. `status()` is the status
    line shown under the prompt; with `root`, `@paths` complete below it."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    history.parent.mkdir(parents=True, exist_ok=True)
    session: PromptSession[str] = PromptSession(
        history=FileHistory(str(history)),
        completer=merge_completers([SlashCompleter(commands, agents), *([MentionCompleter(root)] if root else [])]),
        complete_while_typing=False,
        key_bindings=_bindings(),
        multiline=True,  # Enter is bound above: it sends; the buffer may still hold pasted or Alt-Enter newlines
        enable_history_search=False,
        mouse_support=False,
        bottom_toolbar=(lambda: FormattedText([("class:status", status())])) if status is not None else None,
        # redrawn every 2 s while you type: a background shell that ends or an MCP server that fails shows
        refresh_interval=2.0 if status is not None else 0,
    )

    def read(prompt: str) -> str:
        return session.prompt(FormattedText([("bold", prompt)]))

    return read


BUILTIN_HELP: dict[str, str] = {
    "agent": "switch the primary agent",
    "agents": "list agents",
    "clear": "start a new session",
    "cost": "tokens, cost and time of the session",
    "exit": "leave the session",
    "help": "list the commands",
    "mcp": "MCP servers and their state",
    "model": "show or switch the model",
    "permissions": "permission mode and rules in force",
    "quit": "leave the session",
    "resume": "pick an earlier session and continue it",
    "memory": "the memory files (AGENTS.md); edit one",
    "init": "let the agent write AGENTS.md from the repository",
    "skills": "list skills",
    "tools": "tools of the current agent",
}


def workspace_reader(
    loaded: LoadedWorkspace, *, status: Callable[[], str] | None = None
) -> Callable[[str], str] | None:
    """`terminal_reader` for a workspace: history in its user directory, its commands and primary agents to
    complete."""
    from bearagent.cli.slash_commands import BUILTIN_COMMANDS

    def commands() -> list[tuple[str, str]]:
        names = {name: BUILTIN_HELP.get(name, "") for name in BUILTIN_COMMANDS}
        for action in loaded.actions.all():
            names.setdefault(action.name, action.description.split("\n", 1)[0][:60])
        return sorted(names.items())

    def agents() -> list[tuple[str, str]]:
        return [(a.name, a.description.split("\n", 1)[0][:60]) for a in loaded.agents.all() if a.is_primary]

    return terminal_reader(
        loaded.user_dir / "prompt_history", commands=commands, agents=agents, status=status, root=loaded.root
    )

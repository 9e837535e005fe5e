"""Claude Code's run flags (`--allowed-tools`, `--disallowed-tools`, `--system-prompt`, `--append-system-prompt`,
`--add-dir`), declared once for every command that starts runs: `run` and the interactive session (the `bearagent`
group itself). Declarations only (click, nothing of BearAgent), so `bearagent --help` stays light; the values are
read by `_run_common.run_choices` and checked by `_run_flags`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

CHOICE_FLAGS: tuple[tuple[tuple[str, ...], str, bool, str, str], ...] = (
    (
        ("--allowed-tools", "--allowedTools"),
        "allowed_tools",
        True,
        "RULES",
        "permission rules allowed without asking, as Claude Code's --allowedTools: 'Read' 'Bash(git log *)', "
        "comma- or space-separated, repeatable. Deny rules still win.",
    ),
    (
        ("--disallowed-tools", "--disallowedTools"),
        "disallowed_tools",
        True,
        "RULES",
        "permission rules denied, as Claude Code's --disallowedTools: 'Bash' 'Edit(src/**)', comma- or "
        "space-separated, repeatable. A bare tool name takes the tool away.",
    ),
    (
        ("--system-prompt",),
        "system_prompt",
        False,
        "TEXT",
        "the agent's prompt, instead of its file's (the environment, project instructions and skills stay). "
        "@FILE reads it from a file.",
    ),
    (
        ("--append-system-prompt",),
        "append_system_prompt",
        False,
        "TEXT",
        "text appended to the system prompt. @FILE reads it from a file.",
    ),
    (
        ("--add-dir",),
        "add_dirs",
        True,
        "DIR",
        "a directory besides the workspace the file tools and a sandboxed Bash may use "
        "(as permissions.additionalDirectories); repeatable.",
    ),
)
"""Claude Code's run flags: (spellings, parameter, repeatable, metavar, help)."""


def run_choice_options(*, session: bool = False) -> Callable[[F], F]:
    """Declare Claude Code's run flags (`CHOICE_FLAGS`) on a command that starts runs: `run` (for that run) and
    the interactive session (`session=True`: for each of its runs). One declaration, so the commands cannot drift;
    read the values with `run_choices`."""
    scope = "For each run of the interactive session: " if session else "For this run: "

    def decorate(func: F) -> F:
        for spellings, param, repeatable, metavar, text in reversed(CHOICE_FLAGS):
            func = click.option(
                *spellings, param, multiple=repeatable, default=None, metavar=metavar, help=scope + text
            )(func)
        return func

    return decorate

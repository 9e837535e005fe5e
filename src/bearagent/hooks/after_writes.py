"""Where a command hook runs once the model may have written (issue 28, item 3).

A trusted hook runs workspace code: a script it names, a `node_modules/.bin` tool, a `.venv` program, a formatter
that loads plugins a JSON file names. The pins (`hooks/code_pins.py`) refuse a hook whose named code changed, but
cannot follow what a program loads from data at run time. So after the first call of the session that may write
(`rewind.written`: Bash in or out of the sandbox, Write, Edit, an MCP tool, a subagent's calls), every command hook
of the session runs in the sandbox, and so does every command hook of a workspace any run may have written in
since its last trust decision, in any process (`rewind.workspace_writes`), whatever the model put into the files it
runs: it writes only the workspace,
reaches no network and no host socket, sees no credential. When the sandbox cannot start (no bubblewrap, a refused
process limit), the hook is not run (`hook.sandbox_unavailable`): never unconfined. The opt-out is the user's own
`sandbox: {hooks_after_writes: unconfined}` (a workspace cannot set it); `sandbox: {hooks: true}` confines every
hook from the first one.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.config.workspace import installed_claude_plugins
from bearagent.rewind.written import first_write

if TYPE_CHECKING:
    from bearagent.rewind.workspace_writes import WritesRecord
    from bearagent.sandbox.probe import SandboxStatus
    from bearagent.sandbox.settings import SandboxSettings


@dataclass(frozen=True, slots=True)
class Confinement:
    """Why a command hook runs in the sandbox: `sandbox.hooks: true`, or the session's first writing call."""

    opted_in: bool
    after: str | None = None
    """The call after which hooks are confined (`the model's Bash call c1`); None when `opted_in`."""
    earlier_run: str | None = None
    """The workspace whose record of an earlier run's writes confines it (`rewind/workspace_writes.py`)."""

    def unavailable(self, status: SandboxStatus, what: str = "command hook") -> str:
        """The failure text when the sandbox cannot start: the hook (or server) was not run."""
        if self.opted_in:
            from bearagent.sandbox.launch import unavailable_message

            return unavailable_message(f"the {what}", "hooks", status)
        trust = ""
        if self.earlier_run is not None:
            again = f"bearagent trust -w {shlex.quote(self.earlier_run)}"
            trust = f", or review what the runs changed and run `{again}` (a trust decision clears the record)"
        return (
            f"the {what} was not run: {self.after} may have written files this {what} runs or loads, so from "
            f"then on the workspace's hooks run in the sandbox, and the sandbox cannot start ({status.reason}). To "
            "fix: install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`), or set `sandbox: "
            "{hooks_after_writes: unconfined}` in your user config to run hooks unconfined after the model's writes"
            + trust
        )


def confinement(
    sandbox: SandboxSettings | None, root: Path, session_id: str | None, writes: WritesRecord | None = None
) -> Confinement | None:
    """Whether this session's command hook runs in the sandbox now, and why; None: it runs as configured. After
    the session's first call that may write (this process), or after any run's (`writes`: any process, any
    session) recorded in the workspace since its last trust decision."""
    if sandbox is not None and sandbox.hooks:
        return Confinement(opted_in=True)
    if sandbox is not None and sandbox.hooks_after_writes == "unconfined":
        return None
    first = first_write(root, session_id)
    if first is not None:
        return Confinement(opted_in=False, after=first.describe())
    earlier = writes.since_trust(root) if writes is not None else None
    if earlier is None:
        return None
    return Confinement(opted_in=False, after=earlier.describe(), earlier_run=os.path.realpath(root))


_INTERPRETER = re.compile(r"^(sh|bash|dash|zsh|ksh|python[0-9.]*|node|bun|deno|ruby|perl|php|tsx|ts-node)$")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php")


def own_scripts(argv: Sequence[str], root: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    """The hook's own script when it lies outside the workspace (`~/.claude/hooks/fmt.sh`, a plugin's script under
    the user's BearAgent directory): the program, or the script an interpreter runs. In the sandbox the home is
    hidden, so it stays readable there, and nothing else of the hidden home does. Only a file that is a script (by
    its suffix or its execute bit) counts, so a hook that names a key file does not expose it. A plugin's hook
    (`CLAUDE_PLUGIN_ROOT=<root> ...`, as the plugin loader writes it) keeps its whole plugin folder readable, since
    its script imports its siblings (hookify's `core/`), but only a folder of a plugin the user installed
    (`installed_claude_plugins`): a hook's text cannot expose any other folder that way."""
    words = list(argv)
    if len(words) == 3 and words[1] == "-c" and os.path.basename(words[0]) == "sh":
        try:
            words = shlex.split(words[2])
        except ValueError:
            return ()
    out: list[str] = []
    while words and "=" in words[0] and not words[0].startswith(("/", "~", ".")):
        name, _, value = words[0].partition("=")  # `CLAUDE_PLUGIN_ROOT=... CLAUDE_PLUGIN_DATA=... cmd`
        if name == "CLAUDE_PLUGIN_ROOT" and (plugin := _installed_plugin(value, env)) is not None:
            out.append(plugin)
        words = words[1:]
    candidates = words[:1]
    if words and _INTERPRETER.match(os.path.basename(words[0])) and len(words) > 1:
        candidates.append(next((w for w in words[1:] if not w.startswith("-")), ""))
    workspace = os.path.realpath(root)
    for word in candidates:
        path = os.path.realpath(os.path.expanduser(word)) if word.startswith(("/", "~")) else ""
        if not path or path == workspace or path.startswith(workspace + os.sep) or not os.path.isfile(path):
            continue
        if path.endswith(_SCRIPT_SUFFIXES) or os.access(path, os.X_OK):
            out.append(path)
    return tuple(out)


def _installed_plugin(value: str, env: Mapping[str, str]) -> str | None:
    """`value` as a folder of a plugin the user installed, resolved; None for anything else."""
    if not value.startswith("/"):
        return None
    folder = os.path.realpath(value)
    installed = os.path.realpath(installed_claude_plugins(env))
    if os.path.dirname(folder) != installed or not os.path.isdir(folder):
        return None
    return folder

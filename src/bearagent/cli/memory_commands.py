"""`/memory` and `/init` in the interactive session: the project's memory file (Claude Code's CLAUDE.md habit).

BearAgent's memory is the project instructions file (`AGENTS.md`, else `CLAUDE.md`, at the workspace root, with its
`@path` imports), the user's `~/.claude/CLAUDE.md` before it and `CLAUDE.local.md` after it
(`config/instructions.py`); they go into the top-level primary agent's system prompt.

- `/memory` lists the memory files and whether each is loaded: the project file (with its imports), the user's
  (`~/.claude/CLAUDE.md`, every project's) and the local one (`CLAUDE.local.md`, this project's, yours), all three
  read as Claude Code reads them (`config/instructions.py`). It asks which to edit and opens it in `$VISUAL`, else
  `$EDITOR`, else `vi` (the user's own environment: trusted); an absent file is created by the editor (and
  `~/.claude/` for the user's). The memory is read again after the editor closes, so the next prompt uses it.
- `/init` asks the agent to write the project file from the repository, as Claude Code's `/init` does: the run
  may write that one file without asking (the run's `Write(/AGENTS.md)` / `Edit(/AGENTS.md)` rules; deny rules still
  win). When the file exists, `/init` asks first, and with no it leaves the file as it is and runs nothing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace

INIT_PROMPT = """Analyse this repository and write {name} at its root: the file future agent sessions read first \
when they work here ({action}).

Include, briefly and only what is true of this repository:
1. How to build, lint and test it, and how to run a single test (the exact commands).
2. The high-level architecture: the big parts, how they fit together, where things live; what a newcomer needs to \
read several files to understand.
3. Conventions the code follows (style, naming, error handling, tests) that are not obvious from one file.

Read what exists first (README, build files, CI config, {other}); do not invent commands, do not list every file, \
do not repeat generic advice. Start the file with a one-line title. Write it with the Write tool (or Edit it when \
it exists)."""


@dataclass(frozen=True, slots=True)
class MemoryFile:
    level: str
    path: Path
    loaded: bool
    note: str


def project_file(root: Path) -> Path:
    """The project memory file: the `AGENTS.md` or `CLAUDE.md` that is there (AGENTS.md first), else `AGENTS.md`."""
    from bearagent.config.instructions import INSTRUCTION_FILES

    for name in INSTRUCTION_FILES:
        if os.path.lexists(root / name):
            return root / name
    return root / INSTRUCTION_FILES[0]


def memory_files(loaded: LoadedWorkspace) -> list[MemoryFile]:
    """The project, user and local memory files, and whether each is loaded."""
    from bearagent.config.instructions import LOCAL_FILE, USER_FILE_SHOWN, user_memory_path

    instructions = loaded.instructions
    sources = instructions.sources if instructions is not None else ()
    project = project_file(loaded.root)
    if instructions is not None and project.name in sources:
        size = len(instructions.text)
        imports = len(instructions.imports)
        note = f"loaded, {size:,} characters in all" + (
            f", {imports} import{'s' if imports != 1 else ''}" if imports else ""
        )
    elif project.exists():
        note = "not loaded (see `bearagent doctor`)"
    else:
        note = "not there yet: /init writes it, or edit it here"
    user = user_memory_path(loaded.env) or Path(os.path.expanduser("~")) / ".claude" / "CLAUDE.md"
    local = loaded.root / LOCAL_FILE
    return [
        MemoryFile("project", project, project.name in sources, note),
        MemoryFile("user", user, USER_FILE_SHOWN in sources, _note(user, USER_FILE_SHOWN in sources, "all projects")),
        MemoryFile("local", local, LOCAL_FILE in sources, _note(local, LOCAL_FILE in sources, "this project, yours")),
    ]


def _note(path: Path, loaded: bool, scope: str) -> str:
    if loaded:
        return f"loaded: {scope}"
    return f"{scope}; not loaded (see `bearagent doctor`)" if path.exists() else f"{scope}; not there yet"


def reload_instructions(loaded: LoadedWorkspace) -> list[str]:
    """Read the memory files again (after an edit or `/init`); the problems found, as lines to show."""
    from bearagent.config.instructions import load_instructions
    from bearagent.domain.diagnostics import Diagnostic
    from bearagent.workspace import ProjectInstructions

    problems: list[Diagnostic] = []
    found = load_instructions(loaded.root, problems, env=loaded.env)
    loaded.instructions = (
        ProjectInstructions(found.path, found.text, found.imports, found.sources) if found is not None else None
    )
    return [d.message for d in problems if d.severity in ("error", "warning")]


def editor_command(env: Mapping[str, str]) -> list[str]:
    """`$VISUAL`, else `$EDITOR`, else `vi`, split as a shell would (`code --wait`)."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return [value]
    return ["vi"]


def memory_command(loaded: LoadedWorkspace, console: Console, read: Callable[[str], str]) -> None:
    """`/memory`: list the memory files, then open the one picked in the editor."""
    files = memory_files(loaded)
    for index, memory in enumerate(files, start=1):
        shown = _shown(memory.path, loaded.root)
        console.print(visible(f"  {index}  {memory.level:<8} {shown}  ({memory.note})"), markup=False)
    try:
        answer = read("edit which? [1 project, 2 user, 3 local, Enter: none] ").strip()
    except (EOFError, KeyboardInterrupt):
        console.print()
        return
    if not answer:
        return
    if answer not in ("1", "2", "3"):
        console.print(Text(visible(f"{answer!r}: pick 1, 2 or 3; nothing opened"), style="red"))
        return
    path = files[int(answer) - 1].path
    if answer == "2":  # the user's own folder: made when absent, so the editor can create the file
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            console.print(Text(visible(f"error: cannot create {path.parent}: {exc.strerror}"), style="red"))
            return
    command = [*editor_command(os.environ), str(path)]
    try:
        done = subprocess.run(command, cwd=loaded.root, check=False)
    except OSError as exc:
        console.print(Text(visible(f"error: cannot start the editor {command[0]!r}: {exc.strerror}"), style="red"))
        console.print(Text("fix: set VISUAL or EDITOR to an editor on your PATH", style="red"))
        return
    if done.returncode != 0:
        console.print(Text(visible(f"the editor exited with {done.returncode}"), style="yellow"))
    for problem in reload_instructions(loaded):
        console.print(Text(visible(f"note: {problem}"), style="yellow"))
    picked = memory_files(loaded)[int(answer) - 1]
    state = "loaded" if picked.loaded else "not loaded"
    console.print(
        Text(visible(f"memory: {_shown(path, loaded.root)} {state}; the next prompt uses it"), style="magenta")
    )


@dataclass(frozen=True, slots=True)
class InitRun:
    """What `/init` runs: the prompt and the rules that let the run write the memory file."""

    prompt: str
    allowed_tools: tuple[str, ...]
    path: Path


def init_command(loaded: LoadedWorkspace, console: Console, read: Callable[[str], str]) -> InitRun | None:
    """`/init`: the run that writes the project memory file, or None (the file exists and the user said no)."""
    path = project_file(loaded.root)
    name = path.name
    exists = os.path.lexists(path)
    if exists:
        try:
            answer = read(f"{name} exists: let the agent rewrite it from the repository? [y/N] ").strip().lower()
        except (EOFError, KeyboardInterrupt):
            console.print()
            answer = ""
        if answer not in ("y", "yes"):
            console.print(Text(visible(f"{name} left as it is"), style="magenta"))
            return None
    other = "CLAUDE.md, .cursorrules, .github/copilot-instructions.md if there are any"
    action = f"improve the existing {name}: keep what is right, fix what is wrong" if exists else "create it"
    prompt = INIT_PROMPT.format(name=name, action=action, other=other)
    rules = (f"Write(/{name})", f"Edit(/{name})") if exists else (f"Write(/{name})",)  # the root file only
    return InitRun(prompt=prompt, allowed_tools=rules, path=path)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        home = os.path.expanduser("~")
        return "~" + str(path)[len(home) :] if str(path).startswith(home) else str(path)

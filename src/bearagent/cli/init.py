"""`bearagent init`: scaffold `.bearagent/` with a config that works offline (a scripted model), an example agent,
an example action and a .gitignore for the state database. Refuses to overwrite anything."""

from __future__ import annotations

from pathlib import Path

import click

from bearagent.cli._config_common import emit_json, fail, json_option
from bearagent.runtime.state_files import SELF_IGNORE, STATE_GITIGNORE

CONFIG_YAML = """\
# BearAgent workspace config. Every key: docs/config.md
kind: project
default_agent: helper
default_model: demo

models:
  # A scripted model replays .bearagent/scripts/hello.yaml: it works offline, for demos and tests.
  demo:
    provider: scripted
    script: scripts/hello.yaml
  # A real model: uncomment, export OPENAI_API_KEY, and set `default_model: gpt`.
  # gpt:
  #   provider: openai
  #   api: responses
  #   model: gpt-5-mini
  #   api_key_env: OPENAI_API_KEY

budgets:
  max_model_iterations: 50
  max_tool_calls: 200
"""

HELLO_SCRIPT = """\
# Turns of the scripted model `demo`, one per model call (see docs/config.md#models).
turns:
  - text: "Let me look at what is in this workspace."
    tool_calls:
      - {name: Glob, arguments: {pattern: "*"}}
  - text: "Hello from BearAgent! This answer comes from the scripted model in .bearagent/scripts/hello.yaml. Point `default_model` in .bearagent/config.yaml at a real provider to talk to an LLM."
"""

HELPER_AGENT = """\
---
description: A careful helper for this workspace. Explores and explains the files, and edits them or runs commands when asked (each edit and command as the permission mode allows).
mode: primary
tools: [Read, Glob, Grep, Edit, Write, Bash, TodoWrite, Skill]
subagents: [explore]
---
You are a helpful assistant for this workspace. Find what the task needs with Glob and Grep, read the relevant
parts with Read, and cite what you used as `path:line`. When the user asks for a change, make it with Edit or Write
and check it (run the tests or the command that shows it works with Bash). If the answer is not in the workspace,
say so plainly instead of guessing.
"""

SUMMARIZE_ACTION = """\
---
description: Summarize one file of the workspace in a few bullet points.
agent: helper
inputs:
  type: object
  properties:
    path: {type: string, description: "the file to summarize, relative to the workspace root"}
  required: [path]
---
Read $path and summarize it in at most five bullet points, most important first.
"""


FILES = {
    "config.yaml": CONFIG_YAML,
    "scripts/hello.yaml": HELLO_SCRIPT,
    "agents/helper.md": HELPER_AGENT,
    "actions/summarize.md": SUMMARIZE_ACTION,
    ".gitignore": STATE_GITIGNORE,
}


def _same_file(path: Path, text: str) -> bool:
    """`path` holds `text` (for the .gitignore: also the one a run wrote in a folder it created, which ignores
    itself)."""
    same = {text, text + SELF_IGNORE} if text == STATE_GITIGNORE else {text}
    try:
        return not path.is_symlink() and path.read_text(encoding="utf-8") in same
    except (OSError, UnicodeDecodeError):
        return False


def scaffold(root: Path) -> list[Path]:
    """Write the scaffold under `root/.bearagent/`; raises FileExistsError naming the first file that exists."""
    base = root / ".bearagent"
    # the .gitignore a run already wrote (the same text) is no reason to refuse: it is kept as it is
    files = {rel: text for rel, text in FILES.items() if rel != ".gitignore" or not _same_file(base / rel, text)}
    targets = [base / rel for rel in files]
    for target in targets:
        if target.exists() or target.is_symlink():
            raise FileExistsError(str(target))
    for rel, content in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    # Trust: the scaffold defines no hooks, MCP servers or shell-executing config, so there is nothing to trust
    # yet. If it ever does, trust what it created here (SPEC §15: `init` trusts what it creates).
    return targets


@click.command("init")
@click.option(
    "-w",
    "--workspace",
    "workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory to initialise (default: the current directory).",
)
@json_option
def init(workspace: Path | None, as_json: bool) -> None:
    """Create .bearagent/ here: config.yaml (a scripted model that works offline), an example agent and action, and
    a .gitignore for the state database. Never overwrites existing files."""
    root = (workspace or Path.cwd()).resolve()
    if not root.is_dir():
        fail(f"{root} is not a directory", "create it first, or pass an existing directory to -w")
    try:
        created = scaffold(root)
    except FileExistsError as exc:
        fail(
            f"{exc.args[0]} already exists; init never overwrites files",
            "remove the existing file, or edit .bearagent/ by hand (see docs/config.md)",
        )
    if as_json:
        emit_json({"workspace": str(root), "created": [str(p) for p in created]})
        return
    click.echo(f"Initialised BearAgent workspace in {root}")
    for path in created:
        click.echo(f"  created {path.relative_to(root)}")
    click.echo('\nTry: bearagent run "hello"   (then `bearagent agents list`, `bearagent doctor`)')

"""Custom slash commands in Claude Code's format: `.claude/commands/**/*.md` and `.bearagent/commands/**/*.md`.

Each file becomes an action (`ActionSpec(kind="command")`) in the one action registry, so it is a slash command in
the interactive session (`/review 42`), `bearagent action run review 42`, and an `action__<name>` tool for an agent
whose `actions` names it. Names follow the file path: `.claude/commands/review.md` is `review`, and
`.claude/commands/frontend/component.md` is `frontend:component` (the ecosystem's namespaced form); `/component`
also finds it while no other command has that last part.

Frontmatter (all optional; lenient as Claude Code): `description` (default: the body's first line),
`argument-hint`, `allowed-tools` (permission rules pre-approved while the command runs, Claude Code's meaning; a
workspace command's are on the trust surface), `model` (a model entry name; a Claude model alias or id that is no
entry is a warning and the agent's model is used), `agent` (which agent runs it; default: the session's, or
`default_agent`), `disable-model-invocation` and `hide-from-slash-command-tool` (Anthropic's ralph-wiggum plugin;
both accepted: commands are never offered to a model unless an agent's `actions` names them), `arguments` (names of the positional arguments). `context`, `hooks`, `when_to_use` and the
like are reported as not supported.

The body is the prompt: `$ARGUMENTS` is the argument string as typed, `$ARGUMENTS[N]` the N-th argument (0-based)
and `$1` … `$9` the first to ninth (1-based, as on Claude Code's custom-commands page), `$name` the argument at the
position of `name` in `arguments`, split with shell quoting;
`\\$1` is a literal `$1`, and an unmatched `$N` stays as it is. A body with none of these gets the arguments appended
as `ARGUMENTS: <value>`, as Claude Code does.

What a command file cannot do here, on purpose (a workspace command file is untrusted, like every workspace file):
- `` !`cmd` `` lines (and ```` ```! ```` blocks) are never run. Each is replaced by a note naming the command, so the
  model can run it through `Bash`, where the permission rules, hooks and the sandbox apply.
- `@path` attaches the file's content only for a regular file inside the workspace, read with the file tools' path
  safety (no `..`, no symlink out, no device); anything else stays as typed. At most 20 files and 256 KiB in all.

Why it is over 400 lines: the file format (frontmatter keys, their Claude Code spellings and warnings) and the
rendering of `$ARGUMENTS`, `$N`, named arguments and `!`/`@` expansions are one contract of one file kind.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from pydantic import ValidationError

from bearagent.config.files import FrontmatterDoc
from bearagent.config.layers import Candidate
from bearagent.config.tool_lists import tool_list
from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import ActionSpec
from bearagent.registries._base import (
    argument_names,
    first_error,
    frontmatter_candidates,
    frontmatter_reporter,
    unknown_key,
)

DEFAULT_INPUTS: dict[str, object] = {
    "type": "object",
    "properties": {"arguments": {"type": "string", "description": "free-form arguments ($ARGUMENTS)"}},
}
"""The inputs of an action that declares none, and of every command: one free-form `arguments` string. Here (not in
`actions`, which imports this module for `command_candidates`) so the two modules do not import each other."""

COMMAND_KEYS = frozenset(
    {
        "description",
        "argument-hint",
        "allowed-tools",
        "model",
        "agent",
        "disable-model-invocation",
        "hide-from-slash-command-tool",
        "name",
        "arguments",
    }
)
UNSUPPORTED_COMMAND_KEYS = frozenset(
    {
        "context",
        "hooks",
        "when_to_use",
        "user-invocable",
        "disallowed-tools",
        "effort",
        "paths",
        "shell",
        "background",
        "version",
    }
)
MAX_COMMAND_FILES = 2_000
MAX_ATTACHED_FILES = 20
MAX_ATTACHED_BYTES = 256 * 1024

_PLACEHOLDER = re.compile(r"\\\$(?:ARGUMENTS|\d)|\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d)")
_SHELL_INLINE = re.compile(r"(?:(?<=\s)|^)!`([^`\n]+)`", re.MULTILINE)
_SHELL_BLOCK = re.compile(r"^```!\s*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_FILE_REF = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_./~-][^\s`'\"<>|;&()]*)", re.MULTILINE)
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})


def command_files(directory: Path | None) -> list[tuple[str, Path]]:
    """`(name, path)` for each `*.md` below `directory`, recursively (hidden and vendored folders skipped);
    the name is the relative path without `.md`, with `/` written as `:`."""
    if directory is None or not directory.is_dir():
        return []
    out: list[tuple[str, Path]] = []
    for path in sorted(directory.rglob("*.md")):
        rel = path.relative_to(directory)
        if any(part.startswith(".") or part in _SKIP_DIRS for part in rel.parts[:-1]):
            continue
        if not path.is_file() or path.name.lower() == "readme.md":
            continue
        out.append((":".join((*rel.parts[:-1], path.stem)), path))
        if len(out) >= MAX_COMMAND_FILES:
            break
    return out


def parse_command(doc: FrontmatterDoc, source: Source, name: str) -> tuple[ActionSpec | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    add = frontmatter_reporter(doc, diags)
    data = doc.data
    for key in data:
        if key in COMMAND_KEYS:
            continue
        if key in UNSUPPORTED_COMMAND_KEYS:
            add(
                "warning",
                "command.unsupported_key",
                key,
                f"Claude Code command key {key!r} is not supported by BearAgent and is ignored",
                "remove it, or keep it knowing it has no effect here",
            )
            continue
        add("warning", "config.unknown_key", key, *unknown_key(key, COMMAND_KEYS, f"{key!r} in command file"))
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        description = str(description)
    if not description or not description.strip():
        description = _first_line(doc.body) or f"custom command /{name}"
    texts: dict[str, str | None] = {}
    for key in ("argument-hint", "model", "agent"):
        value = data.get(key)
        if value is None:
            texts[key] = None
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            texts[key] = str(value)
        elif key == "argument-hint" and isinstance(value, list):  # an unquoted `[pr-number] [priority]`
            texts[key] = " ".join(f"[{v}]" for v in cast(list[object], value))
        else:
            add("warning", "command.invalid_field", key, f"{key} must be a string; it is ignored", f"quote {key}")
            texts[key] = None
    allowed_raw = data.get("allowed-tools")
    allowed = tool_list(allowed_raw, spaces=False) if allowed_raw is not None else ()
    if allowed is None:
        add(
            "warning",
            "command.invalid_field",
            "allowed-tools",
            "allowed-tools must be a list or a comma-separated string of tool rules; ignored",
            "write `allowed-tools: Bash(git add:*), Bash(git status:*)`",
        )
        allowed = ()
    from bearagent.registries.skills import rule_problem

    good: list[str] = []
    for entry in allowed:
        problem = rule_problem(entry)
        if problem is None:
            good.append(entry)
        else:
            add(
                "warning",
                "command.invalid_field",
                "allowed-tools",
                f"allowed-tools entry {entry!r} is not a permission rule ({problem}); it pre-approves nothing",
                "write entries like `Bash(git diff:*)` or `Read`",
            )
    names = argument_names(data.get("arguments"))
    if names is None:
        add(
            "warning",
            "command.invalid_field",
            "arguments",
            "arguments must be names (letters, digits, '_'), as a list or a space-separated string; ignored",
            "write `arguments: [issue, priority]`",
        )
    if _SHELL_INLINE.search(doc.body) or _SHELL_BLOCK.search(doc.body):
        add(
            "info",
            "command.shell_not_run",
            None,
            f"command /{name} has `!` shell lines; BearAgent never runs them from a command file (they are replaced "
            "by a note, and the model may run them with Bash under the permission rules)",
            "nothing to do; see docs/claude-code.md#commands",
        )
    try:
        spec = ActionSpec(
            name=name,
            description=" ".join(description.split())[:4096],
            agent=texts["agent"],
            model=texts["model"],
            inputs=DEFAULT_INPUTS,  # type: ignore[arg-type]
            template=doc.body,
            source=str(doc.path),
            level=source.level,
            origin=source.id,
            kind="command",
            argument_hint=(texts["argument-hint"] or "")[:512] or None,
            allowed_tools=tuple(good),
            argument_names=names or (),
        )
    except ValidationError as exc:
        key, problem = first_error(exc)
        add(
            "error",
            "command.invalid",
            None if key == "name" else key,
            f"command /{name}: {key}: {problem}; the file was skipped",
            "rename the file with letters, digits, '-', '_' and '.' only" if key == "name" else f"fix `{key}`",
        )
        return None, diags
    return spec, diags


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:200]
    return ""


def command_candidates(sources: Iterable[Source], diags: list[Diagnostic]) -> list[Candidate[ActionSpec]]:
    """Every command file of `sources` (each a commands directory), parsed; broken files add diagnostics only."""
    candidates: list[Candidate[ActionSpec]] = []
    for source in sources:
        prefix = f"{source.namespace}:" if source.namespace else ""
        named = {path: prefix + name for name, path in command_files(source.directory)}

        def parse(
            doc: FrontmatterDoc, src: Source, named: Mapping[Path, str] = named
        ) -> tuple[ActionSpec | None, list[Diagnostic]]:
            return parse_command(doc, src, named[doc.path])

        files = [(source, path) for path in named]
        candidates.extend(
            frontmatter_candidates(
                files,
                diags,
                what="command file",
                parse=parse,
                known_keys=COMMAND_KEYS | UNSUPPORTED_COMMAND_KEYS,
                optional_frontmatter=True,
            )
        )
    return candidates


# ---- rendering ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RenderedCommand:
    """The prompt a command invocation sends, and what the user should be told about it (`notes`)."""

    prompt: str
    notes: tuple[str, ...] = ()
    attached: tuple[str, ...] = ()


@dataclass
class _Attachments:
    root: Path | None
    files: list[tuple[str, str]] = field(default_factory=lambda: [])
    notes: list[str] = field(default_factory=lambda: [])
    size: int = 0


def split_arguments(arguments: str) -> list[str]:
    """Shell-style splitting of an argument string (plain whitespace when the quoting is unbalanced)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def _placeholders(names: tuple[str, ...]) -> re.Pattern[str]:
    """`_PLACEHOLDER` plus `$name` for each named argument (groups 3: an escaping backslash, 4: the name), in one
    pattern so a substituted value is never scanned again. Longer names first (`$issue_id` before `$issue`)."""
    if not names:
        return _PLACEHOLDER
    ordered = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(_PLACEHOLDER.pattern + r"|(\\?)\$(" + ordered + r")(?![A-Za-z0-9_])")


def render_command(action: ActionSpec, arguments: str, *, root: Path | None) -> RenderedCommand:
    """The prompt of `/name arguments` (see the module docstring for the substitutions)."""
    args = split_arguments(arguments)
    used = False

    def replace(match: re.Match[str]) -> str:
        nonlocal used
        whole = match.group(0)
        if whole.startswith("\\"):
            return whole[1:]
        used = True
        if match.re is not _PLACEHOLDER and match.group(4) is not None:  # a named argument
            index = action.argument_names.index(match.group(4))
            return args[index] if index < len(args) else ""
        if match.group(1) is not None:
            index = int(match.group(1))
            return args[index] if index < len(args) else ""
        if match.group(2) is not None:
            index = int(match.group(2))
            if index == 0 or index > len(args):
                return whole  # `$0` and an unmatched `$N` stay as they are
            return args[index - 1]
        return arguments

    notes: list[str] = []
    template = _SHELL_BLOCK.sub(lambda m: _not_run(m.group(1).strip(), notes), action.template)
    template = _SHELL_INLINE.sub(lambda m: _not_run(m.group(1).strip(), notes), template)
    prompt = _placeholders(action.argument_names).sub(replace, template)
    if not used and arguments.strip():
        prompt = f"{prompt.rstrip()}\n\nARGUMENTS: {arguments.strip()}"
    attachments = _Attachments(root)
    for match in _FILE_REF.finditer(prompt):
        _attach(match.group(1), attachments)
    if attachments.files:
        blocks = "\n\n".join(f'<file path="{rel}">\n{text.rstrip()}\n</file>' for rel, text in attachments.files)
        prompt = f"{prompt.rstrip()}\n\n{blocks}"
    return RenderedCommand(
        prompt=prompt.strip(),
        notes=(*notes, *attachments.notes),
        attached=tuple(rel for rel, _ in attachments.files),
    )


def _not_run(command: str, notes: list[str]) -> str:
    notes.append(f"not run: `{command}` (BearAgent never runs `!` lines of command files)")
    return (
        f"[not run: `{command}` — BearAgent does not run shell commands from command files; run it with the Bash tool "
        "if you need its output]"
    )


def _attach(ref: str, into: _Attachments) -> None:
    from bearagent.config.safe_read import read_workspace_text

    if into.root is None or ref.startswith("~") or ref.startswith("/"):
        return
    rel = ref.rstrip(".,:;!?")
    if not rel or any(r == rel for r, _ in into.files):
        return
    path = into.root / rel
    try:
        if not path.is_file():
            return
    except OSError:
        return
    if len(into.files) >= MAX_ATTACHED_FILES:
        into.notes.append(f"@{rel} not attached: at most {MAX_ATTACHED_FILES} files")
        return
    problems: list[Diagnostic] = []
    try:
        text = read_workspace_text(into.root, path, problems, what=f"@{rel}")
    except ValueError:
        return
    if text is None:
        into.notes.append(f"@{rel} not attached: " + (problems[0].message if problems else "unreadable"))
        return
    size = len(text.encode("utf-8"))
    if into.size + size > MAX_ATTACHED_BYTES:
        into.notes.append(f"@{rel} not attached: the attachments would exceed {MAX_ATTACHED_BYTES // 1024} KiB")
        return
    into.size += size
    into.files.append((rel, text))


class ModelLookup(Protocol):
    def get(self, ref: str) -> object | None: ...


def command_model(action: ActionSpec, models: ModelLookup) -> str | None:
    """The model a command or action runs with: an action's `model` as written (a wrong one is an error at run
    time); a command's only when it names a model entry (Claude Code files name Claude models: `haiku`,
    `claude-3-5-haiku-20241022`), else None, the agent's model (a load warning says so)."""
    if action.model is None or action.kind != "command":
        return action.model
    return action.model if models.get(action.model) is not None else None


def command_model_diagnostics(actions: Iterable[ActionSpec], models: ModelLookup) -> list[Diagnostic]:
    """A warning for each command whose `model` names no model entry (the same message for every file with the same
    model, so the run-start summary folds them into one line with a count)."""
    out: list[Diagnostic] = []
    for action in actions:
        if action.kind == "command" and action.model is not None and models.get(action.model) is None:
            out.append(
                Diagnostic(
                    severity="warning",
                    code="command.model_inherited",
                    message=f"command model {action.model!r} is not a model entry; the command runs with the agent's "
                    "model",
                    source=action.source,
                    subject=action.name,
                    field="model",
                    fix=f"add a `{action.model}:` entry under `models:` in config.yaml, or remove `model:`",
                )
            )
    return out

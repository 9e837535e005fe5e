"""SkillRegistry: Agent Skills folders (`skills/<name>/SKILL.md`) with lenient loading and a budgeted catalog.

Claude Code's `user-invocable` (false: not a slash command), `disable-model-invocation` (true: not in the agents'
catalog nor their `Skill` tool, only `/<name>` loads it) and `argument-hint` (shown by `/help`) are read: a skill is
also the slash command `/<name>` (`cli/slash_commands.py`), as Claude Code merged commands into skills."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import cast

from bearagent.config.files import FrontmatterDoc
from bearagent.config.layers import Candidate
from bearagent.config.safe_read import refusal, source_root
from bearagent.config.tool_lists import tool_list
from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import SkillSpec
from bearagent.registries._base import (
    LayeredRegistry,
    argument_names,
    frontmatter_candidates,
    frontmatter_reporter,
    unknown_key,
)

SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def valid_skill_name(name: str) -> str:
    """A name the Agent Skills rules accept, close to `name`: lowercase, every run of other characters (`.`, `_`,
    spaces) one hyphen, no hyphen at either end, at most 64 characters (`repo.explorer` -> `repo-explorer`)."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].strip("-")
    return cleaned or "skill"


SKILL_KEYS = frozenset(
    {
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
        "user-invocable",
        "argument-hint",
        "disable-model-invocation",
        "arguments",
    }
)
# Claude Code extensions: accepted, reported as ignored (never silently dropped).
CLAUDE_SKILL_KEYS = frozenset(
    {
        "context",
        "agent",
        "paths",
        "when_to_use",
        "model",
        "version",
        "disallowed-tools",
        "effort",
        "background",
        "shell",
    }
)
MAX_BUNDLED_FILES = 200
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})


class SkillRegistry(LayeredRegistry[SkillSpec]):
    def catalog(self, names: Iterable[str] | None = None, *, budget_chars: int) -> SkillCatalog:
        """The `<available_skills>` block for `names` (default: all). Over budget, descriptions are dropped from the
        end of the (alphabetical) list first, then whole entries; `dropped_descriptions`/`dropped_skills` say which."""
        chosen = [s for s in (self.get(n) for n in (sorted(names) if names is not None else self.names())) if s]
        return build_catalog(chosen, budget_chars)


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    text: str
    included: tuple[str, ...]
    dropped_descriptions: tuple[str, ...]
    dropped_skills: tuple[str, ...]

    @property
    def truncated(self) -> bool:
        return bool(self.dropped_descriptions or self.dropped_skills)


def _entry(skill: SkillSpec, with_description: bool) -> str:
    if with_description:
        return (
            f"<skill><name>{escape(skill.name)}</name><description>{escape(skill.description)}</description></skill>\n"
        )
    return f"<skill><name>{escape(skill.name)}</name></skill>\n"


def build_catalog(skills: Sequence[SkillSpec], budget_chars: int) -> SkillCatalog:
    head, tail = "<available_skills>\n", "</available_skills>"
    if not skills:
        return SkillCatalog("", (), (), ())
    full = [_entry(s, True) for s in skills]
    short = [_entry(s, False) for s in skills]
    parts = list(full)
    total = len(head) + len(tail) + sum(len(p) for p in parts)
    dropped_desc: list[str] = []
    index = len(parts) - 1
    while total > budget_chars and index >= 0:
        total -= len(parts[index]) - len(short[index])
        parts[index] = short[index]
        dropped_desc.append(skills[index].name)
        index -= 1
    dropped_skills: list[str] = []
    while total > budget_chars and parts:
        removed = parts.pop()
        total -= len(removed)
        dropped_skills.append(skills[len(parts)].name)
    included = tuple(s.name for s in skills[: len(parts)])
    dropped_desc = [n for n in dropped_desc if n not in dropped_skills]
    text = head + "".join(parts) + tail if parts else ""
    return SkillCatalog(text, included, tuple(sorted(dropped_desc)), tuple(sorted(dropped_skills)))


def find_skill_file(directory: Path) -> Path | None:
    for name in ("SKILL.md", "skill.md"):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def skill_dirs(root: Path | None, diagnostics: list[Diagnostic]) -> list[tuple[Path, Path]]:
    """`(skill_dir, SKILL.md)` for each subdirectory of `root`; a folder with Markdown but no SKILL.md is a warning."""
    if root is None or not root.is_dir():
        return []
    found: list[tuple[Path, Path]] = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            if child.is_file() and child.suffix == ".md" and child.name.lower() != "readme.md":
                diagnostics.append(
                    Diagnostic(
                        severity="warning",
                        code="skill.not_in_folder",
                        message=f"{child.name} is directly in the skills directory; skills are folders and it was skipped",
                        source=str(child),
                        fix=f"move it to {child.stem}/SKILL.md",
                    )
                )
            continue
        skill_file = find_skill_file(child)
        if skill_file is None:
            if any(child.glob("*.md")) or (child / "skill.json").exists():
                diagnostics.append(
                    Diagnostic(
                        severity="warning",
                        code="skill.missing_skill_md",
                        message=f"folder {child.name}/ has no SKILL.md; it was skipped",
                        source=str(child),
                        fix=f"name the skill's entry file {child.name}/SKILL.md (with `name` and `description` frontmatter)",
                    )
                )
            continue
        found.append((child, skill_file))
    return found


def _bundled_files(directory: Path, entry: Path, ws_root: Path | None = None) -> tuple[str, ...]:
    """The skill's other files (relative paths). For a workspace skill (`ws_root` set) a file that is a symlink out
    of the workspace, or not a regular file, is left out: the Skill tool could not read it anyway."""
    files: list[str] = []
    for path in sorted(directory.rglob("*")):
        if len(files) >= MAX_BUNDLED_FILES:
            break
        rel = path.relative_to(directory)
        if path == entry or any(part in _SKIP_DIRS for part in rel.parts) or not path.is_file():
            continue
        if ws_root is not None and refusal(ws_root, path) is not None:
            continue
        files.append(rel.as_posix())
    return tuple(files)


def parse_skill(doc: FrontmatterDoc, directory: Path, source: Source) -> tuple[SkillSpec | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    path = doc.path
    add = frontmatter_reporter(doc, diags)
    data = doc.data
    for key in data:
        if key in SKILL_KEYS:
            continue
        if key in CLAUDE_SKILL_KEYS:
            add(
                "warning",
                "skill.unsupported_key",
                key,
                f"Claude Code skill key {key!r} is not supported by BearAgent and is ignored",
                "remove it, or keep it knowing it has no effect here",
            )
            continue
        add("warning", "config.unknown_key", key, *unknown_key(key, SKILL_KEYS, f"{key!r} in SKILL.md"))
    dir_name = directory.name
    name = data.get("name")
    if name is None:
        add(
            "warning",
            "skill.missing_name",
            None,
            f"SKILL.md has no `name`; using the folder name {dir_name!r}",
            f"add `name: {dir_name}`",
        )
    elif name != dir_name:
        add(
            "warning",
            "skill.name_mismatch",
            "name",
            f"skill name {name!r} does not match its folder {dir_name!r}; it is loaded as {dir_name!r} (the folder name)",
            f"set `name: {dir_name}` or rename the folder to {name}",
        )
    if not SKILL_NAME_RE.match(dir_name) or len(dir_name) > 64:
        add(
            "warning",
            "skill.invalid_name",
            "name",
            f"skill name {dir_name!r} breaks the Agent Skills rules (1-64 lowercase letters, digits and single hyphens)",
            f"rename the folder to {valid_skill_name(dir_name)!r}",
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        add(
            "error",
            "skill.missing_description",
            "description" if "description" in data else None,
            f"skill {dir_name!r} has no description, so the model could never choose it; it was skipped",
            "add `description: <what it does and when to use it>` (1-1024 characters)",
        )
        return None, diags
    description = description.strip()
    if len(description) > 1024:
        add(
            "warning",
            "skill.description_too_long",
            "description",
            f"description is {len(description)} characters (the limit is 1024); it costs catalog budget",
            "shorten it to at most 1024 characters",
        )
    metadata: dict[str, str] = {}
    if isinstance(data.get("metadata"), dict):
        metadata = {str(k): str(v) for k, v in cast(dict[object, object], data["metadata"]).items()}
    elif "metadata" in data:
        add(
            "warning",
            "skill.invalid_field",
            "metadata",
            "metadata must be a mapping of string keys to string values; ignored",
            "write `metadata: {author: me}`",
        )
    allowed = data.get("allowed-tools")
    allowed_tools = tool_list(allowed, spaces=True) if allowed is not None else ()
    if allowed_tools is None:
        add(
            "warning",
            "skill.invalid_field",
            "allowed-tools",
            "allowed-tools must be a list or a space- or comma-separated string of tool rules; ignored",
            "write `allowed-tools: Bash(git add:*), Bash(git diff:*)`",
        )
        allowed_tools = ()
    for entry in allowed_tools:
        problem = rule_problem(entry)
        if problem is not None:
            add(
                "warning",
                "skill.invalid_field",
                "allowed-tools",
                f"allowed-tools entry {entry!r} is not a permission rule ({problem}); it pre-approves nothing",
                "write entries like `Bash(git diff:*)` or `Read`",
            )
    allowed_tools = tuple(e for e in allowed_tools if rule_problem(e) is None)
    texts: dict[str, str | None] = {}
    for key in ("license", "compatibility"):
        value = data.get(key)
        texts[key] = str(value) if value is not None else None
    hint = data.get("argument-hint")
    if isinstance(hint, list):  # an unquoted `[issue-number]` is a YAML list
        hint = " ".join(f"[{v}]" for v in cast(list[object], hint))
    invocable = _flag(data.get("user-invocable", True))
    if invocable is None:
        add(
            "warning",
            "skill.invalid_field",
            "user-invocable",
            "user-invocable must be true or false; the skill stays a slash command",
            "write `user-invocable: false`",
        )
    names = argument_names(data.get("arguments"))
    if names is None:
        add(
            "warning",
            "skill.invalid_field",
            "arguments",
            "arguments must be names (letters, digits, '_'), as a list or a space-separated string; ignored",
            "write `arguments: [issue, priority]`",
        )
    hidden = _flag(data.get("disable-model-invocation", False))
    if hidden is None:
        add(
            "warning",
            "skill.invalid_field",
            "disable-model-invocation",
            "disable-model-invocation must be true or false; the model may load the skill",
            "write `disable-model-invocation: true`",
        )
    spec = SkillSpec(
        name=dir_name,
        description=description[:4096],
        body=doc.body,
        license=texts["license"],
        compatibility=texts["compatibility"],
        metadata=metadata,
        allowed_tools=allowed_tools,
        directory=str(directory),
        files=_bundled_files(directory, path, source_root(source)),
        source=str(path),
        level=source.level,
        origin=source.id,
        user_invocable=invocable is not False,
        model_invocable=hidden is not True,
        argument_names=names or (),
        argument_hint=str(hint)[:512] if hint is not None and str(hint).strip() else None,
    )
    return spec, diags


def _flag(value: object) -> bool | None:
    """A boolean as Claude Code reads one in skill frontmatter (`true`, `yes`, `on`, `1`, and their opposites)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    return None


def rule_problem(entry: str) -> str | None:
    """Why `entry` is not a permission rule BearAgent understands, or None."""
    from bearagent.tools.permissions import PermissionRule, RuleError

    try:
        PermissionRule.parse(entry, "allow")
    except RuleError as exc:
        return exc.info.message.split(" is invalid: ", 1)[-1].split(". ", 1)[0]
    return None


def load_skills(sources: Iterable[Source], *, extra_dirs: Iterable[tuple[Source, Path]] = ()) -> SkillRegistry:
    """Scan each source's directory for skill folders and resolve precedence."""
    diags: list[Diagnostic] = []
    candidates: list[Candidate[SkillSpec]] = []
    pairs: list[tuple[Source, Path | None]] = [(s, s.directory) for s in sources]
    pairs.extend(extra_dirs)
    for source, root in pairs:
        files = [(source, skill_file) for _, skill_file in skill_dirs(root, diags)]
        candidates.extend(
            frontmatter_candidates(
                files, diags, what="SKILL.md", parse=_parse_in_folder, known_keys=SKILL_KEYS | CLAUDE_SKILL_KEYS
            )
        )
    return SkillRegistry.from_candidates(candidates, diags, kind="skill")


def _parse_in_folder(doc: FrontmatterDoc, source: Source) -> tuple[SkillSpec | None, list[Diagnostic]]:
    return parse_skill(doc, doc.path.parent, source)

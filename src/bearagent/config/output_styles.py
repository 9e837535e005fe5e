"""Output styles (Claude Code's `outputStyle`): instructions added to the system prompt of the top-level primary
agent that change how it answers, not what it can do.

Built-in: `default` (nothing added), `explanatory`, `learning`. Custom: Markdown files with frontmatter (`name`,
`description`, `keep-coding-instructions`) in `.bearagent/output-styles/`, `.claude/output-styles/` (with `compat`) and
the user's `$BEARAGENT_HOME/output-styles/`; the workspace's shadow the user's, `.bearagent/` shadows `.claude/`.
Names match case-insensitively (`Explanatory` is `explanatory`). The style in force is `outputStyle` of the highest
Claude Code settings file that sets one. A style is prompt text like AGENTS.md: it needs no trust.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bearagent.config.files import load_frontmatter
from bearagent.config.model import ConfigFile
from bearagent.domain.diagnostics import Diagnostic

MAX_STYLE_FILES = 200
MAX_STYLE_CHARS = 32_768
STYLE_KEYS = ("name", "description", "keep-coding-instructions")


@dataclass(frozen=True, slots=True)
class OutputStyle:
    name: str
    description: str
    text: str
    source: str = "built-in"


BUILTIN_STYLES: dict[str, OutputStyle] = {
    "default": OutputStyle("default", "The agent's own prompt, nothing added.", ""),
    "explanatory": OutputStyle(
        "Explanatory",
        "Does the task and explains the choices made along the way.",
        "Besides doing the task, help the user understand the codebase and the reasoning behind your choices. "
        "Before and after writing code, add short insights (two or three points) about the implementation choices, "
        "the patterns this codebase uses and the trade-offs involved, marked with a line '★ Insight'. Keep them "
        "specific to the code at hand rather than general programming advice.",
    ),
    "learning": OutputStyle(
        "Learning",
        "Works with the user: explains, and asks them to write small, meaningful pieces of code themselves.",
        "Work with the user as a collaborative teacher. Explain your choices with short insights marked '★ Insight'. "
        "Where a piece of the change is small and instructive (a design decision, an error-handling branch, a "
        "function of 2 to 10 lines), do not write it yourself: leave a clearly marked TODO(human) in the code and "
        "ask the user to write it, saying what it must do, where it goes and what to consider. Do the rest of the "
        "task yourself.",
    ),
}


def style_dirs(root: Path, user_dir: Path, *, compat: bool) -> list[Path]:
    """Where custom styles live, the winning directory first."""
    dirs = [root / ".bearagent" / "output-styles"]
    if compat:
        dirs.append(root / ".claude" / "output-styles")
    dirs.append(user_dir / "output-styles")
    return dirs


def chosen_style(claude_files: Sequence[ConfigFile]) -> tuple[str, str] | None:
    """`(name, settings file)` of the highest Claude Code settings file that sets `outputStyle`, or None."""
    for cf in reversed(claude_files):
        name = cf.settings.get("output_style")
        if isinstance(name, str):
            return name, str(cf.path)
    return None


def load_output_style(
    chosen: tuple[str, str] | None, dirs: Sequence[Path], diagnostics: list[Diagnostic]
) -> OutputStyle | None:
    """The style in force (None for `default` or none chosen). A name that is neither built-in nor a style file is
    a warning naming the styles there are; the default then applies."""
    if chosen is None:
        return None
    name, where = chosen
    key = name.strip().lower()
    custom = _custom_styles(dirs, diagnostics)
    style = custom.get(key) or BUILTIN_STYLES.get(key)
    if style is None:
        known = sorted({*(s.name for s in BUILTIN_STYLES.values()), *(s.name for s in custom.values())})
        diagnostics.append(
            Diagnostic(
                severity="warning",
                code="config.unknown_output_style",
                message=f"outputStyle {name!r} is neither a built-in style nor a file in output-styles/; the default "
                "style is used",
                source=where,
                field="outputStyle",
                fix=f"use one of: {', '.join(known)}, or add .claude/output-styles/{key}.md",
            )
        )
        return None
    return style if style.text else None


def _custom_styles(dirs: Sequence[Path], diagnostics: list[Diagnostic]) -> dict[str, OutputStyle]:
    found: dict[str, OutputStyle] = {}
    for directory in reversed(dirs):  # the lowest first: a higher directory's style of the same name wins
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md"))[:MAX_STYLE_FILES]:
            if not path.is_file():
                continue
            doc = load_frontmatter(path, diagnostics, what="output style", known_keys=STYLE_KEYS, optional=True)
            if doc is None:
                continue
            raw_name = doc.data.get("name")
            name = raw_name.strip() if isinstance(raw_name, str) and raw_name.strip() else path.stem
            description = doc.data.get("description")
            text = doc.body.strip()
            if len(text) > MAX_STYLE_CHARS:
                diagnostics.append(
                    Diagnostic(
                        severity="warning",
                        code="config.output_style_too_long",
                        message=f"output style {name!r} is longer than {MAX_STYLE_CHARS:,} characters; it was cut",
                        source=str(path),
                        fix="shorten it",
                    )
                )
                text = text[:MAX_STYLE_CHARS]
            found[name.lower()] = OutputStyle(
                name, description if isinstance(description, str) else "", text, source=str(path)
            )
    return found

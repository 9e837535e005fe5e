"""The values of Claude Code's run flags (`--allowed-tools`, `--disallowed-tools`, `--system-prompt`,
`--append-system-prompt`, `--add-dir`), checked and bounded; every bad value is a usage error naming the flag
(`_choice_flags.run_choice_options` declares the flags, `_run_common.run_choices` reads them)."""

from __future__ import annotations

from pathlib import Path

from bearagent.cli._die import die

MAX_CLI_RULES = 200
MAX_RULE_CHARS = 1_000


def split_rules(values: tuple[str, ...], flag: str) -> tuple[str, ...]:
    """Permission rules from `values`, each a comma- or space-separated list (`Read,Grep` or `"Bash(git log *) Read"`,
    as Claude Code takes them); separators inside parentheses belong to the rule. Bounded: at most `MAX_CLI_RULES`
    rules of at most `MAX_RULE_CHARS` characters, else a usage error naming the flag."""
    rules: list[str] = []
    for value in values:
        depth, current = 0, ""
        for char in value:
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(depth - 1, 0)
            if depth == 0 and (char == "," or char.isspace()):
                if current:
                    rules.append(current)
                current = ""
                continue
            current += char
        if current:
            rules.append(current)
    if len(rules) > MAX_CLI_RULES:
        die(f"{flag}: {len(rules)} rules, more than {MAX_CLI_RULES}", "put lasting rules in permissions.allow instead")
    for rule in rules:
        if len(rule) > MAX_RULE_CHARS:
            die(f"{flag}: a rule of {len(rule):,} characters (at most {MAX_RULE_CHARS:,})", "shorten the rule")
    return tuple(dict.fromkeys(rules))


def prompt_text(value: str | None, flag: str) -> str | None:
    """A `--system-prompt` / `--append-system-prompt` value: the text, or with `@FILE` the file's (UTF-8, the
    user's own file: any path). Bounded by `MAX_RUN_PROMPT_CHARS`; a missing file is a usage error naming it."""
    from bearagent.domain.run_events import MAX_RUN_PROMPT_CHARS

    if value is None:
        return None
    text = value
    if value.startswith("@") and len(value) > 1:
        path = Path(value[1:]).expanduser()
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_RUN_PROMPT_CHARS * 4 + 1)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror or str(exc)
            die(f"{flag} {value}: cannot read {path}: {why}", "name a readable UTF-8 text file after @")
    if not text.strip():
        die(f"{flag} is empty", f"give the text, or leave {flag} out")
    if len(text) > MAX_RUN_PROMPT_CHARS:
        die(
            f"{flag}: {len(text):,} characters (at most {MAX_RUN_PROMPT_CHARS:,})",
            "shorten it; put standing instructions in AGENTS.md or the agent's file",
        )
    return text


def added_directories(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--add-dir` values as absolute real paths (relative ones from the current directory, `~` expanded), each an
    existing directory other than `/`; at most `MAX_RUN_ADD_DIRS`. Anything else is a usage error naming it."""
    import os

    from bearagent.domain.run_events import MAX_RUN_ADD_DIRS

    if len(values) > MAX_RUN_ADD_DIRS:
        die(f"--add-dir given {len(values)} times (at most {MAX_RUN_ADD_DIRS})", "add fewer directories")
    out: list[str] = []
    for value in values:
        real = os.path.realpath(os.path.expanduser(value))
        if not os.path.isdir(real):
            die(f"--add-dir {value}: not a directory ({real})", "create it, or fix the path")
        if real == os.path.sep:
            die("--add-dir /: the whole file system is not a working directory", "name the directory you need")
        if real not in out:
            out.append(real)
    return tuple(out)

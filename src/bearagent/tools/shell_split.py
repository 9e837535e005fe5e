"""Split a shell command line into the simple commands permission rules are checked against.

Quote-aware (single quotes, double quotes, backslash escapes). Splits on `&&`, `||`, `;`, `|`, `|&`, `&` and
newlines; command substitutions (`$(...)`, backticks, `<(...)`, `>(...)`) are checked as commands of their own.
Leading environment assignments and wrappers (`timeout`, `time`, `nice`, `nohup`, `stdbuf`, `command`, `builtin`,
`noglob`, bare `xargs`) are stripped, as Claude Code does.
"""

from __future__ import annotations

import re

_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SIMPLE_WRAPPERS = frozenset({"time", "nohup", "command", "builtin", "noglob", "xargs"})


def split_commands(command: str) -> list[str]:
    """Every simple command in `command`, normalised (wrappers stripped, whitespace collapsed)."""
    parts: list[str] = []
    _split_into(command, parts, depth=0)
    out: list[str] = []
    for part in parts:
        cleaned = strip_wrappers(part)
        if cleaned:
            out.append(cleaned)
    return out


def has_substitution(command: str) -> bool:
    return "$(" in command or "`" in command or "<(" in command or ">(" in command


def _split_into(command: str, parts: list[str], depth: int) -> None:
    if depth > 8:
        parts.append(command)
        return
    buf: list[str] = []
    i, n = 0, len(command)
    quote: str | None = None

    def flush() -> None:
        text = "".join(buf).strip()
        if text:
            parts.append(text)
        buf.clear()

    while i < n:
        ch = command[i]
        if quote == "'":
            buf.append(ch)
            if ch == "'":
                quote = None
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            buf.append(command[i : i + 2])
            i += 2
            continue
        if quote == '"':
            if ch == '"':
                quote = None
                buf.append(ch)
                i += 1
                continue
            if (ch == "$" and command.startswith("$(", i)) or ch == "`":
                i = _substitution(command, i, parts, depth, buf)
                continue
            buf.append(ch)
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            buf.append(ch)
            i += 1
            continue
        if (ch == "$" and command.startswith("$(", i)) or ch == "`" or (ch in "<>" and command.startswith("(", i + 1)):
            i = _substitution(command, i, parts, depth, buf)
            continue
        if ch in "\n;":
            flush()
            i += 1
            continue
        if ch == "&":
            if command.startswith("&&", i):
                flush()
                i += 2
                continue
            if (i > 0 and command[i - 1] in "<>") or command.startswith("&>", i):
                buf.append(ch)  # redirection like 2>&1 or &>file
                i += 1
                continue
            flush()
            i += 1
            continue
        if ch == "|":
            flush()
            i += 2 if command.startswith(("||", "|&"), i) else 1
            continue
        buf.append(ch)
        i += 1
    flush()


def _substitution(command: str, i: int, parts: list[str], depth: int, buf: list[str]) -> int:
    """Cut the substitution starting at `i` out into its own parts; leave a placeholder in `buf`."""
    if command[i] == "`":
        end = command.find("`", i + 1)
        end = len(command) if end < 0 else end
        _split_into(command[i + 1 : end], parts, depth + 1)
        buf.append("$(…)")
        return end + 1
    start = i + 2
    level, j = 1, start
    while j < len(command) and level:
        if command[j] == "(":
            level += 1
        elif command[j] == ")":
            level -= 1
        j += 1
    inner = command[start : j - 1 if level == 0 else j]
    _split_into(inner, parts, depth + 1)
    buf.append("$(…)")
    return j


def strip_wrappers(part: str) -> str:
    words = part.split()
    while words:
        head = words[0]
        if _ASSIGN_RE.match(head) or head in _SIMPLE_WRAPPERS:
            words = words[1:]
        elif head == "nice":
            words = words[1:]
            if words and words[0] == "-n" and len(words) > 1:
                words = words[2:]
            elif words and re.fullmatch(r"-n?-?\d+", words[0]):
                words = words[1:]
        elif head == "stdbuf":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif head == "timeout":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-s", "-k", "--signal", "--kill-after") else words[1:]
            if words and re.fullmatch(r"[\d.]+[smhd]?", words[0]):
                words = words[1:]
        else:
            break
    return " ".join(words)

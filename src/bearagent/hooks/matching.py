"""Which handlers an event selects: a group's `matcher`, then a handler's `if` (Claude Code's rules for both).

- `matcher`: None, "" and "*" match everything; only `[A-Za-z0-9_-, |]` is an exact name or a `|`/`,` list;
  anything else is a regular expression that must match the WHOLE name (`mcp__memory__.*`). The delegation tool
  answers to both of its names: `Agent` (Claude Code's name since v2.1.63, what hooks receive as `tool_name`) and
  `Task` (its old name, BearAgent's).
- `if` (`HookHandlerSpec.condition`): one permission rule in Claude Code's syntax (`Bash(git *)`, `Edit(*.ts)`,
  `Agent(code-reviewer)`). It applies to the tool events only; on any other event a handler with `if` never runs,
  as in Claude Code. A rule selects a call as a deny rule would match it: a compound Bash command is selected when
  any of its parts (command substitutions included) matches; a Bash command that cannot be parsed (unbalanced
  quotes) selects the handler (fail open: the hook runs). It is a filter, not a security boundary.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path

from bearagent.domain._base import JsonValue
from bearagent.hooks.hook_input import TOOL_EVENTS

_SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_\-, |]+$")
TOOL_NAME_ALIASES: Mapping[str, tuple[str, ...]] = {"Agent": ("Agent", "Task"), "Task": ("Task", "Agent")}
"""Names a matcher may use for one tool: the delegation tool is `Agent` to Claude Code and `Task` to BearAgent."""


@lru_cache(maxsize=512)
def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """A predicate over one name (see the module docstring). Raises `ValueError` for a regex that does not
    compile."""
    if matcher is None or matcher.strip() in ("", "*"):
        return lambda _name: True
    if _SIMPLE_MATCHER.match(matcher):
        names = frozenset(part.strip() for part in re.split(r"[|,]", matcher) if part.strip())
        return lambda name: name in names
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"matcher {matcher!r} is not a valid regular expression: {exc}") from None
    return lambda name: pattern.fullmatch(name) is not None


def matcher_matches(matcher: str | None, target: str | None) -> bool:
    """Whether a group's matcher selects `target` (None = the event has no matcher support: everything runs). A
    tool with two names (`Agent` / `Task`) is selected by a matcher of either."""
    check = compile_matcher(matcher)
    if target is None:
        return True
    return any(check(name) for name in TOOL_NAME_ALIASES.get(target, (target,)))


@lru_cache(maxsize=256)
def _condition_rule(condition: str, root: str) -> object:
    from bearagent.tools.permissions import PermissionRule, RuleError

    try:
        return PermissionRule.parse(condition, "deny", root=Path(root))
    except RuleError as exc:
        return exc


def condition_error(condition: str, root: Path) -> str | None:
    """Why `condition` is not a permission rule (checked when the hook loads), or None."""
    from bearagent.tools.permissions import RuleError

    found = _condition_rule(condition, str(root))
    if isinstance(found, RuleError):
        return found.info.message.replace("permissions.deny: rule", "rule", 1)
    return None


def condition_selects(condition: str | None, event: str, fields: Mapping[str, JsonValue], root: Path) -> bool:
    """Whether a handler with `if: condition` runs for this event (see the module docstring)."""
    from bearagent.tools.permissions import PermissionRule, PermissionRules

    if condition is None:
        return True
    if event not in TOOL_EVENTS:
        return False
    rule = _condition_rule(condition, str(root))
    if not isinstance(rule, PermissionRule):
        return True  # a rule the registry refused never gets here; fail open rather than drop a hook
    tool_name = fields.get("tool_name")
    tool_input = fields.get("tool_input")
    if not isinstance(tool_name, str):
        return False
    arguments: Mapping[str, JsonValue] = tool_input if isinstance(tool_input, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]
    names = TOOL_NAME_ALIASES.get(tool_name, (tool_name,))
    if "Bash" in names and rule.names_tool("Bash"):
        command = arguments.get("command")
        if isinstance(command, str) and not _parses(command):
            return True
    rules = PermissionRules(deny=[rule])
    return any(rules.evaluate(name, arguments, root) is not None for name in names)


def _parses(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:
        return False
    return True


__all__ = [
    "TOOL_NAME_ALIASES",
    "compile_matcher",
    "condition_error",
    "condition_selects",
    "matcher_matches",
]

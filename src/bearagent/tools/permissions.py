"""Permission rules in Claude Code syntax: `Tool`, `Tool(specifier)`, evaluated deny, then ask, then allow.

Specifiers by tool:
- `Bash(npm run test *)`: `*` wildcards; a trailing ` *` keeps a word boundary (`ls *` does not match `lsof`); the
  legacy `:*` suffix equals ` *`. Compound commands are split (see `shell_split`) and every part is checked: any
  part denied -> deny, any part asking -> ask, allowed only if every part is allowed.
- `Read(path)`, `Edit(path)`, `Write(path)`, `MultiEdit(path)`, `NotebookEdit(path)`, `NotebookRead(path)`,
  `Glob(path)`, `Grep(path)`, `LS(path)`: gitignore-style patterns (`pathspec`),
  relative to the workspace root (`/x` and `./x` too), `//abs/path` absolute, `~/x` the home directory. A path in
  an additional directory (outside the workspace) is matched by absolute rules and by the rules that match at any
  depth (`.env`, `*.pem`, `**/secrets/**`); a rule anchored to the workspace (`/src/**`, `docs/x.md`) never matches
  it.
  `Read` rules also cover Glob, Grep, LS and NotebookRead (and a `Read` deny also blocks the editing tools on the
  path); `Edit` rules also cover Write, MultiEdit and NotebookEdit, as in Claude Code.
- `WebFetch(domain:example.com)`, `WebFetch(domain:*.example.com)` (subdomains at any depth, not the apex; any
  other `*` stays within one label).
- `Skill(name)`, `Task(agent)` / `Agent(agent)`: glob on the skill / subagent name.
- `mcp__server` (every tool of that server), `mcp__server__tool`, `mcp__server__*`.
- `Tool(param:value)`: any other tool, matched on one top-level argument (glob on its string form).
A malformed rule is a load error naming the rule, never silently ignored.

Why this module is longer than most: it is one syntax, parsed and evaluated together. How a rule is
parsed decides how it matches (a Bash pattern, a path spec, a domain, a name glob), and the rule set's deny > ask >
allow evaluation (compound Bash commands checked part by part, a `Read` deny covering Edit and Write) reads those
matchers directly; both change whenever Claude Code's syntax does, so they stay in one place.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias
from urllib.parse import urlsplit

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.tools.shell_split import split_commands

if TYPE_CHECKING:
    import pathspec

RuleKind: TypeAlias = Literal["allow", "ask", "deny"]

_RULE_RE = re.compile(r"^(?P<tool>[A-Za-z][A-Za-z0-9_.:*-]{0,127})(?:\((?P<spec>.*)\))?$", re.DOTALL)
PATH_TOOLS: Mapping[str, frozenset[str]] = {
    "Read": frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"}),
    "Edit": frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"}),
    "Write": frozenset({"Write"}),
    "MultiEdit": frozenset({"MultiEdit"}),
    "NotebookEdit": frozenset({"NotebookEdit"}),
    "Glob": frozenset({"Glob"}),
    "Grep": frozenset({"Grep"}),
    "LS": frozenset({"LS"}),
    "NotebookRead": frozenset({"NotebookRead"}),
}
_PATH_ARG = {
    "Read": "file_path",
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "NotebookRead": "notebook_path",
    "Glob": "path",
    "Grep": "path",
    "LS": "path",
}
_NAME_ARG = {"Skill": "name", "Task": "subagent_type", "Agent": "subagent_type"}
_NO_SPECIFIER = frozenset({"TodoWrite"})


class RuleError(BearAgentError):
    """A permission rule that cannot be understood."""


def _rule_error(kind: str, rule: str, why: str, how: str) -> RuleError:
    return RuleError(
        ErrorInfo.of(
            "configuration",
            "invalid_permission_rule",
            f"permissions.{kind}: rule {rule!r} is invalid: {why}. {how}",
            rule=rule[:200],
            list=kind,
        )
    )


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One parsed rule. `matches(tool_name, arguments, root)` says whether it applies to a call."""

    raw: str
    tool: str
    specifier: str | None
    _bash: re.Pattern[str] | None = field(default=None, repr=False)
    _paths: pathspec.GitIgnoreSpec | None = field(default=None, repr=False)
    _abs_prefix: str | None = field(default=None, repr=False)
    _domain: str | None = field(default=None, repr=False)
    _param: tuple[str, str] | None = field(default=None, repr=False)
    path_lines: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def parse(cls, raw: str, kind: str = "allow", *, root: Path | None = None) -> PermissionRule:
        text = raw.strip()
        if not text:
            raise _rule_error(kind, raw, "it is empty", "Write a tool name such as 'Read' or 'Bash(git status)'.")
        m = _RULE_RE.match(text)
        if m is None:
            raise _rule_error(
                kind,
                raw,
                "it is not 'Tool' or 'Tool(specifier)'",
                "Use a tool name, optionally followed by a specifier in parentheses, e.g. 'Bash(npm run test *)'.",
            )
        tool, spec = m.group("tool"), m.group("spec")
        if "*" in tool and not tool.startswith("mcp__"):
            raise _rule_error(
                kind,
                raw,
                "wildcards in tool names are only allowed for MCP tools (mcp__server__*)",
                "Name the tool exactly.",
            )
        if tool.startswith("mcp__") and kind == "allow" and "*" in tool and not re.match(r"^mcp__[^*]+?__", tool):
            raise _rule_error(
                kind, raw, "an allow rule may use '*' only after 'mcp__<server>__'", "Name the server literally."
            )
        if spec is not None:
            spec = spec.strip()
            if spec in ("", "*"):
                spec = None
        if spec is None:
            return cls(raw=text, tool=tool, specifier=None)
        if tool.startswith("mcp__"):
            raise _rule_error(kind, raw, "MCP rules take no specifier", "Use 'mcp__server' or 'mcp__server__tool'.")
        if tool in _NO_SPECIFIER:
            raise _rule_error(kind, raw, f"{tool} takes no specifier", f"Use plain '{tool}'.")
        if tool == "Bash":
            return cls(raw=text, tool=tool, specifier=spec, _bash=_bash_pattern(kind, raw, spec))
        if tool in PATH_TOOLS:
            spec_lines, abs_prefix = _path_pattern(kind, raw, spec, root)
            import pathspec  # imported by the first path rule, not with the policy

            try:
                compiled = pathspec.GitIgnoreSpec.from_lines(spec_lines)
            except Exception as exc:  # pathspec raises several types for bad patterns
                raise _rule_error(kind, raw, f"bad path pattern ({exc})", "Use a gitignore-style pattern.") from None
            return cls(
                raw=text,
                tool=tool,
                specifier=spec,
                _paths=compiled,
                _abs_prefix=abs_prefix,
                path_lines=tuple(spec_lines) if abs_prefix is None else (),
            )
        if tool == "WebFetch":
            if not spec.startswith("domain:") or not spec[7:].strip():
                raise _rule_error(
                    kind, raw, "WebFetch rules take 'domain:<host>'", "Write e.g. 'WebFetch(domain:example.com)'."
                )
            return cls(raw=text, tool=tool, specifier=spec, _domain=spec[7:].strip().lower())
        if tool in _NAME_ARG:
            return cls(raw=text, tool=tool, specifier=spec, _param=(_NAME_ARG[tool], spec.replace(":*", " *")))
        key, sep, value = spec.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
            raise _rule_error(
                kind,
                raw,
                f"{tool} has no primary argument to match, so its specifier must be 'param:value'",
                f"Write e.g. '{tool}(some_param:value)' or plain '{tool}'.",
            )
        return cls(raw=text, tool=tool, specifier=spec, _param=(key, value))

    def names_tool(self, tool_name: str) -> bool:
        if self.tool == tool_name:
            return True
        if self.tool in PATH_TOOLS and tool_name in PATH_TOOLS[self.tool]:
            return True
        if (self.tool == "Task" and tool_name == "Agent") or (self.tool == "Agent" and tool_name == "Task"):
            return True
        if self.tool.startswith("mcp__") and tool_name.startswith("mcp__"):
            if "*" in self.tool:
                return fnmatch.fnmatchcase(tool_name, self.tool)
            if self.tool.count("__") == 1:  # mcp__server: every tool of that server
                return tool_name.startswith(self.tool + "__")
        return False

    def matches(self, tool_name: str, arguments: Mapping[str, JsonValue], root: Path) -> bool:
        """Whether this rule applies to the call. For Bash, `matches_command` is used on each part instead."""
        if not self.names_tool(tool_name):
            return False
        if self.specifier is None:
            return True
        if self._bash is not None:
            command = arguments.get("command")
            return isinstance(command, str) and self.matches_command(" ".join(command.split()))
        if self._paths is not None:
            rel = _call_path(tool_name, arguments, root)
            if rel is not None:
                return self.matches_path(rel)
            outside = _outside_path(tool_name, arguments)
            return outside is not None and self.matches_outside(outside)
        if self._domain is not None:
            url = arguments.get("url")
            return isinstance(url, str) and _domain_matches(self._domain, url)
        if self._param is not None:
            key, pattern = self._param
            value = arguments.get(key)
            if value is None:
                return False
            shown = value if isinstance(value, str) else _compact(value)
            return fnmatch.fnmatchcase(shown, pattern) or (
                pattern.endswith(" *") and fnmatch.fnmatchcase(shown, pattern[:-2])
            )
        return False

    def matches_command(self, simple_command: str) -> bool:
        if self.specifier is None:
            return True
        return self._bash is not None and self._bash.fullmatch(simple_command) is not None

    def names_path(self, entry: str) -> bool:
        """Whether this rule's path (or `param:value`) starts with the workspace entry `entry` literally."""
        if self.path_lines:
            text = self.path_lines[0]
        elif self._param is not None:
            text = self._param[1]
        else:
            return False
        text = text.lstrip("/").casefold()
        while text.startswith("./"):
            text = text[2:]
        top = entry.casefold()
        return text == top or text.startswith(top + "/")

    def matches_outside(self, absolute: str) -> bool:
        """Whether this path rule covers `absolute`, a path outside the workspace (an additional directory's)."""
        if self._paths is None:
            return True
        if self._abs_prefix is None and not _any_depth(self.path_lines):
            return False
        return self._paths.match_file(absolute.lstrip("/"))

    def matches_path(self, rel: str) -> bool:
        if self._paths is None:
            return True
        if self._abs_prefix is not None:
            return False  # an absolute rule outside the workspace never matches a workspace path
        return self._paths.match_file(rel) or (rel != "" and self._paths.match_file(rel + "/"))


def _compact(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _bash_pattern(kind: str, raw: str, spec: str) -> re.Pattern[str]:
    text = " ".join(spec.split())
    if ":*" in text:
        if not text.endswith(":*") or text.count(":*") > 1:
            raise _rule_error(
                kind, raw, "the legacy ':*' suffix is only allowed at the end", "Write 'Bash(cmd *)' instead."
            )
        text = text[:-2] + " *"
    tail = ""
    if text.endswith(" *"):
        text, tail = text[:-2], r"(?: .*)?"
    body = ".*".join(re.escape(piece) for piece in text.split("*"))
    return re.compile(body + tail, re.DOTALL)


def _path_pattern(kind: str, raw: str, spec: str, root: Path | None) -> tuple[list[str], str | None]:
    """Return gitignore lines relative to the workspace root, or an absolute prefix if the rule is outside it."""
    if spec.startswith("//") or spec.startswith("~"):
        absolute = os.path.expanduser(spec[1:] if spec.startswith("//") else spec)
        if root is not None:
            for base in {str(root), os.path.realpath(root)}:
                rel = posixpath.relpath(absolute, base) if absolute.startswith(base.rstrip("/") + "/") else None
                if rel is not None:
                    return ["/" + rel], None
        return ["/" + absolute.lstrip("/")], absolute
    if spec.startswith("./"):
        spec = "/" + spec[2:]
    if "\x00" in spec:
        raise _rule_error(kind, raw, "it contains a NUL byte", "Remove it.")
    return [spec], None


def _call_path(tool_name: str, arguments: Mapping[str, JsonValue], root: Path) -> str | None:
    key = _PATH_ARG.get(tool_name)
    if key is None:
        return None
    value = arguments.get(key, "")
    if not isinstance(value, str):
        return None
    path = value.replace("\\", "/")
    if posixpath.isabs(path):
        norm = posixpath.normpath(path)
        for base in (str(root), os.path.realpath(root)):
            if norm == base:
                return ""
            if norm.startswith(base.rstrip("/") + "/"):
                return norm[len(base.rstrip("/")) + 1 :]
        return None
    rel = posixpath.normpath(path)
    return "" if rel == "." else rel


def _outside_path(tool_name: str, arguments: Mapping[str, JsonValue]) -> str | None:
    """The absolute path a path tool's call names when it is not a workspace path (`_call_path` gave None)."""
    key = _PATH_ARG.get(tool_name)
    value = arguments.get(key, "") if key is not None else None
    if not isinstance(value, str) or not posixpath.isabs(value.replace("\\", "/")):
        return None
    return posixpath.normpath(value.replace("\\", "/"))


def _any_depth(lines: Sequence[str]) -> bool:
    """A workspace-relative gitignore pattern that matches at any depth (no `/` but a trailing one, or `**/...`)."""
    if len(lines) != 1:
        return False
    text = lines[0].rstrip("/")
    return not text.startswith("/") and ("/" not in text or text.startswith("**/"))


def _domain_matches(pattern: str, url: str) -> bool:
    """Claude Code's hostname match: case-insensitive; a leading `*.` matches subdomains at any depth but not the
    apex; any other `*` stays within one dot-separated label."""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if pattern.startswith("*."):
        rest = pattern[2:]
        return any(_label_glob(rest, host[i + 1 :]) for i, ch in enumerate(host) if ch == ".")
    return _label_glob(pattern, host)


def _label_glob(pattern: str, host: str) -> bool:
    body = "[^.]*".join(re.escape(piece) for piece in pattern.split("*"))
    return re.fullmatch(body, host) is not None


@dataclass(frozen=True, slots=True)
class RuleMatch:
    decision: RuleKind
    rule: PermissionRule


class PermissionRules:
    """Parsed `permissions: {allow, ask, deny}`, evaluated deny, then ask, then allow (first match wins)."""

    def __init__(
        self,
        allow: Sequence[PermissionRule] = (),
        ask: Sequence[PermissionRule] = (),
        deny: Sequence[PermissionRule] = (),
    ) -> None:
        self.allow = tuple(allow)
        self.ask = tuple(ask)
        self.deny = tuple(deny)

    @classmethod
    def parse(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        root: Path | None = None,
    ) -> PermissionRules:
        """Parse the three lists; raises `RuleError` (category `configuration`) naming the first malformed rule."""
        return cls(
            allow=[PermissionRule.parse(r, "allow", root=root) for r in _as_list("allow", allow)],
            ask=[PermissionRule.parse(r, "ask", root=root) for r in _as_list("ask", ask)],
            deny=[PermissionRule.parse(r, "deny", root=root) for r in _as_list("deny", deny)],
        )

    def with_allow(self, rule: PermissionRule) -> PermissionRules:
        return PermissionRules(allow=(*self.allow, rule), ask=self.ask, deny=self.deny)

    def merged(self, other: PermissionRules) -> PermissionRules:
        """Lists merge across scopes (as in Claude Code): a deny anywhere cannot be allowed elsewhere."""
        return PermissionRules(
            allow=(*self.allow, *other.allow), ask=(*self.ask, *other.ask), deny=(*self.deny, *other.deny)
        )

    def hidden_paths(self, tool_name: str) -> list[str]:
        """Gitignore lines of the path deny/ask rules that cover `tool_name` (e.g. `Read(.env)` for Grep): Glob and
        Grep leave those files out of a search, so a denied file's content never shows up in search results."""
        lines: list[str] = []
        for rule in (*self.deny, *self.ask):
            if rule.path_lines and rule.names_tool(tool_name):
                lines.extend(rule.path_lines)
        return lines

    def denies_whole_tool(self, tool_name: str) -> bool:
        """A bare-tool deny (`Bash`, `mcp__server`) removes the tool from the agent's context."""
        return any(r.specifier is None and r.names_tool(tool_name) for r in self.deny)

    def explicit_path_allow(
        self, tool_name: str, arguments: Mapping[str, JsonValue], root: Path, *, names: str
    ) -> PermissionRule | None:
        """The first allow rule that matches the call *and* whose path names `names` (a protected entry such as
        `.bearagent` or `AGENTS.md`) literally: `Edit(/.bearagent/agents/**)`, `Edit(AGENTS.md)`. A bare `Edit` or
        `Write`, or a pattern that reaches the file only through wildcards (`Edit(**)`), does not count."""
        for rule in self.allow:
            if rule.specifier is None or not rule.names_tool(tool_name) or not rule.names_path(names):
                continue
            if rule.matches(tool_name, arguments, root):
                return rule
        return None

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue], root: Path) -> RuleMatch | None:
        if tool_name == "Bash":
            return self._evaluate_bash(arguments, root)
        for rule in self.deny:
            if rule.matches(tool_name, arguments, root) or _read_deny_covers(rule, tool_name, arguments, root):
                return RuleMatch("deny", rule)
        for decision, rules in (("ask", self.ask), ("allow", self.allow)):
            for rule in rules:
                if rule.matches(tool_name, arguments, root):
                    return RuleMatch(decision, rule)  # type: ignore[arg-type]
        return None

    def _evaluate_bash(self, arguments: Mapping[str, JsonValue], root: Path) -> RuleMatch | None:
        command = arguments.get("command")
        if not isinstance(command, str):
            return None
        whole = " ".join(command.split())
        parts = split_commands(command) or [whole]
        candidates = [whole, *parts]
        for rule in self.deny:
            if rule.names_tool("Bash") and any(rule.matches_command(p) for p in candidates):
                return RuleMatch("deny", rule)
        for rule in self.ask:
            if rule.names_tool("Bash") and any(rule.matches_command(p) for p in candidates):
                return RuleMatch("ask", rule)
        bash_allow = [r for r in self.allow if r.names_tool("Bash")]
        for rule in bash_allow:
            if rule.specifier is None:
                return RuleMatch("allow", rule)
        if not bash_allow:
            return None
        last: PermissionRule | None = None
        for part in parts:
            found = next((r for r in bash_allow if r.matches_command(part)), None)
            if found is None:
                return None
            last = found
        return RuleMatch("allow", last) if last is not None else None


def _read_deny_covers(rule: PermissionRule, tool_name: str, arguments: Mapping[str, JsonValue], root: Path) -> bool:
    """As in Claude Code, a `Read(path)` deny also blocks the editing tools (Edit, Write, MultiEdit, NotebookEdit)
    on that path (a file you may not read is not one to overwrite either)."""
    if rule.tool != "Read" or rule.specifier is None or tool_name not in PATH_TOOLS["Edit"]:
        return False
    return rule.matches("Read", {"file_path": arguments.get(_PATH_ARG[tool_name], "")}, root)


def _as_list(kind: str, rules: Iterable[str]) -> list[str]:
    if isinstance(rules, str):
        raise _rule_error(
            kind, rules, "the list is a single string", f"Write permissions.{kind} as a YAML list: [{rules!r}]."
        )
    out: list[str] = []
    for rule in rules:
        if not isinstance(rule, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _rule_error(kind, repr(rule), f"it is a {type(rule).__name__}, not a string", "Quote the rule.")
        out.append(rule)
    return out

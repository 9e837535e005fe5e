"""An agent's tool grant: its `tools`, `disallowed_tools` and `mcp` lists, resolved once into one value.

The invocation projection uses it to decide which tools the model sees; the gate's `ToolPolicy` uses the same value
to decide which calls may run, and turns its specifier entries into permission rules. Entries are in Claude Code's
forms:

- a bare name (`Read`, `Bash`, `MyPluginTool`) grants (in `tools`) or removes (in `disallowed_tools`) the tool;
- a name with a specifier (`Bash(git *)`, `Edit(/docs/**)`) in `tools` grants the tool and pre-approves the calls
  the specifier matches (an allow rule; other calls of that tool get the normal decision); in `disallowed_tools` it
  is a deny rule and the tool stays available for every other call;
- `mcp__server`, `mcp__server__tool`, `mcp__server__*` (and `mcp__*` in `disallowed_tools`) name MCP tools. MCP
  entries in `tools` restrict the MCP tools to those named; a `tools` list without MCP entries leaves them to the
  agent's `mcp` allowlist (`server` or `server.tool`; omitted = every configured server).

`tools` omitted means the default set (chosen by the projection: the native tools); `*` means every native and
plugin tool. The runtime tools (`Skill`, `Task`, `SwitchAgent`, `action__<name>`) come from their own allowlists
(`skills`, `subagents`, `switch`, `actions`) and are only removed by `disallowed_tools`, never by `tools`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

MCP_PREFIX = "mcp__"
RUNTIME_TOOLS = frozenset({"Skill", "Task", "SwitchAgent"})
ACTION_PREFIX = "action__"
_ENTRY_RE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_.:*-]{0,127})(?:\((?P<spec>.*)\))?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class GrantProblem:
    """An entry that is not `Name` or `Name(specifier)`: the agent cannot run until it is fixed."""

    key: str  # "tools" or "disallowed_tools"
    entry: str


@dataclass(frozen=True, slots=True)
class ToolGrant:
    """What one agent may use. Build it with `ToolGrant.resolve`; `ToolGrant()` grants everything."""

    listed: tuple[str, ...] | None = None
    """Tool names from `tools` (specifiers stripped, MCP entries excluded); None = `tools` omitted."""
    everything: bool = False
    """`tools` contains `*`."""
    mcp_entries: tuple[str, ...] = ()
    """MCP entries of `tools` (`mcp__server`, `mcp__server__tool`, globs); empty = not restricted by `tools`."""
    mcp_allowlist: tuple[str, ...] | None = None
    """The agent's `mcp` list (`server` or `server.tool`); None = every configured server."""
    removed: frozenset[str] = frozenset()
    """Bare names in `disallowed_tools` (incl. `mcp__server`, `mcp__*`)."""
    allow_rules: tuple[str, ...] = ()
    """Specifier entries of `tools` (e.g. `Bash(git *)`): pre-approved calls."""
    deny_rules: tuple[str, ...] = ()
    """Specifier entries of `disallowed_tools` (e.g. `Bash(rm *)`): denied calls."""
    problems: tuple[GrantProblem, ...] = ()

    @classmethod
    def resolve(
        cls,
        tools: Iterable[str] | None = None,
        disallowed_tools: Iterable[str] = (),
        *,
        mcp: Iterable[str] | None = None,
    ) -> ToolGrant:
        problems: list[GrantProblem] = []
        listed: list[str] | None = None
        everything = False
        mcp_entries: list[str] = []
        allow_rules: list[str] = []
        if tools is not None:
            listed = []
            for raw in tools:
                parsed = _split(raw)
                if parsed is None:
                    problems.append(GrantProblem("tools", raw))
                    continue
                name, has_spec = parsed
                if name == "*":
                    everything = True
                elif name.startswith(MCP_PREFIX):
                    mcp_entries.append(name)
                else:
                    listed.append(name)
                if has_spec:
                    allow_rules.append(raw.strip())
        removed: set[str] = set()
        deny_rules: list[str] = []
        for raw in disallowed_tools:
            parsed = _split(raw)
            if parsed is None:
                problems.append(GrantProblem("disallowed_tools", raw))
                continue
            name, has_spec = parsed
            if has_spec:
                deny_rules.append(raw.strip())
            else:
                removed.add(name)
        return cls(
            listed=tuple(dict.fromkeys(listed)) if listed is not None else None,
            everything=everything,
            mcp_entries=tuple(dict.fromkeys(mcp_entries)),
            mcp_allowlist=tuple(mcp) if mcp is not None else None,
            removed=frozenset(removed),
            allow_rules=tuple(allow_rules),
            deny_rules=tuple(deny_rules),
            problems=tuple(problems),
        )

    @property
    def restricts_tools(self) -> bool:
        """Whether `tools` names the native/plugin tools (omitted or `*` do not)."""
        return self.listed is not None and not self.everything

    def is_removed(self, name: str) -> bool:
        if name in self.removed:
            return True
        if name.startswith(MCP_PREFIX):
            return any(_mcp_name_matches(entry, name) for entry in self.removed if entry.startswith(MCP_PREFIX))
        return False

    def permits(self, name: str) -> bool:
        """Whether a tool of this name may be offered and called (for MCP tools, by its `mcp__server__tool` name;
        the `mcp` allowlist needs the server and tool apart, see `permits_mcp`)."""
        if self.is_removed(name):
            return False
        if name.startswith(MCP_PREFIX):
            return not self.mcp_entries or any(_mcp_name_matches(e, name) for e in self.mcp_entries)
        if name in RUNTIME_TOOLS or name.startswith(ACTION_PREFIX):
            return True
        if not self.restricts_tools:
            return True
        return name in (self.listed or ())

    def permits_mcp(self, server: str, tool: str) -> bool:
        """Whether MCP tool `tool` of `server` is granted: the `mcp` allowlist, the MCP entries of `tools`, and
        `disallowed_tools`."""
        allowlist = self.mcp_allowlist
        if allowlist is not None and server not in allowlist and f"{server}.{tool}" not in allowlist:
            return False
        return self.permits(f"{MCP_PREFIX}{server}__{tool}")


def _split(raw: str) -> tuple[str, bool] | None:
    """(tool name, has a specifier) of one entry, or None when it is not `Name` / `Name(specifier)` / `*`."""
    text = raw.strip()
    if text == "*":
        return "*", False
    match = _ENTRY_RE.match(text)
    if match is None:
        return None
    spec = match.group("spec")
    return match.group("name"), spec is not None and spec.strip() not in ("", "*")


def _mcp_name_matches(entry: str, name: str) -> bool:
    """`mcp__server` covers every tool of that server; `mcp__server__tool` is exact; `*` globs (`mcp__*`)."""
    if "*" in entry:
        return fnmatch.fnmatchcase(name, entry)
    if name == entry:
        return True
    return entry.count("__") == 1 and name.startswith(entry + "__")

"""AgentRegistry: `agents/**/*.md` files from every source, with Claude Code / OpenCode aliases accepted.

Agent directories are read recursively, as Claude Code reads `.claude/agents/` (hidden and vendored folders, and
`README.md` files, are skipped). A subdirectory does not change a name: an agent is named by its `name:` field, or
its file name. Two files of one name in one source (`review/security.md` and `security.md`, wherever they sit
below it) are an error naming both paths, and the name is unusable until one is renamed: never a filesystem-order
pick, which is what Claude Code does (and reports in `/doctor`).

Its length is the one agent registry: loading from every source, the shadowing of one name across levels and
the diagnostics for what was skipped, which `run -a`, `agents list` and `doctor` all read the same way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from bearagent.config.files import FrontmatterDoc, did_you_mean, suggestion
from bearagent.config.layers import Candidate
from bearagent.config.tool_lists import tool_list
from bearagent.config.workspace import Source
from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.errors import BearAgentError
from bearagent.domain.specs import NAME_RE, AgentSpec, HookMatcherSpec, suggest_name
from bearagent.registries._base import (
    LayeredRegistry,
    Reporter,
    first_error,
    frontmatter_candidates,
    frontmatter_reporter,
    unknown_key,
)
from bearagent.registries.hooks import parse_hooks

AGENT_KEYS = frozenset(
    {
        "name",
        "description",
        "mode",
        "model",
        "tools",
        "disallowed_tools",
        "skills",
        "actions",
        "mcp",
        "switch",
        "subagents",
        "system_reminder",
        "initial_prompt",
        "fallback_model",
        "memory",
        "policy",
        "temperature",
        "max_output_tokens",
        "hooks",
    }
)
# Claude Code / OpenCode spellings -> canonical key (policy keys are written as "policy.<key>").
AGENT_ALIASES: Mapping[str, str] = {
    "disallowedTools": "disallowed_tools",
    "disallowed-tools": "disallowed_tools",
    "mcpServers": "mcp",
    "mcp_servers": "mcp",
    "maxTurns": "policy.max_turns",
    "max_turns": "policy.max_turns",
    "steps": "policy.max_turns",
    "maxSteps": "policy.max_turns",
    "permissionMode": "policy.permission_mode",
    "permission_mode": "policy.permission_mode",
    "systemReminder": "system_reminder",
    "initialPrompt": "initial_prompt",
    "fallbackModel": "fallback_model",
    "maxOutputTokens": "max_output_tokens",
}
# Keys other tools define that BearAgent does not implement: a visible warning, never a silent drop.
UNSUPPORTED_KEYS = frozenset(
    {
        "color",
        "background",
        "effort",
        "isolation",
        "top_p",
        "hidden",
        "permission",
        "variant",
    }
)
POLICY_KEYS = ("max_turns", "max_switches", "budgets", "permission_mode", "compaction")
FRONTMATTER_KEYS = frozenset({*AGENT_KEYS, *AGENT_ALIASES, *UNSUPPORTED_KEYS})
"""Every key an agent file may have (for the lenient reading of frontmatter that is not strict YAML)."""
CLAUDE_MODEL_ALIASES = frozenset({"sonnet", "opus", "haiku", "fable"})
GUARDING_AGENT_KEYS = frozenset(
    {"tools", "disallowed_tools", "permission_mode", "policy.permission_mode", "mcp", "hooks", "policy", "permission"}
)
"""Keys that narrow what an agent may do: a misspelling of one skips the agent (an error), never widens it."""
_PERMISSION_MODE_ALIASES = {"manual": "default"}


class AgentRegistry(LayeredRegistry[AgentSpec]):
    """Resolved agents by name. `get` is an exact lookup; broken names (duplicates in one source) are absent."""

    skipped: Mapping[str, tuple[Diagnostic, ...]] = {}
    """Files that did not load, by the name they would have had (their `name:` or stem): their errors."""

    def why_missing(self, name: str) -> BearAgentError | None:
        """The error that explains why `name` is not an agent although a file means it: a file of that name was
        skipped (its first error, with file and line), or two files define it in one source; None otherwise."""
        from bearagent.domain.errors import BearAgentError, ErrorInfo

        if name in self.broken:
            return BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "duplicate_agent",
                    f"agent {name!r} is defined {_times(len(self.broken[name]))} in one source: "
                    f"{', '.join(self.broken[name])}; the name is unusable until only one is left",
                ),
                hint="rename or delete all but one of the files",
            )
        errors = self.skipped.get(name)
        if errors:
            first = errors[0]
            where = first.source + (f":{first.line}" if first.line is not None else "")
            return BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "agent_skipped",
                    f"agent {name!r} was not loaded: {where}: {first.message}",
                ),
                hint=first.fix or "fix the file (`bearagent doctor` shows every problem)",
            )
        return None

    def require(self, name: str) -> AgentSpec:
        """The agent or a `BearAgentError` naming close matches (for `-a NAME`, `default_agent`, `subagent_type`)."""
        from bearagent.domain.errors import BearAgentError, ErrorInfo

        agent = self.get(name)
        if agent is not None:
            return agent
        missing = self.why_missing(name)
        if missing is not None:
            raise missing
        raise BearAgentError(
            ErrorInfo.of("not_found", "agent", f"no agent named {name!r}" + suggestion(name, self.names())),
            hint=f"available agents: {name_list(self.names()) or 'none'} (`bearagent agents list` shows where each "
            "comes from)",
        )


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def _string_list(value: object) -> tuple[str, ...] | None:
    """A YAML list of strings, or Claude Code's comma-separated string (`Read, Grep`)."""
    if value is None:
        return None
    parsed = tool_list(value)  # commas inside parentheses belong to the specifier: `Bash(git diff a, b)`
    if parsed is None:
        raise ValueError("must be a list of names or a comma-separated string")
    return parsed


def parse_agent(
    doc: FrontmatterDoc, source: Source, root: Path, env: Mapping[str, str]
) -> tuple[AgentSpec | None, list[Diagnostic]]:
    path = doc.path
    diags: list[Diagnostic] = []
    add = frontmatter_reporter(doc, diags, top_level_line=True)
    fields: dict[str, object] = {}
    policy: dict[str, object] = {}
    raw_hooks: object = None
    misspelt_guard = False
    for key, value in doc.data.items():
        target = AGENT_ALIASES.get(key, key)
        if key in UNSUPPORTED_KEYS:
            add(
                "warning",
                "agent.unsupported_key",
                key,
                f"key {key!r} (from Claude Code / OpenCode) is not supported by BearAgent and is ignored",
                "remove it, or keep it knowing it has no effect",
            )
            continue
        if target.startswith("policy."):
            policy[target.split(".", 1)[1]] = value
            continue
        if target not in AGENT_KEYS:
            message, fix = unknown_key(
                key, AGENT_KEYS, f"{key!r} in agent file", candidates=[*AGENT_KEYS, *AGENT_ALIASES]
            )
            guess = did_you_mean(key, [*AGENT_KEYS, *AGENT_ALIASES])
            if key.lower().replace("-", "").replace("_", "") == "allowedtools":
                # Claude Code's command key (`allowed-tools`) in an agent file means `tools`, not the nearest
                # spelling (`disallowed_tools`), which would invert it
                guess = "tools"
                message = f"unknown key {key!r} in agent file: an agent's allowed tools are its `tools:` list"
                fix = f"rename {key!r} to 'tools' (`allowed-tools` is a command file's key)"
            if guess is not None and AGENT_ALIASES.get(guess, guess) in GUARDING_AGENT_KEYS:
                # fail closed: a misspelt `tools:` would silently give the agent every tool
                add(
                    "error",
                    "agent.misspelt_guard",
                    key,
                    f"{message.removesuffix('; it is ignored')}; {guess!r} limits what the agent may do, so the "
                    "agent was skipped rather than run without that limit",
                    fix,
                )
                misspelt_guard = True
            else:
                add("warning", "config.unknown_key", key, message, fix)
            continue
        if target == "hooks":
            raw_hooks = value
            continue
        fields[target] = value

    if misspelt_guard:
        return None, diags
    stem = path.stem
    name = fields.get("name", stem)
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        fixed = suggest_name(str(name))
        add(
            "error",
            "agent.invalid_name",
            "name",
            f"agent name {name!r} is invalid: use lowercase letters, digits, hyphens and dots, at most 64 "
            "characters; the file was skipped",
            f"rename it to {fixed!r}" if fixed and fixed != name else "write e.g. `name: my-agent`",
        )
        return None, diags
    if name != stem:
        add(
            "info",
            "agent.name_differs",
            "name",
            f"agent name {name!r} differs from the file name {path.name!r}; the agent is known as {name!r}",
            f"rename the file to {name}.md to avoid confusion",
        )
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        add(
            "error",
            "agent.missing_description",
            "description" if "description" in fields else None,
            f"agent {name!r} has no description; the file was skipped",
            "add `description: <what it does and when to delegate to it>` to the frontmatter",
        )
        return None, diags
    fields["name"] = name
    fields["description"] = description.strip()
    for key in ("tools", "disallowed_tools", "skills", "actions", "switch", "subagents"):
        if key in fields:
            try:
                parsed = _string_list(fields[key])
            except ValueError as exc:
                add(
                    "error",
                    "agent.invalid_field",
                    key,
                    f"{key}: {exc}; the key is ignored",
                    f"write `{key}: [A, B]` or `{key}: A, B`",
                )
                del fields[key]
                continue
            if parsed is None and key in ("switch", "subagents", "disallowed_tools"):
                parsed = ()
            fields[key] = parsed
    if "mcp" in fields:
        fields["mcp"] = _parse_mcp_refs(fields["mcp"], add)
    model = fields.get("model")
    if model is not None and (not isinstance(model, str) or model == "inherit"):
        if model != "inherit":
            add(
                "error",
                "agent.invalid_field",
                "model",
                f"model must be a model ref string, got {model!r}; using inherit",
                "write `model: workspace/<name>` or `model: inherit`",
            )
        fields.pop("model")
    if policy:
        fields["policy"] = _parse_policy(policy, add)
    elif "policy" in fields:
        raw_policy = fields["policy"]
        if isinstance(raw_policy, dict):
            fields["policy"] = _parse_policy(cast(dict[str, object], raw_policy), add)
        else:
            add(
                "error",
                "agent.invalid_field",
                "policy",
                "policy must be a mapping; it is ignored",
                "write `policy: {max_turns: 20}`",
            )
            del fields["policy"]
    hooks: list[HookMatcherSpec] = []
    if raw_hooks is not None:
        if isinstance(raw_hooks, dict):
            hooks, hook_diags = parse_hooks(
                cast(dict[str, object], raw_hooks),
                path=path,
                level=source.level,
                root=root,
                env=env,
                doc=doc,
                agent=name,
            )
            diags.extend(hook_diags)
        else:
            add(
                "error",
                "agent.invalid_field",
                "hooks",
                "hooks must be a mapping of event -> groups; ignored",
                "see docs/config.md#hooks",
            )
    fields["hooks"] = tuple(hooks)
    fields["prompt"] = doc.body
    fields["source"] = str(path)
    fields["level"] = source.level
    fields["origin"] = source.id
    try:
        return AgentSpec.model_validate(fields), diags
    except ValidationError as exc:
        key, problem = first_error(exc)
        add(
            "error",
            "agent.invalid_field",
            key,
            f"{key}: {problem}; the file was skipped",
            f"fix `{key}` in the frontmatter",
        )
        return None, diags


def _parse_mcp_refs(value: object, report: Reporter) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    refs: list[str] = []
    if isinstance(value, list):
        for item in cast(list[object], value):
            if isinstance(item, str):
                refs.append(item)
            else:
                report(
                    "warning",
                    "agent.inline_mcp_unsupported",
                    "mcp",
                    "inline MCP server definitions in agent files are not supported and are ignored",
                    "declare the server under `mcp_servers:` in config.yaml and list its name here",
                )
        return tuple(refs)
    report(
        "error",
        "agent.invalid_field",
        "mcp",
        "mcp must be a list of `server` or `server.tool` names; ignored",
        "write `mcp: [time]`",
    )
    return None


def _parse_policy(raw: Mapping[str, object], report: Reporter) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in raw.items():
        if key not in POLICY_KEYS:
            report(
                "warning",
                "config.unknown_key",
                "policy",
                f"unknown key 'policy.{key}'" + suggestion(key, POLICY_KEYS) + "; it is ignored",
                f"known keys: {', '.join(POLICY_KEYS)}",
            )
            continue
        if key == "permission_mode" and isinstance(value, str):
            value = _PERMISSION_MODE_ALIASES.get(value, value)
        if key == "compaction":
            from bearagent.config.compaction import parse_compaction

            value, problems = parse_compaction(value, "policy.compaction")
            for p in problems:
                code = "config.unknown_key" if p.severity == "warning" else "agent.invalid_field"
                report(p.severity, code, p.field, p.message, p.fix)
        out[key] = value
    return out


def load_agents(sources: Iterable[tuple[Source, Iterable[Path]]], root: Path, env: Mapping[str, str]) -> AgentRegistry:
    """Load agents from `(source, files)` pairs (see `agent_files`) and resolve precedence."""
    diags: list[Diagnostic] = []
    candidates: list[Candidate[AgentSpec]] = []

    def parse(doc: FrontmatterDoc, source: Source) -> tuple[AgentSpec | None, list[Diagnostic]]:
        return parse_agent(doc, source, root, env)

    all_files: list[Path] = []
    for source, files in sources:
        listed = list(files)
        all_files.extend(listed)
        candidates.extend(
            frontmatter_candidates(
                ((source, p) for p in listed), diags, what="agent file", parse=parse, known_keys=FRONTMATTER_KEYS
            )
        )
    registry = AgentRegistry.from_candidates(candidates, diags, kind="agent")
    registry.diagnostics = tuple(_name_the_rule(d) for d in registry.diagnostics)
    registry.skipped = _skipped(all_files, {c.path for c in candidates}, diags)
    return registry


_NAME_LINE = re.compile(r"^name[ \t]*:[ \t]*[\"']?([^\"'\s#]+)", re.MULTILINE)


def _skipped(files: Iterable[Path], loaded: set[str], diags: Sequence[Diagnostic]) -> dict[str, tuple[Diagnostic, ...]]:
    """The error diagnostics of each agent file that yielded no agent, by its stem and by the `name:` it declares."""
    out: dict[str, tuple[Diagnostic, ...]] = {}
    for path in files:
        if str(path) in loaded:
            continue
        errors = tuple(d for d in diags if d.source == str(path) and d.severity == "error")
        if not errors:
            continue
        names = {path.stem}
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:65_536].split("\n---", 1)[0]
        except OSError:
            head = ""
        match = _NAME_LINE.search(head)
        if match:
            names.add(match.group(1))
        for name in names:
            out.setdefault(name, errors)
    return out


def _name_the_rule(d: Diagnostic) -> Diagnostic:
    """A duplicate agent name says why folders do not help (they do not namespace agents)."""
    if d.code != "config.duplicate_name":
        return d
    return d.model_copy(
        update={
            "fix": (d.fix or "rename one of them")
            + "; a subdirectory does not change an agent's name: give one of them another `name:`"
        }
    )


MAX_AGENT_FILES = 2_000
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", ".venv", "venv"})


def agent_files(directory: Path | None) -> list[Path]:
    """`*.md` in `directory` and below it, sorted by relative path (README.md is documentation, not an agent;
    hidden and vendored folders are skipped; symlinked folders are not followed; at most `MAX_AGENT_FILES`)."""
    if directory is None or not directory.is_dir():
        return []
    found: list[Path] = []
    for current, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in files:
            path = Path(current) / name
            if name.endswith(".md") and name.lower() != "readme.md" and path.is_file():
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(directory).parts)[:MAX_AGENT_FILES]

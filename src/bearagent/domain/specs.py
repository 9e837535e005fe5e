"""Capability definitions loaded from files and plugins. They hold configuration, never run state."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, TypeAlias

from pydantic import Field, field_validator

from bearagent.domain._base import DomainModel, JsonObject
from bearagent.domain.models import MAX_CALL_TIMEOUT_MS

Level: TypeAlias = Literal["workspace", "platform"]
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*$")
"""Agent and action names: lowercase letters, digits and hyphens, and dots between them (`powershell-5.1-expert`, as
Claude Code accepts); no leading `-` or `.`, no `..`, no trailing `.`, never `:` or `/`."""


def suggest_name(name: str) -> str | None:
    """A valid name close to an invalid `name` (`My_Agent` -> `my-agent`), or None when none can be made."""
    text = re.sub(r"[^a-z0-9.-]+", "-", name.strip().lower())
    text = re.sub(r"\.{2,}", ".", re.sub(r"-{2,}", "-", text)).strip("-.")
    text = re.sub(r"[.-]*\.[.-]*", ".", text)
    return text[:64].strip("-.") if text and NAME_RE.match(text[:64].strip("-.")) else None


MCP_SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class ModelPrice(DomainModel):
    input_usd_per_mtok: float = Field(default=0.0, ge=0)
    output_usd_per_mtok: float = Field(default=0.0, ge=0)


class ModelEntry(DomainModel):
    """One `models:` entry: which provider and model, where, and with which key variable (never the key)."""

    name: str = Field(min_length=1, max_length=64)
    level: Level = "workspace"
    provider: str = Field(min_length=1, max_length=64)
    api: str | None = Field(default=None, max_length=32)
    model: str | None = Field(default=None, max_length=256)
    base_url: str | None = Field(default=None, max_length=2_048)
    api_key_env: str | None = Field(default=None, max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    timeout_s: float = Field(default=120.0, gt=0, le=3_600)
    """Time to the first streamed event of an answer (with `stream: false`, to the whole answer)."""
    stream_idle_timeout_s: float | None = Field(default=None, gt=0, le=3_600)
    """Longest silence between two streamed events of an answer; None: the same as `timeout_s`."""
    max_stream_s: float | None = Field(default=None, gt=0, le=3_600)
    """Cap on a whole answer, streaming included; None: none of the entry's own (a call still ends after
    `MAX_CALL_TIMEOUT_MS`, an hour)."""
    context_window: int | None = Field(default=None, ge=256, le=100_000_000)
    """The model's context window in tokens; None: what the server's model listing says, else the default of the
    model's name (`runtime/context_size.py`)."""
    price: ModelPrice | None = None
    script: str | None = Field(default=None, max_length=4_096)
    stream: bool = True
    """Stream the answer (default). `false` makes one plain request per call, for servers that cannot stream."""
    headers: Mapping[str, str] = Field(default_factory=dict[str, str])
    source: str = Field(default="", max_length=4_096)

    @property
    def ref(self) -> str:
        return f"{self.level}/{self.name}"


def call_timeout_ms(entry: ModelEntry) -> int:
    """The deadline of one model call of `entry` (`ModelRequest.timeout_ms`): its `max_stream_s`, else the longest a
    call may have. `timeout_s` is not part of it: it bounds the wait for the first event, not the whole answer."""
    if entry.max_stream_s is None:
        return MAX_CALL_TIMEOUT_MS
    return max(1, min(int(entry.max_stream_s * 1000), MAX_CALL_TIMEOUT_MS))


class McpServerSpec(DomainModel):
    """One MCP server entry (from `mcp_servers:` in config.yaml, `.mcp.json`, or a plugin)."""

    name: str = Field(min_length=1, max_length=64)
    transport: Literal["stdio", "http"]
    command: str | None = Field(default=None, max_length=4_096)
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = Field(default_factory=dict[str, str])
    cwd: str | None = Field(default=None, max_length=4_096)
    url: str | None = Field(default=None, max_length=2_048)
    headers: Mapping[str, str] = Field(default_factory=dict[str, str])
    oauth_client_id: str | None = Field(default=None, min_length=1, max_length=512)
    """http: Claude Code's `oauth.clientId`, a client registered in advance (no dynamic registration)."""
    oauth_callback_port: int | None = Field(default=None, ge=1, le=65_535)
    """http: Claude Code's `oauth.callbackPort`, the fixed loopback port of the login redirect."""
    startup_timeout_s: float = Field(default=30.0, gt=0, le=600)
    call_timeout_s: float = Field(default=60.0, gt=0, le=3_600)
    source: str = Field(default="", max_length=4_096)
    level: Level = "workspace"

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not MCP_SERVER_NAME_RE.match(value):
            raise ValueError(f"MCP server name {value!r} must match {MCP_SERVER_NAME_RE.pattern}")
        return value


HookEventName: TypeAlias = Literal[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "PreModelRequest",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PostToolBatch",
    "StopFailure",
    "Notification",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "UserPromptExpansion",
    "InstructionsLoaded",
    "Elicitation",
    "ElicitationResult",
]
HookCapability: TypeAlias = Literal["block", "rewrite", "context"]
ALL_HOOK_CAPABILITIES: frozenset[HookCapability] = frozenset({"block", "rewrite", "context"})


class HookHandlerSpec(DomainModel):
    """One handler of a hook entry (Claude Code's shape plus `on_failure` and `capabilities`).

    `command` alone is a shell string; `command` + `args` is the exec form (no shell). `timeout` is in seconds, as
    in Claude Code. Capabilities default to all three so existing Claude Code scripts work unchanged; declaring them
    narrows what the handler's output may do. Claude Code's `if` is `condition` (one permission rule: the handler
    runs only for tool calls it matches), `async` is `run_async` (a command run in the background, its answer
    ignored), `once` runs it once per session; an `mcp_tool` handler calls `tool` on the MCP `server` with
    `arguments` (Claude Code's `input`).
    """

    type: Literal["command", "http", "prompt", "agent", "python", "mcp_tool"]
    command: str | None = Field(default=None, max_length=8_192)
    args: tuple[str, ...] | None = None
    url: str | None = Field(default=None, max_length=2_048)
    headers: Mapping[str, str] = Field(default_factory=dict[str, str])
    prompt: str | None = Field(default=None, max_length=65_536)
    model: str | None = Field(default=None, max_length=256)
    agent: str | None = Field(default=None, max_length=64)
    handler: str | None = Field(default=None, max_length=256)
    timeout_s: float = Field(default=60.0, gt=0, le=3_600)
    on_failure: Literal["allow", "block"] = "allow"
    capabilities: frozenset[HookCapability] = ALL_HOOK_CAPABILITIES
    condition: str | None = Field(default=None, max_length=4_096)
    once: bool = False
    run_async: bool = False
    async_rewake: bool = False
    """Claude Code's `asyncRewake` (with `run_async`): the background command's exit 2 wakes the agent with its
    stderr when it would stop."""
    server: str | None = Field(default=None, max_length=64)
    tool: str | None = Field(default=None, max_length=256)
    arguments: JsonObject | None = None
    status_message: str | None = Field(default=None, max_length=200)
    """Claude Code's `statusMessage`: shown in the terminal while the handler runs (printable characters only)."""


HOOK_HANDLER_EXTENSIONS: tuple[str, ...] = (
    "condition",
    "once",
    "run_async",
    "async_rewake",
    "server",
    "tool",
    "arguments",
    "status_message",
)
"""`HookHandlerSpec` fields added after the first release: left out of a handler's trust fingerprint while they hold
their defaults, so a hook that does not use them keeps the digest the user trusted."""


class HookMatcherSpec(DomainModel):
    """`<event>: [{matcher, hooks: [...]}]` — one matcher group. `matcher` None or "" or "*" matches everything;
    otherwise exact name, `A|B` list, or a regular expression (tested against the projected tool name)."""

    event: HookEventName
    matcher: str | None = Field(default=None, max_length=1_024)
    hooks: tuple[HookHandlerSpec, ...] = Field(min_length=1)
    source: str = Field(default="", max_length=4_096)
    level: Level = "workspace"
    agent: str | None = Field(default=None, max_length=64)


AgentMode: TypeAlias = Literal["primary", "subagent", "all"]
PermissionMode: TypeAlias = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"]
MAX_PROMPT_CHARS = 262_144


class CompactionSettings(DomainModel):
    """`compaction:` in config.yaml or an agent's `policy:`: when and how earlier turns are summarised
    (docs/runtime.md#compaction). A key left out takes the next source's value (agent policy, then config.yaml,
    then the default shown)."""

    enabled: bool | None = None
    """Default true."""
    threshold: float | None = Field(default=None, gt=0, le=1)
    """Compact when the next request is estimated above this share of the model's window; default 0.8."""
    model: str | None = Field(default=None, min_length=1, max_length=256)
    """The model entry that writes the summary; default the agent's own model."""
    keep_recent_turns: int | None = Field(default=None, ge=0, le=1_000)
    """Turns (a user message, or a model turn with its tool results) kept verbatim; default 2."""

    def over(self, lower: CompactionSettings) -> CompactionSettings:
        """These settings, with what they leave out taken from `lower`."""
        return CompactionSettings(
            enabled=self.enabled if self.enabled is not None else lower.enabled,
            threshold=self.threshold if self.threshold is not None else lower.threshold,
            model=self.model if self.model is not None else lower.model,
            keep_recent_turns=self.keep_recent_turns if self.keep_recent_turns is not None else lower.keep_recent_turns,
        )


class AgentPolicy(DomainModel):
    """`policy:` of an agent. A subagent never gets more than its parent (the runtime intersects them)."""

    max_turns: int | None = Field(default=None, ge=1, le=100_000)
    max_switches: int | None = Field(default=None, ge=0, le=1_000)
    budgets: Mapping[str, int] = Field(default_factory=dict[str, int])
    permission_mode: PermissionMode | None = None
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)


class AgentSpec(DomainModel):
    """One agent: `agents/<name>.md` (frontmatter + Markdown body as the system prompt).

    Allowlists: `None` means "the key was omitted" (see docs/config.md for each default), `()` means "none".
    """

    name: str = Field(min_length=1, max_length=64, pattern=NAME_RE.pattern)
    description: str = Field(min_length=1, max_length=4_096)
    prompt: str = Field(default="", max_length=MAX_PROMPT_CHARS)
    mode: AgentMode = "all"
    model: str | None = Field(default=None, max_length=256)
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    skills: tuple[str, ...] | None = None
    actions: tuple[str, ...] | None = None
    mcp: tuple[str, ...] | None = None
    switch: tuple[str, ...] = ()
    subagents: tuple[str, ...] | None = None
    """Agents it may delegate to with `Task`; None (omitted) = for a primary agent, every other agent whose mode
    allows delegation (subagent or all), as in Claude Code; for a `mode: subagent` agent, none."""
    system_reminder: str | None = Field(default=None, max_length=8_192)
    initial_prompt: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)
    """Claude Code's `initialPrompt`: put before the first prompt of a session this agent starts as the main agent."""
    fallback_model: str | None = Field(default=None, max_length=256)
    """Claude Code's `fallbackModel` for this agent (a model entry's name, ref or `model:`): outranks the settings'."""
    memory: Literal["user", "project", "local"] | None = None
    """Claude Code's agent `memory`: a persistent memory folder for this agent (`user`: ~/.claude/agent-memory/NAME,
    `project`: .claude/agent-memory/NAME, `local`: .claude/agent-memory-local/NAME); its MEMORY.md opens the prompt."""
    policy: AgentPolicy = Field(default_factory=AgentPolicy)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    hooks: tuple[HookMatcherSpec, ...] = ()
    source: str = Field(default="", max_length=4_096)
    level: Level = "workspace"
    origin: str = Field(default="", max_length=256)

    @property
    def is_primary(self) -> bool:
        return self.mode in ("primary", "all")

    @property
    def is_subagent(self) -> bool:
        return self.mode in ("subagent", "all")


class SkillSpec(DomainModel):
    """One Agent Skills folder: `skills/<name>/SKILL.md`. Only `name` + `description` enter the catalog; the body
    and the list of bundled `files` (paths relative to `directory`) are returned by the `Skill` tool."""

    name: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1, max_length=4_096)
    body: str = Field(default="", max_length=MAX_PROMPT_CHARS)
    license: str | None = Field(default=None, max_length=1_024)
    compatibility: str | None = Field(default=None, max_length=1_024)
    metadata: Mapping[str, str] = Field(default_factory=dict[str, str])
    allowed_tools: tuple[str, ...] = ()
    directory: str = Field(default="", max_length=4_096)
    files: tuple[str, ...] = ()
    source: str = Field(default="", max_length=4_096)
    level: Level = "workspace"
    origin: str = Field(default="", max_length=256)
    user_invocable: bool = True
    """Also the slash command `/<name>` (Claude Code's `user-invocable`, default true)."""
    argument_names: tuple[str, ...] = ()
    """Claude Code's `arguments`: names of the positional arguments, `$name` in the body when run as `/<name>`."""
    model_invocable: bool = True
    """In the agents' skill catalog and `Skill` tool (false: Claude Code's `disable-model-invocation: true`, only the
    user loads it, as `/<name>`)."""
    argument_hint: str | None = Field(default=None, max_length=512)


COMMAND_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(?::[A-Za-z0-9][A-Za-z0-9_.-]*)*$")
"""A custom slash command's name: its path below `commands/` without `.md`, `/` written `:` (`frontend:component`)."""


class ActionSpec(DomainModel):
    """One action: `actions/<name>.md`, or a custom slash command (`kind: command`, from `commands/**/*.md`, Claude
    Code's format). `inputs` is the JSON Schema of its arguments; `template` the body with `$ARGUMENTS` and
    `$<input-name>` placeholders (rendered by `bearagent.registries.actions.render_action`; a command's `$ARGUMENTS`,
    `$1`… by `bearagent.registries.commands.render_command`)."""

    name: str = Field(min_length=1, max_length=128, pattern=COMMAND_NAME_RE.pattern)
    description: str = Field(min_length=1, max_length=4_096)
    agent: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=256)
    inputs: JsonObject
    template: str = Field(default="", max_length=MAX_PROMPT_CHARS)
    source: str = Field(default="", max_length=4_096)
    level: Level = "workspace"
    origin: str = Field(default="", max_length=256)
    kind: Literal["action", "command"] = "action"
    argument_hint: str | None = Field(default=None, max_length=512)
    allowed_tools: tuple[str, ...] = ()
    """Permission rules pre-approved while the command runs (`allowed-tools`, Claude Code's meaning)."""
    argument_names: tuple[str, ...] = ()
    """Claude Code's `arguments`: names of the positional arguments, substituted as `$name` in the body."""

    @property
    def stem(self) -> str:
        """The last part of a namespaced command's name (`component` of `frontend:component`)."""
        return self.name.rsplit(":", 1)[-1]

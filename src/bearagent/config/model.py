"""`config.yaml` (workspace and user) into a typed `BearConfig`. Lenient per file, strict per field: a bad value is
an error naming the file, line and key (the key falls back to its default); an unknown key is a warning with a
did-you-mean. The `models`, `mcp_servers` and `hooks` sections are kept raw here and turned into specs by their
registries (each entry validated on its own).

Why it is long: every top-level key of config.yaml is parsed and merged here, with its diagnostic; splitting the
keys across modules would split the one list of what config.yaml may contain.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from pydantic import Field

from bearagent.config.files import YamlDoc, did_you_mean, load_yaml_mapping, unknown_key_diagnostics
from bearagent.config.retention_settings import RetentionSettings
from bearagent.config.rewind_settings import RewindSettings
from bearagent.config.safe_read import stray_file
from bearagent.config.store_settings import StoreSettings
from bearagent.domain._base import DomainModel
from bearagent.domain.budgets import BUDGET_FIELDS, BudgetLimits
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.specs import CompactionSettings, Level
from bearagent.sandbox.settings import SandboxSettings, ShellEnvPolicy, merge_sandbox, merge_shell_env

WorkspaceKind = Literal["project", "chat"]
ExecutionPolicy = Literal["local", "none"]
"""Seed 002's `Workspace.execution_policy`: `local` runs tools, MCP servers and hooks here; `none` runs none of them
(a chat workspace always; any other when a config file or the server config says so). `service/execution.py` owns
the refusal."""
TOP_LEVEL_KEYS = frozenset(
    {
        "kind",
        "execution_policy",
        "default_agent",
        "compat",
        "models",
        "default_model",
        "mcp_servers",
        "a2a_agents",
        "hooks",
        "permissions",
        "budgets",
        "web_fetch",
        "web_search",
        "skills",
        "permission_mode",
        "sandbox",
        "shell_env",
        "model_turns",
        "store",
        "compaction",
        "retention",
        "rewind",
    }
)
BUDGET_KEYS = BUDGET_FIELDS
PERMISSION_KEYS = ("allow", "ask", "deny")
DIRECTORY_KEYS = ("additional_directories", "additionalDirectories")
"""`permissions.additional_directories` (Claude Code's `additionalDirectories` is accepted as an alias)."""
DEFAULT_SKILL_CATALOG_CHARS = 8_000
DEFAULT_OUTPUT_CONTINUATIONS = 3
MAX_OUTPUT_CONTINUATIONS = 20


class PermissionLists(DomainModel):
    """The rule strings of `permissions:` as written (`Read`, `Bash(git status)`); `tools.permissions.PermissionRules`
    is their parsed form, which the gate evaluates (deny > ask > allow)."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    additional_directories: tuple[str, ...] = ()
    """Absolute directories the file tools (and a sandboxed Bash) may use besides the workspace, from every level
    (`permissions.additional_directories`, Claude Code's `permissions.additionalDirectories`)."""


class WebFetchSettings(DomainModel):
    allow_private_network: bool = False


WEB_SEARCH_FIELDS: Mapping[str, type] = {"provider": str, "base_url": str, "api_key_env": str, "max_results": int}
"""`web_search:` (docs/tools.md#websearch): the search service WebSearch uses; merged key by key."""


class WebSearchSettings(DomainModel):
    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    max_results: int | None = None


class BearConfig(DomainModel):
    """The merged settings of the user and workspace `config.yaml` (the workspace wins key by key)."""

    kind: WorkspaceKind = "project"
    execution_policy: ExecutionPolicy = "local"
    """`none` when the workspace is `kind: chat` or any config file (or the server config) says `none`; a level never
    loosens another's `none`."""
    execution_policy_by: str | None = None
    """What made the policy `none` (`kind: chat`, a config file's path, the server config), for the refusal."""
    default_agent: str = Field(default="build", min_length=1, max_length=64)
    compat: bool = True
    default_model: str | None = Field(default=None, max_length=256)
    permissions: PermissionLists = Field(default_factory=PermissionLists)
    budgets: BudgetLimits = Field(default_factory=BudgetLimits)
    web_fetch: WebFetchSettings = Field(default_factory=WebFetchSettings)
    web_search: WebSearchSettings = Field(default_factory=WebSearchSettings)
    skill_catalog_chars: int = Field(default=DEFAULT_SKILL_CATALOG_CHARS, ge=0, le=1_000_000)
    permission_mode: str | None = None
    """The mode of the most specific config that set one (workspace over user); agents may set their own."""
    permission_ceiling: str | None = None
    """The user config's `permission_mode`: nothing in a workspace may be looser (see docs/security.md)."""
    bypass_disabled_by: str | None = None
    """The file whose `permissions.disableBypassPermissionsMode: "disable"` forbids bypassPermissions (None: allowed)."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """The Bash sandbox; the user config's mode is a ceiling (`bearagent.sandbox.settings.merge_sandbox`)."""
    shell_env: ShellEnvPolicy = Field(default_factory=ShellEnvPolicy)
    max_output_continuations: int = Field(default=DEFAULT_OUTPUT_CONTINUATIONS, ge=0, le=MAX_OUTPUT_CONTINUATIONS)
    """`model_turns.max_output_continuations`: how often a turn cut by the output limit is continued."""
    store: StoreSettings = Field(default_factory=StoreSettings)
    """Where runs are kept (`store:`, user config only: `config/store_settings.py`)."""
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)
    """`compaction:` (docs/runtime.md#compaction); an agent's `policy.compaction` goes over it key by key."""
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    """`retention:` (user config only: `config/retention_settings.py`): `db prune`'s default age, `doctor`'s size."""
    rewind: RewindSettings = Field(default_factory=RewindSettings)
    """`rewind:` (user config only: `config/rewind_settings.py`): the limits of the store of changed files' contents."""


@dataclass
class ConfigFile:
    """One parsed config.yaml: its scalar settings (only keys that were set and valid) and raw sections."""

    path: Path
    level: Level
    doc: YamlDoc | None
    settings: dict[str, object] = field(default_factory=lambda: {})
    models: dict[str, object] = field(default_factory=lambda: {})
    mcp_servers: dict[str, object] = field(default_factory=lambda: {})
    a2a_agents: dict[str, object] = field(default_factory=lambda: {})
    """`a2a_agents:` as written; `a2a/specs.py` parses it (docs/a2a.md#delegating-to-a-remote-a2a-agent)."""
    hooks: dict[str, object] = field(default_factory=lambda: {})

    def line_of(self, key: str) -> int | None:
        return self.doc.line_of(key) if self.doc else None


def _error(cf: ConfigFile, key: str, message: str, fix: str) -> Diagnostic:
    return Diagnostic(
        severity="error",
        code="config.invalid_value",
        message=f"{key}: {message}; the default is used instead",
        source=str(cf.path),
        line=cf.line_of(key.split(".")[-1]),
        field=key,
        fix=fix,
    )


def _string_list(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in cast(list[object], value)):
        return tuple(cast(list[str], value))
    return None


def load_config_file(path: Path, level: Level, diagnostics: list[Diagnostic]) -> ConfigFile | None:
    """Parse one config.yaml; None if it does not exist or is unreadable (then a diagnostic says why)."""
    if not path.is_file():
        stray_file(path, diagnostics, what="config.yaml")  # there but not a file: an error, never "absent"
        return None
    doc = load_yaml_mapping(path, diagnostics, what="config.yaml")
    cf = ConfigFile(path=path, level=level, doc=doc)
    if doc is None:
        return cf
    data = doc.data
    diagnostics.extend(unknown_key_diagnostics(doc, TOP_LEVEL_KEYS, what="config.yaml"))
    if "kind" in data:
        if data["kind"] in get_args(WorkspaceKind):
            cf.settings["kind"] = data["kind"]
        else:
            diagnostics.append(
                _error(cf, "kind", f"must be project or chat, got {data['kind']!r}", "write `kind: project`")
            )
    if "execution_policy" in data:
        if data["execution_policy"] in get_args(ExecutionPolicy):
            cf.settings["execution_policy"] = data["execution_policy"]
        else:
            diagnostics.append(
                _error(
                    cf,
                    "execution_policy",
                    f"must be local or none, got {data['execution_policy']!r}",
                    "write `execution_policy: none` (no tools, MCP servers or hooks run) or `execution_policy: local`",
                )
            )
    for key in ("default_agent", "default_model"):
        if key in data:
            if isinstance(data[key], str) and data[key]:
                cf.settings[key] = data[key]
            else:
                diagnostics.append(_error(cf, key, "must be a non-empty string", f"write `{key}: <name>`"))
    if "compat" in data:
        if isinstance(data["compat"], bool):
            cf.settings["compat"] = data["compat"]
        else:
            diagnostics.append(_error(cf, "compat", "must be true or false", "write `compat: true` or `compat: false`"))
    for section in ("models", "mcp_servers", "a2a_agents", "hooks"):
        if section not in data or data[section] is None:
            continue
        value = data[section]
        if isinstance(value, dict):
            setattr(cf, section, {str(k): v for k, v in cast(dict[object, object], value).items()})
        else:
            diagnostics.append(
                _error(
                    cf,
                    section,
                    f"must be a mapping of name -> entry, got {type(value).__name__}",
                    f"see docs/config.md#{section}",
                )
            )
    _parse_permissions(cf, data.get("permissions"), diagnostics)
    _parse_permission_mode(cf, data, diagnostics)
    _parse_budgets(cf, data.get("budgets"), diagnostics)
    _parse_small_section(cf, data.get("web_fetch"), "web_fetch", {"allow_private_network": bool}, diagnostics)
    _parse_small_section(cf, data.get("web_search"), "web_search", WEB_SEARCH_FIELDS, diagnostics)
    _parse_small_section(cf, data.get("skills"), "skills", {"catalog_budget_chars": int}, diagnostics)
    _parse_small_section(cf, data.get("model_turns"), "model_turns", {"max_output_continuations": int}, diagnostics)
    turns = cast(dict[str, object], cf.settings.get("model_turns", {}))
    count = turns.get("max_output_continuations")
    if isinstance(count, int) and not 0 <= count <= MAX_OUTPUT_CONTINUATIONS:
        del turns["max_output_continuations"]
        diagnostics.append(
            _error(
                cf,
                "model_turns.max_output_continuations",
                f"must be between 0 and {MAX_OUTPUT_CONTINUATIONS}, got {count}",
                "write e.g. `max_output_continuations: 3` (0: a turn cut by the output limit fails the run)",
            )
        )
    _parse_sandbox_sections(cf, data, diagnostics)
    _parse_compaction(cf, data, diagnostics)
    return cf


def _parse_compaction(cf: ConfigFile, data: Mapping[str, object], diagnostics: list[Diagnostic]) -> None:
    """`compaction:`: valid fields land in settings; each bad or unknown one is a diagnostic naming it."""
    if "compaction" not in data:
        return
    from bearagent.config.compaction import parse_compaction

    settings, problems = parse_compaction(data["compaction"], "compaction")
    cf.settings["compaction"] = settings
    for p in problems:
        diagnostics.append(
            Diagnostic(
                severity="warning" if p.severity == "warning" else "error",
                code="config.unknown_key" if p.severity == "warning" else "config.invalid_value",
                message=p.message,
                source=str(cf.path),
                line=cf.line_of(p.field.split(".")[-1]),
                field=p.field,
                fix=p.fix,
            )
        )


def _parse_sandbox_sections(cf: ConfigFile, data: Mapping[str, object], diagnostics: list[Diagnostic]) -> None:
    """`sandbox:` and `shell_env:` (parsed by `bearagent.sandbox.settings`) and `store:` (by
    `bearagent.config.store_settings`): sections whose parser reports problems per field; only valid keys land in
    settings."""
    from bearagent.config.retention_settings import parse_retention
    from bearagent.config.rewind_settings import parse_rewind
    from bearagent.config.store_settings import parse_store
    from bearagent.sandbox.settings import parse_sandbox, parse_shell_env

    for key, (parsed, problems) in (
        ("sandbox", parse_sandbox(data.get("sandbox"), level=cf.level)),
        ("shell_env", parse_shell_env(data.get("shell_env"))),
        ("store", parse_store(data.get("store"), level=cf.level)),
        ("retention", parse_retention(data.get("retention"), level=cf.level)),
        ("rewind", parse_rewind(data.get("rewind"), level=cf.level)),
    ):
        if key in data:
            cf.settings[key] = parsed
        for p in problems:
            if p.severity == "warning":
                diagnostics.append(
                    Diagnostic(
                        severity="warning",
                        code="config.unknown_key",
                        message=f"{p.field}: {p.message}",
                        source=str(cf.path),
                        line=cf.line_of(p.field.split(".")[-1]),
                        field=p.field,
                        fix=p.fix,
                    )
                )
            elif key == "store" and p.field == "store.dsn":  # the store is refused (no default applies)
                refused = _error(cf, p.field, p.message, p.fix)
                diagnostics.append(refused.model_copy(update={"message": f"{p.field}: {p.message}"}))
            else:
                diagnostics.append(_error(cf, p.field, p.message, p.fix))


def _parse_permissions(cf: ConfigFile, value: object, diagnostics: list[Diagnostic]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        diagnostics.append(
            _error(
                cf, "permissions", "must be a mapping with allow/ask/deny lists", "write `permissions: {allow: [Read]}`"
            )
        )
        return
    rules: dict[str, tuple[str, ...]] = {}
    for key, item in cast(dict[str, object], value).items():
        if key in DIRECTORY_KEYS:
            _parse_directories(cf, key, item, diagnostics)
            continue
        if key not in PERMISSION_KEYS:
            diagnostics.append(_unknown(cf, f"permissions.{key}", key, (*PERMISSION_KEYS, DIRECTORY_KEYS[0])))
            continue
        strings = _string_list(item) if item is not None else ()
        if strings is None:
            diagnostics.append(
                _error(
                    cf, f"permissions.{key}", "must be a list of rule strings", f'write `{key}: ["Bash(git status)"]`'
                )
            )
            continue
        rules[key] = strings
    cf.settings["permissions"] = rules


def resolve_directory(entry: str, root: Path | None) -> str | None:
    """An `additionalDirectories` entry as an absolute, resolved path: `~` is the home directory, a relative path
    starts at `root` (the project root). None for an empty entry, an unknown `~user`, or a relative path without a
    root."""
    text = entry.strip()
    if not text or "\x00" in text:
        return None
    expanded = os.path.expanduser(text)
    if expanded.startswith("~") or (root is None and not os.path.isabs(expanded)):
        return None
    path = expanded if os.path.isabs(expanded) or root is None else os.path.join(root, expanded)
    return os.path.realpath(path)  # as the file tools resolve it (`tools/roots.py`)


def _parse_directories(cf: ConfigFile, key: str, value: object, diagnostics: list[Diagnostic]) -> None:
    """Absolute paths of the listed directories: `~` is the home directory; a relative path starts at the workspace
    root for the workspace's config.yaml and is an error in the user's (which serves every workspace)."""
    field = f"permissions.{key}"
    strings = _string_list(value) if value is not None else ()
    if strings is None:
        diagnostics.append(_error(cf, field, "must be a list of directories", f"write `{key}: [~/shared]`"))
        return
    root = cf.path.parent.parent if cf.level == "workspace" else None
    found: list[str] = []
    for entry in strings:
        relative = not entry.strip().startswith(("~", "/"))
        path = resolve_directory(entry, root)
        if path is None:
            why = "a relative path has no base in the user config" if relative else "it cannot be resolved"
            diagnostics.append(_error(cf, field, f"{entry!r}: {why}", "write an absolute path or one starting with ~/"))
        elif not os.path.isdir(path):
            diagnostics.append(
                Diagnostic(
                    severity="warning",
                    code="claude.directory_missing",
                    message=f"{field}: {entry!r} is not a directory ({path}); it is left out",
                    source=str(cf.path),
                    line=cf.line_of(key),
                    field=field,
                    fix="create it, or fix the path",
                )
            )
        elif path not in found:
            found.append(path)
    cf.settings["additional_directories"] = tuple(found)


def _parse_permission_mode(cf: ConfigFile, data: Mapping[str, object], diagnostics: list[Diagnostic]) -> None:
    if "permission_mode" not in data:
        return
    from bearagent.domain.errors import BearAgentError
    from bearagent.domain.permission_modes import PERMISSION_MODES, parse_permission_mode

    value = data["permission_mode"]
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        cf.settings["permission_mode"] = parse_permission_mode(value)
    except (BearAgentError, ValueError):
        diagnostics.append(
            _error(
                cf,
                "permission_mode",
                f"{value!r} is not a permission mode",
                f"use one of: {', '.join(PERMISSION_MODES)}",
            )
        )


def _parse_budgets(cf: ConfigFile, value: object, diagnostics: list[Diagnostic]) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        diagnostics.append(_error(cf, "budgets", "must be a mapping", "write `budgets: {max_tool_calls: 200}`"))
        return
    budgets: dict[str, int] = {}
    for key, item in cast(dict[str, object], value).items():
        if key not in BUDGET_KEYS:
            diagnostics.append(_unknown(cf, f"budgets.{key}", key, BUDGET_KEYS))
        elif isinstance(item, int) and not isinstance(item, bool) and item >= 0 and _budget_ok(key, item):
            budgets[key] = item
        else:
            diagnostics.append(
                _error(cf, f"budgets.{key}", f"must be a non-negative integer, got {item!r}", f"write `{key}: 100`")
            )
    cf.settings["budgets"] = budgets


def _budget_ok(key: str, value: int) -> bool:
    try:
        BudgetLimits.model_validate({key: value})
    except ValueError:
        return False
    return True


def _parse_small_section(
    cf: ConfigFile, value: object, name: str, fields: Mapping[str, type], diagnostics: list[Diagnostic]
) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        diagnostics.append(_error(cf, name, "must be a mapping", f"see docs/config.md#{name}"))
        return
    parsed: dict[str, object] = {}
    for key, item in cast(dict[str, object], value).items():
        expected = fields.get(key)
        if expected is None:
            diagnostics.append(_unknown(cf, f"{name}.{key}", key, tuple(fields)))
        elif isinstance(item, expected) and not (expected is int and isinstance(item, bool)):
            parsed[key] = item
        else:
            diagnostics.append(
                _error(
                    cf, f"{name}.{key}", f"must be {expected.__name__}, got {item!r}", f"fix the value of {name}.{key}"
                )
            )
    cf.settings[name] = parsed


def _unknown(cf: ConfigFile, full: str, key: str, known: tuple[str, ...]) -> Diagnostic:
    guess = did_you_mean(key, known)
    return Diagnostic(
        severity="warning",
        code="config.unknown_key",
        message=f"unknown key {full!r} in config.yaml"
        + (f" (did you mean {guess!r}?)" if guess else "")
        + "; it is ignored",
        source=str(cf.path),
        line=cf.line_of(key),
        field=full,
        fix=f"rename it to {guess!r}" if guess else f"remove it; known keys: {', '.join(known)}",
    )


def merge_config(files: list[ConfigFile]) -> BearConfig:
    """Merge settings lowest first (user, then workspace): scalars are replaced; permission lists are concatenated
    (deny from any level still wins); budgets and small sections merge key by key."""
    kind: str = "project"
    policy_by: str | None = None
    default_agent = "build"
    compat = True
    default_model: str | None = None
    permissions: dict[str, list[str]] = {k: [] for k in PERMISSION_KEYS}
    budgets: dict[str, int] = {}
    allow_private = False
    web_search: dict[str, object] = {}
    catalog = DEFAULT_SKILL_CATALOG_CHARS
    continuations = DEFAULT_OUTPUT_CONTINUATIONS
    permission_mode: str | None = None
    ceiling: str | None = None
    directories: list[str] = []
    bypass_disabled_by: str | None = None
    store = StoreSettings()
    compaction = CompactionSettings()
    retention = RetentionSettings()
    rewind = RewindSettings()
    sandbox_layers = [(cf.level, cast(dict[str, object], cf.settings.get("sandbox", {}))) for cf in files]
    shell_env_layers = [(cf.level, cast(dict[str, object], cf.settings.get("shell_env", {}))) for cf in files]
    for cf in files:
        s = cf.settings
        kind = cast(str, s.get("kind", kind))
        if s.get("execution_policy") == "none" and policy_by is None:
            policy_by = str(cf.path)
        default_agent = cast(str, s.get("default_agent", default_agent))
        default_model = cast("str | None", s.get("default_model", default_model))
        if cf.level == "workspace":
            compat = cast(bool, s.get("compat", compat))
        for key, rules in cast(dict[str, tuple[str, ...]], s.get("permissions", {})).items():
            permissions[key].extend(r for r in rules if r not in permissions[key])
        directories.extend(
            d for d in cast(tuple[str, ...], s.get("additional_directories", ())) if d not in directories
        )
        if s.get("disable_bypass") is True:
            bypass_disabled_by = str(cf.path)
        layer_budgets = cast(dict[str, int], s.get("budgets", {}))
        if cf.level == "workspace":  # a workspace lowers the user's budgets (or the defaults), never raises them
            ceiling_values = {**BudgetLimits().model_dump(), **budgets}
            layer_budgets = {k: min(v, ceiling_values.get(k, v)) for k, v in layer_budgets.items()}
        budgets.update(layer_budgets)
        allow_private = cast(
            bool, cast(dict[str, object], s.get("web_fetch", {})).get("allow_private_network", allow_private)
        )
        web_search.update(cast(dict[str, object], s.get("web_search", {})))
        catalog = cast(int, cast(dict[str, object], s.get("skills", {})).get("catalog_budget_chars", catalog))
        continuations = cast(
            int, cast(dict[str, object], s.get("model_turns", {})).get("max_output_continuations", continuations)
        )
        if isinstance(s.get("permission_mode"), str):
            permission_mode = cast(str, s["permission_mode"])
            if cf.level != "workspace":
                ceiling = permission_mode
        layer = s.get("compaction")
        if isinstance(layer, CompactionSettings):
            compaction = layer.over(compaction)
        if s.get("store") and cf.level != "workspace":  # a workspace's is refused when parsed; never merged
            store = StoreSettings.model_validate({**cast(dict[str, object], s["store"]), "source": str(cf.path)})
        if s.get("retention") and cf.level != "workspace":  # a workspace's is refused when parsed; never merged
            retention = retention.model_copy(update={**cast(dict[str, object], s["retention"]), "source": str(cf.path)})
        if s.get("rewind") and cf.level != "workspace":  # a workspace's is refused when parsed; never merged
            rewind = rewind.model_copy(update={**cast(dict[str, object], s["rewind"]), "source": str(cf.path)})
    if kind == "chat":
        policy_by = "kind: chat"
    return BearConfig(
        kind=cast(WorkspaceKind, kind),
        execution_policy="none" if policy_by is not None else "local",
        execution_policy_by=policy_by,
        default_agent=default_agent,
        compat=compat,
        default_model=default_model,
        permissions=PermissionLists(
            **{k: tuple(v) for k, v in permissions.items()}, additional_directories=tuple(directories)
        ),
        budgets=BudgetLimits(**budgets),
        web_fetch=WebFetchSettings(allow_private_network=allow_private),
        web_search=WebSearchSettings.model_validate(web_search),
        skill_catalog_chars=catalog,
        max_output_continuations=continuations,
        permission_mode=permission_mode,
        permission_ceiling=ceiling,
        bypass_disabled_by=bypass_disabled_by,
        sandbox=merge_sandbox(sandbox_layers).model_copy(update={"additional_directories": tuple(directories)}),
        shell_env=merge_shell_env(shell_env_layers),
        store=store,
        compaction=compaction,
        retention=retention,
        rewind=rewind,
    )

"""ModelRegistry: `models:` entries of the workspace config (`workspace/<name>`), the user config and plugins
(`platform/<name>`). Refs resolve exactly; a bare name resolves workspace first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pydantic import ValidationError

from bearagent.config.env import expand_env
from bearagent.config.files import YamlDoc, did_you_mean, suggestion
from bearagent.config.layers import Candidate, Layered, Resolved, resolve_layers
from bearagent.config.workspace import Source, config_file_source, contribution_source
from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import Level, ModelEntry
from bearagent.registries._base import entry_reporter, first_error, unknown_key

if TYPE_CHECKING:
    from bearagent.config.config_files import ConfigFiles
    from bearagent.plugins.contributions import PluginContributions, ProviderRegistration

BUILTIN_PROVIDERS: Mapping[str, tuple[str, ...]] = {
    "openai": ("responses", "chat"),
    "openai-compatible": ("chat", "responses"),
    "anthropic": ("messages",),
    "scripted": (),
}
MODEL_KEYS = frozenset(
    {
        "provider",
        "api",
        "model",
        "base_url",
        "api_key_env",
        "max_output_tokens",
        "temperature",
        "timeout_s",
        "stream_idle_timeout_s",
        "max_stream_s",
        "context_window",
        "price",
        "script",
        "headers",
        "stream",
    }
)
_SECRET_KEYS = frozenset({"api_key", "apiKey", "key", "token", "secret"})


class ModelRegistry:
    def __init__(
        self,
        workspace: Layered[ModelEntry],
        platform: Layered[ModelEntry],
        diagnostics: Sequence[Diagnostic],
        providers: Iterable[str] = (),
    ) -> None:
        self._workspace = workspace
        self._platform = platform
        self.providers: tuple[str, ...] = tuple(sorted({*BUILTIN_PROVIDERS, *providers}))
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        self.implicit_default: str | None = None
        """The ref agents without a model use when config.yaml sets no default_model: the only configured entry,
        kept when the catalog added Claude Code's names beside it (`registries/model_catalog.py`)."""

    def only_entry(self) -> ModelEntry | None:
        """The entry an agent inherits when nothing names one: `implicit_default`, else the only entry, else None."""
        if self.implicit_default is not None:
            return self.get(self.implicit_default)
        entries = self.all()
        return entries[0] if len(entries) == 1 else None

    def entries(self) -> list[Resolved[ModelEntry]]:
        return [self._workspace.resolved[n] for n in sorted(self._workspace.resolved)] + [
            self._platform.resolved[n] for n in sorted(self._platform.resolved)
        ]

    def all(self) -> list[ModelEntry]:
        return [r.item for r in self.entries()]

    def refs(self) -> list[str]:
        return [e.ref for e in self.all()]

    def bare_shadowed(self) -> dict[str, str]:
        """`platform/<m>` -> `workspace/<m>` for every name both levels define: the bare name `m` resolves to the
        workspace entry (`get`), so the platform one is reachable only by its full ref."""
        return {
            f"platform/{n}": f"workspace/{n}" for n in sorted(self._workspace.resolved) if n in self._platform.resolved
        }

    def get(self, ref: str) -> ModelEntry | None:
        """Exact lookup of `workspace/x`, `platform/x`, or a bare name (workspace first)."""
        level, _, name = ref.partition("/")
        if name and level == "workspace":
            found = self._workspace.resolved.get(name)
        elif name and level == "platform":
            found = self._platform.resolved.get(name)
        else:
            found = self._workspace.resolved.get(ref) or self._platform.resolved.get(ref)
        return found.item if found else None

    def resolve(self, ref: str, *, where: str = "model ref") -> ModelEntry:
        """The entry for `ref`, or a configuration error listing the close matches."""
        entry = self.get(ref)
        if entry is not None:
            return entry
        candidates = [*self.refs(), *(e.name for e in self.all())]
        close = sorted({c for c in candidates if did_you_mean(ref.split("/")[-1], [c.split("/")[-1]])})
        listing = name_list(self.refs()) or "none are configured"
        raise BearAgentError(
            ErrorInfo.of(
                "configuration",
                "unknown_model",
                f"{where}: unknown model {ref!r}" + (f"; close matches: {', '.join(close)}" if close else ""),
                ref=ref,
            ),
            hint=f"use one of: {listing}; or add it under `models:` in .bearagent/config.yaml",
        )

    def for_use(self, entry: ModelEntry, env: Mapping[str, str]) -> ModelEntry:
        """A copy with `${VAR}` expanded in `model`, `base_url` and header values (at the point of use); a missing
        variable raises a configuration error naming the variable and the entry."""
        where = f"models.{entry.name}"
        updates: dict[str, object] = {}
        if entry.base_url is not None:
            updates["base_url"] = expand_env(entry.base_url, env, where=f"{where}.base_url")
        if entry.model is not None:
            updates["model"] = expand_env(entry.model, env, where=f"{where}.model")
        if entry.headers:
            updates["headers"] = {k: expand_env(v, env, where=f"{where}.headers.{k}") for k, v in entry.headers.items()}
        return entry.model_copy(update=updates)


def parse_model_entries(
    raw: Mapping[str, object], *, path: Path, level: Level, doc: YamlDoc | None, providers: Iterable[str]
) -> tuple[list[ModelEntry], list[Diagnostic]]:
    known_providers = sorted({*BUILTIN_PROVIDERS, *providers})
    out: list[ModelEntry] = []
    diags: list[Diagnostic] = []
    for name, value in raw.items():
        line = doc.line_of(name) if doc else None
        add = entry_reporter(diags, source=str(path), line=line, field=None, subject=name)
        if not isinstance(value, dict):
            add(
                "error",
                "model.invalid",
                f"models.{name} must be a mapping with at least `provider`; skipped",
                f"write `{name}: {{provider: openai, model: gpt-5-mini}}`",
                f"models.{name}",
            )
            continue
        data = dict(cast(dict[str, object], value))
        secret = next((k for k in data if k in _SECRET_KEYS), None)
        if secret is not None:
            add(
                "error",
                "model.secret_in_config",
                f"models.{name}.{secret}: a key must never be written in config; the entry was skipped",
                "put the key in an environment variable and write `api_key_env: OPENAI_API_KEY`",
                f"models.{name}.{secret}",
            )
            continue
        for key in list(data):
            if key not in MODEL_KEYS:
                message, fix = unknown_key(key, MODEL_KEYS, f"'models.{name}.{key}'")
                add("warning", "config.unknown_key", message, fix, f"models.{name}.{key}")
                del data[key]
        provider = data.get("provider")
        if not isinstance(provider, str) or provider not in known_providers:
            add(
                "error",
                "model.unknown_provider",
                f"models.{name}: unknown provider {provider!r}"
                + (suggestion(str(provider), known_providers) if provider else "")
                + "; the entry was skipped",
                f"use one of: {', '.join(known_providers)} (plugins add more)",
                f"models.{name}.provider",
            )
            continue
        api = data.get("api")
        allowed_apis = BUILTIN_PROVIDERS.get(provider)
        if api is not None and allowed_apis and api not in allowed_apis:
            add(
                "error",
                "model.invalid_api",
                f"models.{name}.api {api!r} is not supported by provider {provider}; the entry was skipped",
                f"use one of: {', '.join(allowed_apis)}",
                f"models.{name}.api",
            )
            continue
        if provider == "scripted":
            script = data.get("script")
            if not isinstance(script, str) or not script:
                add(
                    "error",
                    "model.missing_script",
                    f"models.{name}: a scripted model needs `script: <file.yaml>`; the entry was skipped",
                    "add `script: scripts/demo.yaml` (relative to config.yaml)",
                    f"models.{name}.script",
                )
                continue
            script_path = Path(script) if Path(script).is_absolute() else path.parent / script
            data["script"] = str(script_path)
            if not script_path.is_file():
                add(
                    "warning",
                    "model.script_missing",
                    f"models.{name}.script: {script_path} does not exist (runs with this model will fail)",
                    "create the script file or fix the path (relative to config.yaml)",
                    f"models.{name}.script",
                )
        try:
            entry = ModelEntry.model_validate({**data, "name": name, "level": level, "source": str(path)})
        except ValidationError as exc:
            key, problem = first_error(exc)
            add(
                "error",
                "model.invalid",
                f"models.{name}.{key}: {problem}; the entry was skipped",
                f"fix models.{name}.{key}",
                f"models.{name}.{key}",
            )
            continue
        out.append(entry)
        too_short = _cap_shorter_than_waits(entry)
        if too_short is not None:
            message, fix = too_short
            add("warning", "model.max_stream_too_short", message, fix, f"models.{name}.max_stream_s")
    return out, diags


def _cap_shorter_than_waits(entry: ModelEntry) -> tuple[str, str] | None:
    """(message, fix) when the entry's cap on a whole answer (`max_stream_s`) ends every call before one of its
    waits (`timeout_s`, `stream_idle_timeout_s`) could: that wait then never applies."""
    cap = entry.max_stream_s
    if cap is None:
        return None
    for key, value in (("timeout_s", entry.timeout_s), ("stream_idle_timeout_s", entry.stream_idle_timeout_s)):
        if value is not None and cap < value:
            return (
                f"models.{entry.name}.max_stream_s ({cap:g}s) is shorter than {key} ({value:g}s): every answer "
                f"ends at max_stream_s before {key} can apply",
                f"raise max_stream_s above {key}, or remove it (no cap on a whole answer)",
            )
    return None


def build_model_registry(
    entries: Iterable[tuple[ModelEntry, Source]], diagnostics: Sequence[Diagnostic], providers: Iterable[str]
) -> ModelRegistry:
    ws: list[Candidate[ModelEntry]] = []
    pf: list[Candidate[ModelEntry]] = []
    for entry, source in entries:
        (ws if source.level == "workspace" else pf).append(
            Candidate(entry.name, entry, source, entry.source or source.id)
        )
    ws_l = resolve_layers(ws, kind="model")
    pf_l = resolve_layers(pf, kind="model")
    return ModelRegistry(ws_l, pf_l, [*diagnostics, *ws_l.diagnostics, *pf_l.diagnostics], providers)


def accepted_providers(
    registrations: Iterable[ProviderRegistration], *, builtin_plugin: str
) -> tuple[list[ProviderRegistration], list[Diagnostic]]:
    """The provider registrations in force: a built-in provider id belongs to the built-in plugin; another plugin's
    registration of one is left out, with an error naming the plugin."""
    accepted: list[ProviderRegistration] = []
    diags: list[Diagnostic] = []
    for reg in registrations:
        if reg.id in BUILTIN_PROVIDERS and reg.plugin != builtin_plugin:
            diags.append(
                Diagnostic(
                    severity="error",
                    code="plugin.provider_shadowed",
                    message=f"plugin {reg.plugin!r} registers provider id {reg.id!r}, which is built in and cannot be replaced; it was ignored",
                    source=f"plugin:{reg.plugin}",
                    subject=reg.id,
                    fix=f"ask the author of {reg.plugin!r} to use another provider id",
                )
            )
        else:
            accepted.append(reg)
    return accepted, diags


def load_models(
    files: ConfigFiles,
    contributions: PluginContributions,
    *,
    builtin_plugin: str,
    env: Mapping[str, str] | None = None,
    default_model: str | None = None,
) -> ModelRegistry:
    """The model registry of a workspace: `models:` of the workspace's config.yaml and the user's, and the entries
    plugins registered, against the provider ids in force (`accepted_providers`). With `env`, the built-in catalog
    adds the zero-config entry and Claude Code's model names (`registries/model_catalog.py`)."""
    from bearagent.registries.model_catalog import claude_name_entries, environment_entry

    accepted, diags = accepted_providers(contributions.providers, builtin_plugin=builtin_plugin)
    providers = [reg.id for reg in accepted]
    entries: list[tuple[ModelEntry, Source]] = []
    for cf in files.yaml_files():
        source = config_file_source(cf.level)
        if cf.models:
            found, d = parse_model_entries(cf.models, path=cf.path, level=source.level, doc=cf.doc, providers=providers)
            diags.extend(d)
            entries.extend((e, source) for e in found)
    for plugin, entry in contributions.models:
        entries.append((entry, contribution_source(plugin)))
    if env is None:
        return build_model_registry(entries, diags, providers)
    if not entries:
        found_env = environment_entry(env)
        if found_env is not None:
            entries.append((found_env[0], config_file_source("platform")))
            diags.append(found_env[1])
    registry = build_model_registry(entries, diags, providers)
    default = registry.get(default_model) if default_model else None
    if default is None and not default_model and len(registry.all()) == 1:
        default = registry.all()[0]
    if default is None:
        return registry
    taken = {e.name for e, _ in entries}
    source = config_file_source(default.level)
    derived = [(e, source) for e in claude_name_entries(default, taken)]
    if not derived:
        return registry
    widened = build_model_registry([*entries, *derived], diags, providers)
    widened.implicit_default = None if default_model else default.ref
    return widened

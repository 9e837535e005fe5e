"""ActionRegistry: `actions/<name>.md` (description, agent, inputs JSON Schema, optional model; body template)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from pydantic import ValidationError

from bearagent.config.files import FrontmatterDoc, did_you_mean, load_frontmatter
from bearagent.config.layers import Candidate, Layered, Resolved, resolve_layers
from bearagent.config.workspace import Source
from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import NAME_RE, ActionSpec

ACTION_KEYS = frozenset({"name", "description", "agent", "inputs", "model"})
DEFAULT_INPUTS: dict[str, object] = {
    "type": "object",
    "properties": {"arguments": {"type": "string", "description": "free-form arguments ($ARGUMENTS)"}},
}
_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class ActionRegistry:
    def __init__(self, layered: Layered[ActionSpec], diagnostics: Sequence[Diagnostic]) -> None:
        self._layered = layered
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)

    def get(self, name: str) -> ActionSpec | None:
        found = self._layered.resolved.get(name)
        return found.item if found else None

    def resolved(self, name: str) -> Resolved[ActionSpec] | None:
        return self._layered.resolved.get(name)

    def names(self) -> list[str]:
        return sorted(self._layered.resolved)

    def all(self) -> list[ActionSpec]:
        return [self._layered.resolved[n].item for n in self.names()]

    def entries(self) -> list[Resolved[ActionSpec]]:
        return [self._layered.resolved[n] for n in self.names()]

    @property
    def broken(self) -> Mapping[str, tuple[str, ...]]:
        return self._layered.broken

    def require(self, name: str) -> ActionSpec:
        action = self.get(name)
        if action is None:
            guess = did_you_mean(name, self.names())
            raise BearAgentError(
                ErrorInfo.of(
                    "not_found",
                    "action",
                    f"no action named {name!r}" + (f" (did you mean {guess!r}?)" if guess else ""),
                ),
                hint=f"available actions: {', '.join(self.names()) or 'none'}; add one as .bearagent/actions/{name}.md",
            )
        return action


def render_action(action: ActionSpec, inputs: Mapping[str, JsonValue]) -> str:
    """Validate `inputs` against the action's JSON Schema, then fill the template: `$ARGUMENTS` is the `arguments`
    input (or every input as `k=v` when there is none), `$<input-name>` each input. Unknown `$words` stay as-is."""
    from jsonschema import Draft202012Validator

    schema = cast(dict[str, Any], thaw_json_mapping(action.inputs))
    validator = cast(Any, Draft202012Validator(schema))
    plain = {k: v for k, v in inputs.items()}
    error = cast(Any, next(iter(validator.iter_errors(plain)), None))
    if error is not None:
        where = "/".join(str(p) for p in cast(list[object], list(error.absolute_path))) or "(inputs)"
        raise BearAgentError(
            ErrorInfo.of(
                "validation",
                "action_inputs",
                f"action {action.name!r}: input {where}: {cast(str, error.message)}",
                field=where,
            ),
            hint=f"pass inputs matching the schema in {action.source or action.name} (e.g. `bearagent action run {action.name} key=value`)",
        )

    def text(value: JsonValue) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    if "arguments" in plain:
        arguments = text(plain["arguments"])
    else:
        arguments = " ".join(f"{k}={text(v)}" for k, v in plain.items())

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        if key in plain:
            return text(plain[key])
        return match.group(0)

    return _PLACEHOLDER.sub(replace, action.template)


def parse_action(doc: FrontmatterDoc, source: Source) -> tuple[ActionSpec | None, list[Diagnostic]]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    diags: list[Diagnostic] = []
    path = doc.path

    def add(severity: str, code: str, key: str | None, message: str, fix: str) -> None:
        diags.append(
            Diagnostic(
                severity="error" if severity == "error" else "warning",
                code=code,
                message=message,
                source=str(path),
                line=doc.line_of(key) if key else None,
                field=key,
                fix=fix,
            )
        )

    data = dict(doc.data)
    for key in list(data):
        if key not in ACTION_KEYS:
            guess = did_you_mean(key, ACTION_KEYS)
            add(
                "warning",
                "config.unknown_key",
                key,
                f"unknown key {key!r} in action file"
                + (f" (did you mean {guess!r}?)" if guess else "")
                + "; it is ignored",
                f"rename it to {guess!r}" if guess else f"known keys: {', '.join(sorted(ACTION_KEYS))}",
            )
            del data[key]
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        add(
            "error",
            "action.invalid_name",
            "name",
            f"action name {name!r} is invalid (lowercase letters, digits, hyphens; at most 64); the file was skipped",
            "rename the file, e.g. review.md",
        )
        return None, diags
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        add(
            "error",
            "action.missing_description",
            None,
            f"action {name!r} has no description; the file was skipped",
            "add `description: ...` to the frontmatter",
        )
        return None, diags
    inputs = data.get("inputs", DEFAULT_INPUTS)
    if not isinstance(inputs, dict):
        add(
            "error",
            "action.invalid_inputs",
            "inputs",
            "inputs must be a JSON Schema object; the file was skipped",
            "write `inputs: {type: object, properties: {path: {type: string}}}`",
        )
        return None, diags
    schema = cast(dict[str, object], inputs)
    if "type" not in schema and "properties" in schema:
        schema = {"type": "object", **schema}
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        add(
            "error",
            "action.invalid_inputs",
            "inputs",
            f"inputs is not a valid JSON Schema: {exc.message}; the file was skipped",
            "fix the schema (draft 2020-12)",
        )
        return None, diags
    if schema.get("type") != "object":
        add(
            "error",
            "action.invalid_inputs",
            "inputs",
            "inputs must describe an object (`type: object`); the file was skipped",
            "write `inputs: {type: object, properties: {...}}`",
        )
        return None, diags
    for key in ("agent", "model"):
        if key in data and not isinstance(data[key], str):
            add(
                "error", "action.invalid_field", key, f"{key} must be a string; it is ignored", f"write `{key}: <name>`"
            )
            del data[key]
    try:
        spec = ActionSpec(
            name=name,
            description=description.strip(),
            agent=cast("str | None", data.get("agent")),
            model=cast("str | None", data.get("model")),
            inputs=schema,  # type: ignore[arg-type]
            template=doc.body,
            source=str(path),
            level=source.level,
            origin=source.id,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        add("error", "action.invalid_field", key, f"{key}: {first['msg']}; the file was skipped", f"fix `{key}`")
        return None, diags
    return spec, diags


def load_actions(sources: Iterable[Source]) -> ActionRegistry:
    diags: list[Diagnostic] = []
    candidates: list[Candidate[ActionSpec]] = []
    for source in sources:
        directory = source.directory
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.md")):
            if path.name.lower() == "readme.md":
                continue
            doc = load_frontmatter(path, diags, what="action file")
            if doc is None:
                continue
            spec, file_diags = parse_action(doc, source)
            diags.extend(file_diags)
            if spec is not None:
                candidates.append(Candidate(spec.name, spec, source, str(path)))
    layered = resolve_layers(candidates, kind="action")
    return ActionRegistry(layered, [*diags, *layered.diagnostics])

"""ActionRegistry: `actions/<name>.md` (description, agent, inputs JSON Schema, optional model; body template)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from bearagent.config.files import FrontmatterDoc, suggestion
from bearagent.config.workspace import Source
from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import NAME_RE, ActionSpec
from bearagent.registries._base import (
    LayeredRegistry,
    first_error,
    frontmatter_candidates,
    frontmatter_reporter,
    unknown_key,
)
from bearagent.registries.commands import DEFAULT_INPUTS as DEFAULT_INPUTS
from bearagent.registries.commands import ModelLookup, command_candidates, command_model, render_command
from bearagent.tools.fast_schema import plainly_valid_schema

ACTION_KEYS = frozenset({"name", "description", "agent", "inputs", "model"})
_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class ActionRegistry(LayeredRegistry[ActionSpec]):
    def find(self, name: str) -> ActionSpec | None:
        """Exact lookup; else the one command whose last part is `name` (`component` for `frontend:component`)."""
        action = self.get(name)
        if action is not None or ":" in name:
            return action
        matches = [a for a in self.all() if a.kind == "command" and a.stem == name]
        return matches[0] if len(matches) == 1 else None

    def ambiguous(self, name: str) -> list[str]:
        """The namespaced commands a bare `name` could mean, when it means more than one."""
        if self.get(name) is not None or ":" in name:
            return []
        matches = [a.name for a in self.all() if a.kind == "command" and a.stem == name]
        return matches if len(matches) > 1 else []

    def require(self, name: str) -> ActionSpec:
        action = self.find(name)
        several = self.ambiguous(name)
        if several:
            raise BearAgentError(
                ErrorInfo.of("not_found", "action", f"{name!r} could be any of the commands {name_list(several)}"),
                hint=f"name it in full, e.g. `{several[0]}`",
            )
        if action is None:
            raise BearAgentError(
                ErrorInfo.of("not_found", "action", f"no action named {name!r}" + suggestion(name, self.names())),
                hint=f"available actions: {name_list(self.names()) or 'none'}; add one as .bearagent/actions/{name}.md",
            )
        return action


@dataclass(frozen=True, slots=True)
class ActionInvocation:
    """What running an action sends and runs with: its prompt, what the user should be told about it (`notes`), the
    agent (None: the workspace's default), the model (None: the agent's) and the tools it pre-approves."""

    prompt: str
    agent: str | None
    model: str | None
    allowed_tools: tuple[str, ...]
    notes: tuple[str, ...] = ()


def invoke_action(
    action: ActionSpec, inputs: Mapping[str, JsonValue], *, root: Path | None, models: ModelLookup
) -> ActionInvocation:
    """The one rule for running an action, whatever the face (`bearagent action run`, the HTTP route, a session's
    `/name`): a custom command (`kind: command`) takes its `arguments` input as typed and renders as a command;
    another action's inputs are checked against its schema. A command's `model` counts only when it names a model
    entry (`command_model`); its `allowed-tools` are pre-approved for the run."""
    if action.kind == "command":
        arguments = inputs.get("arguments", "")
        rendered = render_command(action, arguments if isinstance(arguments, str) else str(arguments), root=root)
        prompt, notes = rendered.prompt, rendered.notes
    else:
        prompt, notes = render_action(action, inputs), ()
    return ActionInvocation(prompt, action.agent, command_model(action, models), action.allowed_tools, notes)


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
    diags: list[Diagnostic] = []
    path = doc.path
    add = frontmatter_reporter(doc, diags)
    data = dict(doc.data)
    for key in list(data):
        if key not in ACTION_KEYS:
            add("warning", "config.unknown_key", key, *unknown_key(key, ACTION_KEYS, f"{key!r} in action file"))
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
    problem = schema_problem(schema)
    if problem is not None:
        add(
            "error",
            "action.invalid_inputs",
            "inputs",
            f"inputs is not a valid JSON Schema: {problem}; the file was skipped",
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
        key, problem = first_error(exc)
        add("error", "action.invalid_field", key, f"{key}: {problem}; the file was skipped", f"fix `{key}`")
        return None, diags
    return spec, diags


def schema_problem(schema: Mapping[str, object]) -> str | None:
    """Why `schema` is not a valid draft 2020-12 schema, or None; `jsonschema` is asked only for a schema outside
    the common subset (`tools/fast_schema.py`)."""
    if plainly_valid_schema(schema):
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc.message
    return None


def load_actions(sources: Iterable[Source], command_sources: Iterable[Source] = ()) -> ActionRegistry:
    """Actions (`actions/*.md`) and custom slash commands (`commands/**/*.md`, see `registries.commands`) in one
    registry under the one precedence rule."""
    diags: list[Diagnostic] = []
    files = [
        (source, path)
        for source in sources
        if source.directory is not None and source.directory.is_dir()
        for path in sorted(source.directory.glob("*.md"))
        if path.name.lower() != "readme.md"
    ]
    candidates = frontmatter_candidates(files, diags, what="action file", parse=parse_action, known_keys=ACTION_KEYS)
    candidates.extend(command_candidates(command_sources, diags))
    return ActionRegistry.from_candidates(candidates, diags, kind="action")

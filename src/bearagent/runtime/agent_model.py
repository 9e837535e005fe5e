"""Which model entry an agent runs with: its `model` (a Claude Code alias with no entry of that name inherits, with
a warning worded once for load time and run start), else the parent run's, else `default_model`, else the only
entry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bearagent.domain.diagnostics import Diagnostic, name_list
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.specs import AgentSpec, ModelEntry

CLAUDE_MODEL_ALIASES = frozenset({"sonnet", "opus", "haiku", "fable"})


class ModelLookup(Protocol):
    """What the projection needs of the model registry (`ModelRegistry` satisfies it)."""

    def get(self, ref: str) -> ModelEntry | None: ...

    def resolve(self, ref: str, *, where: str = ...) -> ModelEntry: ...

    def all(self) -> list[ModelEntry]: ...

    def only_entry(self) -> ModelEntry | None: ...


def model_alias_message(ref: str) -> str:
    """The one wording of `agent.model_alias_inherited` (load time and projection agree, so the run-start summary
    and `doctor` fold the same warning of many files into one line)."""
    return (
        f"model {ref!r} is a Claude Code alias and no model entry is named {ref!r}; the agent inherits the default "
        "model"
    )


def alias_diagnostics(agents: Iterable[AgentSpec], models: ModelLookup) -> list[Diagnostic]:
    """`agent.model_alias_inherited` for each agent whose `model` is an unresolved Claude alias (at load time)."""
    out: list[Diagnostic] = []
    for agent in agents:
        ref = agent.model
        if ref is not None and ref in CLAUDE_MODEL_ALIASES and models.get(ref) is None:
            out.append(_alias_diagnostic(agent, ref))
    return out


def _alias_diagnostic(agent: AgentSpec, ref: str) -> Diagnostic:
    return Diagnostic(
        severity="warning",
        code="agent.model_alias_inherited",
        message=model_alias_message(ref),
        source=agent.source,
        field="model",
        subject=agent.name,
        fix=f"add a `{ref}:` entry under `models:` in config.yaml, or write a model ref",
    )


def resolve_agent_model(
    agent: AgentSpec, models: ModelLookup, *, default_model: str | None, parent_model: ModelEntry | None = None
) -> tuple[ModelEntry, list[Diagnostic]]:
    """The model entry an agent runs with. Order: the agent's `model` (a Claude alias resolves to an entry of that
    name, else inherits with a warning) > the parent run's model (`inherit` for subagents) > `default_model` > the
    only configured entry. Raises a configuration error naming the agent and the close matches."""
    diags: list[Diagnostic] = []
    ref = agent.model
    if ref is not None and ref in CLAUDE_MODEL_ALIASES and models.get(ref) is None:
        diags.append(_alias_diagnostic(agent, ref))
        ref = None
    if ref is not None:
        return models.resolve(ref, where=f"agent {agent.name!r} ({agent.source or 'built-in'}): model"), diags
    if parent_model is not None:
        return parent_model, diags
    if default_model:
        return models.resolve(default_model, where="config.yaml: default_model"), diags
    only = models.only_entry()
    if only is not None:
        return only, diags
    entries = models.all()
    raise BearAgentError(
        ErrorInfo.of(
            "configuration", "no_model", f"agent {agent.name!r} has no model and config.yaml sets no default_model"
        ),
        hint="set `default_model: <entry>` in .bearagent/config.yaml (or `model:` in the agent file)"
        + (
            f"; entries: {name_list(e.ref for e in entries)}"
            if entries
            else "; `bearagent init` scaffolds a working config"
        ),
    )

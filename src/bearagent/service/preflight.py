"""One preflight: everything that stops a run before it starts, as a list. `run` (and every face that starts one)
raises the first; `bearagent doctor` reports all of them, in the same words and with the same fix, so `doctor`
saying OK means `run` will not refuse for these reasons.

The checks, in the order `run` applies them: guard files that did not load, trust, hooks that cannot run, and the
API key of the model the agent would use (missing: the run would fail at its first model call after creating its
state; here it is refused before anything is written).
"""

from __future__ import annotations

from collections.abc import Callable

from bearagent.domain.diagnostics import Diagnostic
from bearagent.domain.errors import BearAgentError
from bearagent.service import admission
from bearagent.workspace import LoadedWorkspace

_CHECKS: tuple[Callable[[LoadedWorkspace], None], ...] = (
    admission.check_guards,
    admission.check_trust,
    admission.check_hooks,
)


def model_key_error(loaded: LoadedWorkspace, agent_name: str | None, model: str | None = None) -> BearAgentError | None:
    """The missing-key error of the model `agent_name` would run with (`model`: an override ref), else None.

    Only the built-in providers with a conventional key are checked (a plugin's provider checks its own when it is
    built); an agent or model that does not resolve is left to the run's own error, which names it."""
    from bearagent.providers.factory import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, provider_settings
    from bearagent.runtime.agent_model import resolve_agent_model

    defaults = {
        "openai": ("OpenAI", OPENAI_BASE_URL, "OPENAI_API_KEY"),
        "anthropic": ("Anthropic", ANTHROPIC_BASE_URL, "ANTHROPIC_API_KEY"),
    }
    agent = loaded.agents.get(agent_name or loaded.config.default_agent)
    if agent is None:
        return None
    try:
        if model:
            entry = loaded.models.resolve(model)
        else:
            entry = resolve_agent_model(agent, loaded.models, default_model=loaded.config.default_model)[0]
        if entry.provider not in defaults:
            return None
        if entry.provider == "anthropic" and loaded.api_key_helper is not None:
            return None  # apiKeyHelper gives the key when the run builds the provider (`app/key_helper.py`)
        label, url, var = defaults[entry.provider]
        provider_settings(
            loaded.models.for_use(entry, loaded.env), loaded.env, label=label, default_base_url=url, default_key_env=var
        )
    except BearAgentError as exc:
        return exc if exc.info.code.endswith(".missing_api_key") else None
    return None


def preflight(
    loaded: LoadedWorkspace, agent_name: str | None = None, *, model: str | None = None, check_key: bool = True
) -> list[BearAgentError]:
    """Every reason a run of `agent_name` (default: `default_agent`) would be refused, in the order `run` checks.
    `check_key`: False when the caller supplies its own providers (tests, embedders with a provider override)."""
    errors: list[BearAgentError] = []
    for check in _CHECKS:
        try:
            check(loaded)
        except BearAgentError as exc:
            errors.append(exc)
    if check_key:
        missing = model_key_error(loaded, agent_name, model)
        if missing is not None:
            errors.append(missing)
    return errors


def refuse_if_any(
    loaded: LoadedWorkspace, agent_name: str | None = None, *, model: str | None = None, check_key: bool = True
) -> None:
    """What `run` does with the preflight: raise the first refusal."""
    errors = preflight(loaded, agent_name, model=model, check_key=check_key)
    if errors:
        raise errors[0]


def as_diagnostic(error: BearAgentError, source: str = "") -> Diagnostic:
    """A refusal as `doctor` shows it: the run's own message and hint, as an error."""
    return Diagnostic(
        severity="error",
        code=f"preflight.{error.info.code.split('.')[-1]}"[:64],
        message=error.info.message,
        source=source,
        fix=error.hint,
    )

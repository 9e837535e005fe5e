"""`${VAR}` and `${VAR:-default}` expansion in config string values.

Expansion happens at the point of use, so a variable that only one model entry needs is only required when that
entry is used; a missing variable is a clear error naming the variable and the entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo

_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(text: str, env: Mapping[str, str], *, where: str) -> str:
    """Expand `${VAR}` / `${VAR:-default}` in `text`. `where` names the entry for the error, e.g.
    "config.yaml: models.gpt.base_url". An empty variable counts as unset for `:-` (as in the shell)."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        raise BearAgentError(
            ErrorInfo.of(
                "configuration",
                "missing_env_var",
                f"{where}: environment variable {name} is not set",
                variable=name,
            ),
            hint=f"export {name}=... before running, or write ${{{name}:-<default>}} in the config",
        )

    return _VAR_RE.sub(replace, text)


def expand_env_in(value: JsonValue, env: Mapping[str, str], *, where: str) -> JsonValue:
    """Expand every string inside a JSON-like value (dict keys are left alone)."""
    if isinstance(value, str):
        return expand_env(value, env, where=where)
    if isinstance(value, Mapping):
        return {key: expand_env_in(item, env, where=f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [expand_env_in(item, env, where=f"{where}[{i}]") for i, item in enumerate(value)]
    return value

"""The environment a Bash command gets (with and without the sandbox), after Codex's `shell_environment_policy`.

1. Start from `inherit`: `core` (default) takes only `CORE_VARS` (and `LC_*`) from BearAgent's environment, `all`
   takes everything, `none` nothing.
2. Drop every name that looks like a secret (`SECRET_PATTERNS`: *KEY*, *TOKEN*, *SECRET*, *PASSWORD*,
   *CREDENTIAL*, case-insensitive), unless an `include` pattern names it.
3. Add the names `include` matches (globs, case-insensitive) that step 1 did not take.
4. Drop the names `exclude` matches, and always the variables the model entries read their API keys from
   (`api_key_env` of every entry, plus OPENAI_API_KEY and ANTHROPIC_API_KEY): an `include` cannot bring those back.
5. Lay `set` over the result (literal values; the user wrote them, so they win).

The sandbox then adds `TMPDIR=/tmp` (its private /tmp) and `BEARAGENT_SANDBOX=<mode>`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from bearagent.sandbox.settings import SECRET_PATTERNS as SECRET_PATTERNS
from bearagent.sandbox.settings import ShellEnvPolicy
from bearagent.sandbox.settings import is_secret_name as is_secret_name

CORE_VARS: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "USERNAME",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TMPDIR",
    "TEMP",
    "TMP",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)
"""What `inherit: core` passes (plus every `LC_*`): enough for a shell, a compiler, git, and test runners."""
CORE_PREFIXES: tuple[str, ...] = ("LC_",)
DEFAULT_KEY_VARS: tuple[str, ...] = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Key variables the providers read when an entry names none; never passed to the shell."""


def _match(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in patterns)


def build_shell_env(
    source: Mapping[str, str], policy: ShellEnvPolicy, *, secret_names: Iterable[str] = ()
) -> dict[str, str]:
    """The shell's environment from `source` (BearAgent's environment) under `policy` (steps in the module doc).
    `secret_names` are the model entries' key variables: they never pass, whatever `include` says."""
    keys = {n.upper() for n in (*DEFAULT_KEY_VARS, *secret_names)}
    include = policy.include
    if policy.inherit == "all":
        base = dict(source)
    elif policy.inherit == "core":
        base = {k: v for k, v in source.items() if k in CORE_VARS or k.startswith(CORE_PREFIXES)}
    else:
        base = {}
    env = {k: v for k, v in base.items() if not is_secret_name(k) or _match(k, include)}
    for name, value in source.items():
        if name not in env and include and _match(name, include):
            env[name] = value
    for name in list(env):
        if name.upper() in keys or (policy.exclude and _match(name, policy.exclude)):
            del env[name]
    env.update(policy.set)
    return env

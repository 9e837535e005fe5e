"""The `sandbox:` and `shell_env:` config sections: parsing one file, merging the files, and what a file loosens.

```yaml
sandbox: workspace-write            # shorthand for {mode: workspace-write}
sandbox:
  mode: workspace-write             # workspace-write (default) | read-only | off
  network: deny                     # deny (default) | allow | [pypi.org, "*.github.com"] (only those, via a proxy)
  hide: [~/secrets, /opt/tokens]    # more paths the shell cannot see (added to the built-in list)
  bwrap_path: /usr/bin/bwrap        # user config only
  hooks: true                       # command hooks in the sandbox too (default false)
  mcp: true                         # stdio MCP servers in the sandbox too (default false)
  review: true                      # a Bash call's file changes are shown and reverted unless approved (default
                                    # false; any level may turn it on, a workspace cannot turn off the user's)
  git: read-only                    # read-only (default) | writable (user config only: `.git` writable but for
                                    # config and hooks, so `git commit` works inside)
  credentials: [~/.my-tool/token]   # more credential stores to hide (user config only; added to the built-in list)
  limits: {processes: 1024, memory: 8G, file_size: 16G}  # per call (user config only; `off` for none)
  home: hidden                      # visible (user config only): the home readable but for the credential stores
  unix_sockets: deny                # allow (user config only): commands may make Unix sockets
  pin_hook_code: true               # false (user config only): do not re-check a command hook's code before each run
  hooks_after_writes: sandbox       # unconfined (user config only): after a writing call (this session's, or any
                                    # run's since the last trust decision), command hooks, statusLine and the
                                    # workspace's MCP servers run as configured instead of in the sandbox
shell_env:
  inherit: core                     # core (default) | all | none
  include: [NODE_OPTIONS, "AWS_*"]  # more variables (glob patterns) to pass, even secret-looking ones
  exclude: ["MY_*"]                 # variables never to pass
  set: {CI: "1"}                    # literal values (no ${VAR} expansion)
```

Parsing is lenient per field: a bad field is a problem naming the field and the fix, the other fields still apply.
The module is over 400 lines because it is the one place that parses and merges every key of both sections (each
key's rule beside its parsing); the limits' own parsing is `sandbox.limits`.

Merging: the user config's `sandbox.mode` (and `network`) is a ceiling a workspace may tighten but never loosen
(`allow` < a host list < `deny`; under a user host list a workspace list keeps only the hosts the user's covers);
without a user value the workspace's applies; `hooks`/`mcp` only tighten, so they turn on from any file and the
user's `true` cannot be turned off by a workspace; `review` likewise (it only narrows). `loosening()` lists what one file's raw settings loosen compared with
the defaults, for the trust check of workspace files.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, TypeAlias, cast

from pydantic import Field

from bearagent.domain._base import DomainModel
from bearagent.sandbox.limits import SandboxLimits, parse_limits
from bearagent.sandbox.problems import Problem

SandboxMode: TypeAlias = Literal["workspace-write", "read-only", "off"]

SECRET_PATTERNS: tuple[str, ...] = ("*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*")
"""Names that look like they hold a secret: `sandbox/env.py` drops them from a command's environment, and an
`include` naming one loosens the policy (here, beside the policy, so `env` imports settings and not back)."""


def is_secret_name(name: str) -> bool:
    """Whether a variable name looks like it holds a secret (case-insensitive *KEY*, *TOKEN*, ...)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in SECRET_PATTERNS)


NetworkMode: TypeAlias = Literal["deny", "allow"]
NetworkSetting: TypeAlias = NetworkMode | tuple[str, ...]
"""`deny`, `allow`, or the hosts the shell may reach through the proxy (`bearagent.sandbox.proxy`): normalised
entries, each a host name, `*.domain` (its subdomains, not the domain itself) or an IP literal."""
InheritMode: TypeAlias = Literal["core", "all", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("workspace-write", "read-only", "off")
NETWORK_MODES: tuple[NetworkMode, ...] = ("deny", "allow")
INHERIT_MODES: tuple[InheritMode, ...] = ("core", "all", "none")
SANDBOX_KEYS = (
    "mode",
    "network",
    "hide",
    "bwrap_path",
    "hooks",
    "mcp",
    "review",
    "git",
    "credentials",
    "limits",
    "pin_hook_code",
    "home",
    "unix_sockets",
    "hooks_after_writes",
)
SHELL_ENV_KEYS = ("inherit", "include", "exclude", "set")
USER_ONLY_SANDBOX_KEYS = (
    "bwrap_path",
    "git",
    "credentials",
    "limits",
    "pin_hook_code",
    "home",
    "unix_sockets",
    "hooks_after_writes",
)
HOME_MODES = ("hidden", "visible")
UNIX_SOCKET_MODES = ("deny", "allow")
AFTER_WRITES_MODES = ("sandbox", "unconfined")
"""Keys a workspace file may not set: a workspace that picked the sandbox binary could pick one that confines
nothing; `git: writable` and the limits loosen; `credentials` is the user's own list (a workspace adds paths with
`hide`)."""
GIT_MODES = ("read-only", "writable")

MODE_STRICTNESS: Mapping[SandboxMode, int] = {"off": 0, "workspace-write": 1, "read-only": 2}
NETWORK_STRICTNESS: Mapping[NetworkMode, int] = {"allow": 0, "deny": 2}  # a host list is 1


_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def normalise_host_entry(entry: str) -> str | None:
    """One `network:` list entry in its canonical form (lower case, no trailing dot; an IP literal as
    `ipaddress` writes it), or None when it is not a host name, `*.domain` or an IP literal."""
    raw = entry.strip()
    bare = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    name = raw.lower().rstrip(".")
    wildcard = name.startswith("*.")
    if wildcard:
        name = name[2:]
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        return None
    if labels[-1].isdigit():
        return None  # `1.2.3` or `10.0.0.999`: not a name, and not a valid IP either
    return f"*.{name}" if wildcard else name


def host_covered(entry: str, hosts: Iterable[str]) -> bool:
    """Whether the (normalised) entry is allowed by the (normalised) list: listed itself, or under a `*.domain`
    of the list (`a.example.com` and `*.a.example.com` are under `*.example.com`; `example.com` is not)."""
    bare = entry[2:] if entry.startswith("*.") else entry
    for host in hosts:
        if host == entry:
            return True
        if host.startswith("*.") and bare.endswith(host[1:]):
            return True
    return False


def network_label(network: NetworkSetting) -> str:
    """`deny`, `allow`, or `hosts pypi.org, *.github.com`, for `doctor` and the start line."""
    return network if isinstance(network, str) else f"hosts {', '.join(network)}"


def network_json(network: NetworkSetting) -> str | list[str]:
    """`deny`, `allow`, or the host list as a JSON list."""
    return network if isinstance(network, str) else list(network)


class SandboxSettings(DomainModel):
    """The merged `sandbox:` settings."""

    mode: SandboxMode = "workspace-write"
    network: NetworkSetting = "deny"
    hide: tuple[str, ...] = ()
    bwrap_path: str | None = Field(default=None, max_length=4096)
    hooks: bool = False
    """Run command hooks in the sandbox too (`hooks.runners`, via `launch.confined_launch`); fail closed when it
    cannot start. Turns on from any level; a workspace cannot turn off the user's."""
    mcp: bool = False
    """Run stdio MCP servers in the sandbox too (`mcp.manager`); a server is unavailable when it cannot start.
    Turns on from any level; a workspace cannot turn off the user's."""
    review: bool = False
    """Review after the fact (`runtime/review.py`): a Bash call's file changes are shown as a diff and approved or
    reverted from the blob store. Turns on from any level; a workspace cannot turn off the user's."""
    git: Literal["read-only", "writable"] = "read-only"
    """`read-only`: the whole git directory (and every nested one, and what git config names) is read-only inside
    the sandbox (`sandbox.git_paths`); `writable` (user config only): only `.git/config` and `.git/hooks` are."""
    home: Literal["hidden", "visible"] = "hidden"
    """`hidden`: the home is an empty private directory inside the sandbox but for the toolchains
    (`request.HOME_READABLE`); `visible` (user config only): readable but for the credential stores."""
    unix_sockets: Literal["deny", "allow"] = "deny"
    """`deny`: a sandboxed command cannot make a Unix socket (`_limits.py`'s seccomp filter), so no socket of the
    host is reachable, whenever and wherever it was bound; `allow` (user config only): it can, and only the host's
    sockets bound before the call are covered (`sockets.py`)."""
    pin_hook_code: bool = True
    """Re-check the workspace files a command hook reaches right before each execution and refuse to run it when
    one changed since the run started (`trust.reach.CodePins`); `false` only from the user config."""
    hooks_after_writes: Literal["sandbox", "unconfined"] = "sandbox"
    """`sandbox`: once a call that may write has run in a session (`rewind.written`), or any run's since the
    workspace's last trust decision (`rewind.workspace_writes`), command hooks, `statusLine` and the workspace's
    stdio MCP servers run in the sandbox (`hooks.after_writes`, `mcp.after_writes`), and are refused when it cannot
    start; `unconfined` (user config only): they run as configured (unconfined unless `hooks`/`mcp: true`)."""
    credentials: tuple[str, ...] = ()
    """More credential stores to hide (user config only), on top of `request.HIDDEN_IN_HOME`."""
    limits: SandboxLimits = Field(default_factory=lambda: SandboxLimits())
    """Per-call process and memory limits (user config only): `sandbox.limits`."""
    additional_directories: tuple[str, ...] = ()
    """Absolute directories besides the workspace that the shell may write as it writes the workspace (and the file
    tools may use): `permissions.additional_directories` / Claude Code's `additionalDirectories`, merged from every
    level by `config.model.merge_config`, never from `sandbox:`."""


class ShellEnvPolicy(DomainModel):
    """The merged `shell_env:` settings: which variables the shell inherits (see `bearagent.sandbox.env`)."""

    inherit: InheritMode = "core"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    set: Mapping[str, str] = Field(default_factory=dict[str, str])


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in cast(list[object], value)):
        return tuple(cast(list[str], value))
    return None


def parse_sandbox(value: object, *, level: str) -> tuple[dict[str, object], list[Problem]]:
    """One file's `sandbox:` value into the keys it sets (only valid ones) and the problems. `level` is the file's
    level (`user`, `workspace`, ...): `bwrap_path` is refused from a workspace file."""
    problems: list[Problem] = []
    out: dict[str, object] = {}
    if value is None:
        return out, problems
    if isinstance(value, (str, bool)):
        value = {"mode": value}
    if not isinstance(value, dict):
        problems.append(
            Problem(
                "sandbox", "must be a mode or a mapping", "write `sandbox: workspace-write` or `sandbox: {mode: ...}`"
            )
        )
        return out, problems
    for key, item in cast(dict[object, object], value).items():
        name = str(key)
        where = f"sandbox.{name}"
        if name == "mode":
            if isinstance(item, bool):  # YAML 1.1 reads a bare `off` as false (and `on` as true)
                item = "workspace-write" if item else "off"
            if item in SANDBOX_MODES:
                out["mode"] = item
            else:
                problems.append(
                    Problem(where, f"{item!r} is not a sandbox mode", f"use one of: {', '.join(SANDBOX_MODES)}")
                )
        elif name == "network":
            if item in NETWORK_MODES:
                out["network"] = item
            elif isinstance(item, list):
                hosts: list[str] = []
                bad: list[str] = []
                for entry in cast(list[object], item):
                    host = normalise_host_entry(entry) if isinstance(entry, str) else None
                    if host is None:
                        bad.append(repr(entry))
                    elif host not in hosts:
                        hosts.append(host)
                if bad:
                    problems.append(
                        Problem(
                            where,
                            f"{', '.join(bad)} {'is not a host' if len(bad) == 1 else 'are not hosts'}: each entry is "
                            "a host name, `*.domain` (its subdomains) or an IP address, without scheme, port or path",
                            'write `network: [pypi.org, "*.github.com"]`',
                        )
                    )
                else:
                    out["network"] = tuple(hosts) if hosts else "deny"
            else:
                problems.append(
                    Problem(
                        where,
                        f"{item!r} is not a network mode",
                        "write `network: deny`, `allow` or a list of hosts (`[pypi.org]`)",
                    )
                )
        elif name == "hide":
            paths = _strings(item)
            if paths is None or not all(p.startswith(("/", "~")) for p in paths):
                problems.append(Problem(where, "must be a list of absolute or ~/ paths", "write `hide: [~/secrets]`"))
            else:
                out["hide"] = paths
        elif name in USER_ONLY_SANDBOX_KEYS and name != "bwrap_path" and level == "workspace":
            problems.append(
                Problem(
                    where,
                    "can only be set in the user config (a workspace must not loosen the sandbox)",
                    "move it to ~/.config/bearagent/config.yaml ($BEARAGENT_HOME/config.yaml)",
                )
            )
        elif name == "git":
            if item in GIT_MODES:
                out["git"] = item
            else:
                problems.append(Problem(where, f"{item!r} is not valid", f"use one of: {', '.join(GIT_MODES)}"))
        elif name == "home":
            if item in HOME_MODES:
                out["home"] = item
            else:
                problems.append(Problem(where, f"{item!r} is not valid", f"use one of: {', '.join(HOME_MODES)}"))
        elif name == "hooks_after_writes":
            if item in AFTER_WRITES_MODES:
                out["hooks_after_writes"] = item
            else:
                problems.append(
                    Problem(where, f"{item!r} is not valid", f"use one of: {', '.join(AFTER_WRITES_MODES)}")
                )
        elif name == "unix_sockets":
            if item in UNIX_SOCKET_MODES:
                out["unix_sockets"] = item
            else:
                problems.append(Problem(where, f"{item!r} is not valid", f"use one of: {', '.join(UNIX_SOCKET_MODES)}"))
        elif name == "credentials":
            paths = _strings(item)
            if paths is None or not all(p.startswith(("/", "~")) for p in paths):
                problems.append(
                    Problem(where, "must be a list of absolute or ~/ paths", "write `credentials: [~/.my-tool/token]`")
                )
            else:
                out["credentials"] = paths
        elif name == "limits":
            limits, limit_problems = parse_limits(item)
            problems.extend(limit_problems)
            if limits is not None:
                out["limits"] = limits
        elif name == "bwrap_path":
            if level == "workspace":
                problems.append(
                    Problem(
                        where,
                        "can only be set in the user config (a workspace must not choose the sandbox program)",
                        "move it to ~/.config/bearagent/config.yaml ($BEARAGENT_HOME/config.yaml)",
                    )
                )
            elif isinstance(item, str) and item.startswith("/"):
                out["bwrap_path"] = item
            else:
                problems.append(Problem(where, "must be an absolute path", "write `bwrap_path: /usr/bin/bwrap`"))
        elif name in ("hooks", "mcp", "pin_hook_code", "review"):
            if isinstance(item, bool):
                out[name] = item
            else:
                problems.append(Problem(where, "must be true or false", f"write `{name}: true`"))
        else:
            from bearagent.domain.suggest import did_you_mean

            guess = did_you_mean(name, SANDBOX_KEYS)
            problems.append(
                Problem(
                    where,
                    f"unknown key{f' (did you mean {guess!r}?)' if guess else ''}; it is ignored",
                    f"rename it to {guess!r}" if guess else f"known keys: {', '.join(SANDBOX_KEYS)}",
                    severity="warning",
                )
            )
    return out, problems


def parse_shell_env(value: object) -> tuple[dict[str, object], list[Problem]]:
    """One file's `shell_env:` value into the keys it sets (only valid ones) and the problems."""
    problems: list[Problem] = []
    out: dict[str, object] = {}
    if value is None:
        return out, problems
    if not isinstance(value, dict):
        problems.append(Problem("shell_env", "must be a mapping", "write `shell_env: {inherit: core}`"))
        return out, problems
    for key, item in cast(dict[object, object], value).items():
        name = str(key)
        where = f"shell_env.{name}"
        if name == "inherit":
            if item in INHERIT_MODES:
                out["inherit"] = item
            else:
                problems.append(Problem(where, f"{item!r} is not valid", f"use one of: {', '.join(INHERIT_MODES)}"))
        elif name in ("include", "exclude"):
            names = _strings(item) if item is not None else ()
            if names is None:
                problems.append(
                    Problem(where, "must be a list of variable names or glob patterns", f"write `{name}: [NAME]`")
                )
            else:
                out[name] = names
        elif name == "set":
            if isinstance(item, dict) and all(
                isinstance(k, str) and k and "=" not in k and isinstance(v, (str, int, float, bool))
                for k, v in cast(dict[object, object], item).items()
            ):
                out["set"] = {
                    str(k): (str(v).lower() if isinstance(v, bool) else str(v))
                    for k, v in cast(dict[object, object], item).items()
                }
            else:
                problems.append(Problem(where, "must be a mapping of NAME: value", 'write `set: {CI: "1"}`'))
        else:
            from bearagent.domain.suggest import did_you_mean

            guess = did_you_mean(name, SHELL_ENV_KEYS)
            problems.append(
                Problem(
                    where,
                    f"unknown key{f' (did you mean {guess!r}?)' if guess else ''}; it is ignored",
                    f"rename it to {guess!r}" if guess else f"known keys: {', '.join(SHELL_ENV_KEYS)}",
                    severity="warning",
                )
            )
    return out, problems


def _network_strictness(value: NetworkSetting) -> int:
    return NETWORK_STRICTNESS[value] if isinstance(value, str) else 1  # allow < a host list < deny


def _narrowed(ceiling: NetworkSetting | None, value: NetworkSetting) -> NetworkSetting:
    """A workspace's `network` under the user's `ceiling`: it applies when at least as strict; a host list under
    a host list keeps only the hosts the user's list covers (none left: `deny`)."""
    if ceiling is None:
        return value
    if isinstance(value, tuple) and isinstance(ceiling, tuple):
        kept = tuple(h for h in value if host_covered(h, ceiling))
        return kept or "deny"
    return value if _network_strictness(value) >= _network_strictness(ceiling) else ceiling


def merge_sandbox(layers: Sequence[tuple[str, Mapping[str, object]]]) -> SandboxSettings:
    """Merge `(level, parsed sandbox keys)` lowest first. A non-workspace (user) `mode` or `network` is a ceiling:
    a workspace value applies only when it is at least as strict (a host list: only its hosts the user's covers). `hide` lists add up; `hooks`/`mcp`/`review` turn on from
    any level and a workspace cannot turn off what the user turned on; `bwrap_path` comes from the user only."""
    mode: SandboxMode = "workspace-write"
    network: NetworkSetting = "deny"
    mode_ceiling: SandboxMode | None = None
    network_ceiling: NetworkSetting | None = None
    hide: list[str] = []
    bwrap_path: str | None = None
    git: Literal["read-only", "writable"] = "read-only"
    credentials: list[str] = []
    limits = SandboxLimits()
    pin_hook_code = True
    home: Literal["hidden", "visible"] = "hidden"
    unix_sockets: Literal["deny", "allow"] = "deny"
    after_writes: Literal["sandbox", "unconfined"] = "sandbox"
    flags = {"hooks": False, "mcp": False, "review": False}
    user_flags = {"hooks": False, "mcp": False, "review": False}
    for level, s in layers:
        workspace = level == "workspace"
        if "mode" in s:
            value = cast(SandboxMode, s["mode"])
            if not workspace:
                mode = mode_ceiling = value
            elif mode_ceiling is None or MODE_STRICTNESS[value] >= MODE_STRICTNESS[mode_ceiling]:
                mode = value
        if "network" in s:
            value_n = cast(NetworkSetting, s["network"])
            if not workspace:
                network = network_ceiling = value_n
            else:
                network = _narrowed(network_ceiling, value_n)
        hide.extend(p for p in cast(tuple[str, ...], s.get("hide", ())) if p not in hide)
        if "bwrap_path" in s and not workspace:
            bwrap_path = cast(str, s["bwrap_path"])
        if not workspace:
            git = cast(Literal["read-only", "writable"], s.get("git", git))
            credentials.extend(p for p in cast(tuple[str, ...], s.get("credentials", ())) if p not in credentials)
            pin_hook_code = bool(s.get("pin_hook_code", pin_hook_code))
            home = cast(Literal["hidden", "visible"], s.get("home", home))
            unix_sockets = cast(Literal["deny", "allow"], s.get("unix_sockets", unix_sockets))
            after_writes = cast(Literal["sandbox", "unconfined"], s.get("hooks_after_writes", after_writes))
            if "limits" in s:
                limits = limits.model_copy(update=cast(dict[str, object], s["limits"]))
        for flag in ("hooks", "mcp", "review"):
            if flag in s:
                on = bool(s[flag])
                if not workspace:
                    flags[flag] = user_flags[flag] = on
                else:
                    flags[flag] = on or user_flags[flag]
    return SandboxSettings(
        mode=mode,
        network=network,
        hide=tuple(hide),
        bwrap_path=bwrap_path,
        hooks=flags["hooks"],
        mcp=flags["mcp"],
        review=flags["review"],
        git=git,
        credentials=tuple(credentials),
        limits=limits,
        pin_hook_code=pin_hook_code,
        home=home,
        unix_sockets=unix_sockets,
        hooks_after_writes=after_writes,
    )


def merge_shell_env(layers: Sequence[tuple[str, Mapping[str, object]]]) -> ShellEnvPolicy:
    """Merge `(level, parsed shell_env keys)` lowest first: `inherit` is replaced, `include`/`exclude` lists add
    up, `set` merges name by name (the more specific file wins)."""
    inherit: InheritMode = "core"
    include: list[str] = []
    exclude: list[str] = []
    values: dict[str, str] = {}
    for _level, s in layers:
        inherit = cast(InheritMode, s.get("inherit", inherit))
        include.extend(p for p in cast(tuple[str, ...], s.get("include", ())) if p not in include)
        exclude.extend(p for p in cast(tuple[str, ...], s.get("exclude", ())) if p not in exclude)
        values.update(cast(dict[str, str], s.get("set", {})))
    return ShellEnvPolicy(inherit=inherit, include=tuple(include), exclude=tuple(exclude), set=values)


def _include_loosens(pattern: str) -> bool:
    if any(c in pattern for c in "*?["):
        return True  # a glob can match a secret-looking name (AWS_* matches AWS_SECRET_ACCESS_KEY)
    return is_secret_name(pattern)


def loosening(settings: Mapping[str, object]) -> list[str]:
    """What one file's parsed settings (`ConfigFile.settings`: its `sandbox` and `shell_env` keys) loosen compared
    with the defaults, as short descriptions: `sandbox.mode: off`, `sandbox.network: allow` (or `[pypi.org]`), `shell_env.inherit:
    all`, `shell_env.include: AWS_SECRET_KEY`, `shell_env.set: BASH_ENV=./x`. An empty list means the file only keeps or tightens the defaults."""
    out: list[str] = []
    sandbox = cast(Mapping[str, object], settings.get("sandbox") or {})
    if sandbox.get("mode") == "off":
        out.append("sandbox.mode: off")
    network = sandbox.get("network")
    if network == "allow":
        out.append("sandbox.network: allow")
    elif isinstance(network, tuple):
        out.append(f"sandbox.network: [{', '.join(cast(tuple[str, ...], network))}]")
    if "bwrap_path" in sandbox:
        out.append(f"sandbox.bwrap_path: {sandbox['bwrap_path']}")
    shell_env = cast(Mapping[str, object], settings.get("shell_env") or {})
    if shell_env.get("inherit") == "all":
        out.append("shell_env.inherit: all")
    for pattern in cast(tuple[str, ...], shell_env.get("include", ())):
        if _include_loosens(pattern):
            out.append(f"shell_env.include: {pattern}")
    # every value a file sets: any variable can make the shell run the file's code first (BASH_ENV, PATH, ENV,
    # LD_PRELOAD, PYTHONSTARTUP, GIT_* and many more), so none is harmless enough to skip trust for
    for name, value in cast(Mapping[str, str], shell_env.get("set") or {}).items():
        out.append(f"shell_env.set: {name}={value}")
    return out

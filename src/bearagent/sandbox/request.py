"""What one Bash call's confinement needs, resolved from the settings and the environment, and its round trip through
`ToolContext.settings` (plain JSON: the runner fills it in `plan()`, the Bash tool reads it back).

Hidden by default (each under the user's home as the environment names it and as the password database does, when
it exists): the secret stores in `HIDDEN_IN_HOME`, BearAgent's own user directory, `$XDG_CONFIG_HOME`,
`$XDG_RUNTIME_DIR` (the user's agent and bus sockets) and the container-engine sockets in `HIDDEN_SOCKETS`; plus
every `sandbox.hide` entry. With `sandbox.home: hidden` (the default) every home of the machine's people (yours and
`_other_homes`; all of `/home` as one directory) is hidden as a whole but for your toolchains; with `visible`, the deny-list holds in other people's
homes too. A hidden directory becomes an empty private tmpfs, a hidden file (or socket) `/dev/null`.
Inside the hidden `~/.config`, git's own files (`READABLE_IN_HIDDEN`) stay readable so `git commit` finds the
user's identity and ignore rules.

Why it is over 400 lines: most of it is data, the lists of what is hidden (credential files, sockets, the
environment variables that name credential stores) and what stays readable in a hidden home; the lists and the one
function that turns them into a request are kept together so a reviewer sees every hidden path in one place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from bearagent.domain._base import JsonValue
from bearagent.rewind.review import REVIEW_SETTING
from bearagent.sandbox.env import build_shell_env
from bearagent.sandbox.settings import (
    NETWORK_MODES,
    SANDBOX_MODES,
    NetworkSetting,
    SandboxMode,
    SandboxSettings,
    ShellEnvPolicy,
    normalise_host_entry,
)
from bearagent.tools.roots import ADDITIONAL_DIRECTORIES_SETTING

SANDBOX_SETTING = "sandbox"
"""ToolContext.settings key: the resolved sandbox request (`SandboxRequest.to_json`)."""
SHELL_ENV_SETTING = "shell_env"
"""ToolContext.settings key: the environment for Bash (already filtered by the shell_env policy)."""

PRIVATE_TMP = ("/tmp", "/var/tmp")
"""Where the sandbox mounts private tmpfs directories of its own: the host's are unseen inside it."""


HIDDEN_IN_HOME: tuple[str, ...] = (
    # keys and generic credential files
    ".ssh",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".vault-token",
    # every tool's config under XDG (gh, gcloud, git-credential stores, hub, op, ...)
    ".config",
    # clouds, containers, clusters
    ".aws",
    ".azure",
    ".docker",
    ".kube",
    ".oci",
    ".terraform.d",
    ".pulumi",
    ".fly",
    ".vercel",
    ".netlify",
    ".heroku",
    ".doctl",
    # package registries
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".nuget/NuGet/NuGet.Config",
    ".composer/auth.json",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".databrickscfg",
    ".huggingface",
    ".cache/huggingface",
    ".kaggle",
    ".wandb",
    ".netrc-wandb",
    # agents and their tokens
    ".claude",
    ".claude.json",
    ".codex",
    ".gemini",
    ".copilot",
    ".aider.conf.yml",
    ".continue",
    ".cursor",
    # tokens some tools keep under ~/.cache or ~/.local
    ".cache/gh",
    ".cache/gcloud",
    ".cache/pre-commit",
    ".cache/copilot",
    ".local/share/gh",
    ".local/share/keyring",
    ".local/share/python_keyring",
    ".local/state/gh",
    # shell and tool histories (commands typed with secrets in them)
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".local/share/fish/fish_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".lesshst",
    ".viminfo",
)
"""Credential stores, tokens and histories under a home directory that the shell cannot see (the user adds more with
`sandbox.credentials`, a workspace with `sandbox.hide`)."""
HIDDEN_SOCKETS: tuple[str, ...] = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus",
    "/run/dbus",
    "/run/user",
    "/run/systemd",
    "/var/run/postgresql",
    "/run/postgresql",
    "/var/run/mysqld",
    "/run/mysqld",
    "/var/run/redis",
    "/run/redis",
    "/var/run/libvirt",
    "/run/libvirt",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
    "/tmp/.X11-unix",
    "/run/containerd",
    "/run/podman",
    "/run/docker",
    "/var/run/docker",
)
"""Sockets that would let a confined command drive something unconfined (a socket on a read-only mount still
accepts connections)."""
CREDENTIAL_VARIABLES: tuple[str, ...] = (
    "GNUPGHOME",
    "PASSWORD_STORE_DIR",
    "NETRC",
    "GH_CONFIG_DIR",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "NPM_CONFIG_USERCONFIG",
    "PIP_CONFIG_FILE",
    "PYPIRC",
    "CARGO_HOME",
    "GEM_HOST_API_KEY_FILE",
    "VAULT_TOKEN_FILE",
    "HF_HOME",
    "HF_TOKEN_PATH",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "HISTFILE",
    "PGPASSFILE",
    "PGSERVICEFILE",
    "MYSQL_HISTFILE",
)
"""Variables that name a credential store somewhere else than its usual place in the home (a CI's
`/secrets/gcp.json`, a `KUBECONFIG` list, a shared `CARGO_HOME`): each absolute path they name, in BearAgent's
environment or the shell's, is hidden like the deny-list (`CARGO_HOME` only as its credential files). Git's own
`GIT_CONFIG_GLOBAL` is not among them: it stays readable, as `~/.gitconfig` does."""
_ONLY_INSIDE: dict[str, tuple[str, ...]] = {"CARGO_HOME": ("credentials", "credentials.toml")}


def _named_by_variables(env: Mapping[str, str]) -> list[Path]:
    out: list[Path] = []
    for name in CREDENTIAL_VARIABLES:
        for source in (env, os.environ):
            for raw in (source.get(name) or "").split(os.pathsep):
                if not raw.startswith("/") or os.path.normpath(raw) == "/":
                    continue
                base = Path(os.path.normpath(raw))
                if name in _ONLY_INSIDE:
                    out.extend(base / inside for inside in _ONLY_INSIDE[name])
                else:
                    out.append(base)
    return out


READABLE_IN_HIDDEN: tuple[str, ...] = (
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
    ".gitconfig",
    ".gitignore_global",
)
"""Files inside a hidden home directory that stay readable (git's identity and ignore rules)."""
HOME_READABLE: tuple[str, ...] = (
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/pipx",
    ".pyenv",
    ".rbenv",
    ".asdf",
    ".nvm",
    ".volta",
    ".fnm",
    ".bun/bin",
    ".deno/bin",
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    "go/bin",
    "go/pkg/mod",
    ".sdkman/candidates",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".dotnet",
    ".elan",
    ".ghcup",
    ".opam",
)
"""With the home hidden (`sandbox.home: hidden`, the default), the toolchains a build needs stay readable (read-only):
language runtimes and version managers, installed tools, package caches that hold no credentials; plus BearAgent's
own Python when it lives in the home. Everything else in the home is an empty private directory."""


@dataclass(frozen=True, slots=True)
class SandboxRequest:
    """The confinement of one call: `mode` and `network` from the settings, absolute `hidden` paths (what exists
    is hidden), absolute `readable` exceptions inside them, and the configured sandbox program (user config)."""

    mode: SandboxMode = "workspace-write"
    network: NetworkSetting = "deny"
    """`deny`, `allow`, or the hosts the proxy lets through (`bearagent.sandbox.proxy`)."""
    hidden: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    bwrap_path: str | None = None
    writable: tuple[str, ...] = ()
    """Absolute directories besides the workspace the shell may write (workspace-write only)."""
    git_writable: bool = False
    """`sandbox.git: writable` (user config): only `.git/config` and `.git/hooks` are read-only (`git_paths`)."""
    hidden_homes: tuple[str, ...] = ()
    """Home directories replaced by an empty private directory as a whole (`sandbox.home: hidden`)."""
    home_readable: tuple[str, ...] = ()
    """Directories inside a hidden home or a private /tmp that stay readable, bound read-only over them
    (`HOME_READABLE`; BearAgent's own Python wherever it is installed)."""
    limits: tuple[int | None, int | None, int | None] = (1024, 8 << 30, 16 << 30)
    """Processes, data bytes and file-size bytes per process (`sandbox.limits`); None: no limit."""
    unix_sockets: Literal["deny", "allow"] = "deny"
    """`sandbox.unix_sockets`: whether the command may make Unix sockets (`_limits.py`)."""

    def settings(self) -> SandboxSettings:
        return SandboxSettings(
            mode=self.mode, network=self.network, bwrap_path=self.bwrap_path, additional_directories=self.writable
        )

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "mode": self.mode,
            "network": self.network if isinstance(self.network, str) else list(self.network),
            "hidden": list(self.hidden),
            "readable": list(self.readable),
            "bwrap_path": self.bwrap_path,
            "writable": list(self.writable),
            "git_writable": self.git_writable,
            "hidden_homes": list(self.hidden_homes),
            "home_readable": list(self.home_readable),
            "limits": list(self.limits),
            "unix_sockets": self.unix_sockets,
        }

    @classmethod
    def from_json(cls, value: object) -> SandboxRequest:
        """Read back `to_json`; anything malformed gives the strict default (never a looser one)."""
        if not isinstance(value, Mapping):
            return default_request(os.environ)
        data = cast(Mapping[str, object], value)
        mode = data.get("mode")
        network = data.get("network")
        program = data.get("bwrap_path")
        return cls(
            mode=mode if mode in SANDBOX_MODES else "workspace-write",
            network=_network(network),
            hidden=_str_tuple(data.get("hidden")),
            readable=_str_tuple(data.get("readable")),
            bwrap_path=program if isinstance(program, str) else None,
            writable=tuple(p for p in _str_tuple(data.get("writable")) if os.path.isabs(p)),
            git_writable=data.get("git_writable") is True,
            hidden_homes=tuple(p for p in _str_tuple(data.get("hidden_homes")) if os.path.isabs(p)),
            home_readable=tuple(p for p in _str_tuple(data.get("home_readable")) if os.path.isabs(p)),
            limits=_limits(data.get("limits")),
            unix_sockets="allow" if data.get("unix_sockets") == "allow" else "deny",
        )


def _limits(value: object) -> tuple[int | None, int | None, int | None]:
    default = SandboxRequest().limits
    if not isinstance(value, (list, tuple)):
        return default
    items = list(cast(Iterable[object], value))
    if len(items) != 3 or not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in items):
        return default
    return cast(tuple[int | None, int | None, int | None], tuple(items))


def _network(value: object) -> NetworkSetting:
    if value in NETWORK_MODES:
        return cast(NetworkSetting, value)
    if isinstance(value, (list, tuple)) and value:
        hosts = [normalise_host_entry(v) if isinstance(v, str) else None for v in cast(Iterable[object], value)]
        if all(h is not None for h in hosts):
            return tuple(cast(list[str], hosts))
    return "deny"


def _str_tuple(value: object) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(v for v in cast(Iterable[object], value) if isinstance(v, str))
    return ()


def _homes(env: Mapping[str, str]) -> list[Path]:
    homes: list[Path] = []
    candidates = [env.get("HOME"), os.environ.get("HOME")]
    with contextlib.suppress(KeyError):
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    for raw in candidates:
        if raw and raw.startswith("/"):
            path = Path(os.path.normpath(raw))
            if path not in homes and path != Path("/"):
                homes.append(path)
    return homes


HOMES_DIR = "/home"
MAX_OTHER_HOMES = 256
_SYSTEM_DIRS = frozenset(
    ("/", "/bin", "/sbin", "/usr", "/etc", "/dev", "/proc", "/sys", "/run", "/var", "/tmp", "/lib", "/lib64", "/opt")
)


def _other_homes(own: list[Path]) -> list[Path]:
    """The home directories of the machine's other people: each directory in `/home`, and the home of each account
    of the password database that is root or a person's (uid 1000 and up, not `nobody`), where it exists. System
    accounts' homes (`/var/lib/postgresql`, `/nonexistent`) are not homes of people and stay as they are. At most
    `MAX_OTHER_HOMES`."""
    found: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(HOMES_DIR) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                found.append(Path(entry.path))
            if len(found) >= MAX_OTHER_HOMES:
                break
    with contextlib.suppress(OSError, KeyError):
        for account in pwd.getpwall():
            if len(found) >= MAX_OTHER_HOMES:
                break
            if not (account.pw_uid == 0 or 1000 <= account.pw_uid < 65534) or not account.pw_dir.startswith("/"):
                continue
            path = Path(os.path.normpath(account.pw_dir))
            if str(path) not in _SYSTEM_DIRS and path not in found and path.is_dir() and not path.is_symlink():
                found.append(path)
    return [h for h in found if h not in own]


def _whole_homes_dir(homes: list[Path]) -> list[Path]:
    """`homes` with those in `HOMES_DIR` replaced by `HOMES_DIR` itself (when it is a real directory): one empty
    directory over all of `/home`, rather than one per home. A home made or removed between the call's preparation
    and its start (an account added or deleted, another test's fake home) then cannot break the call's mounts (bubblewrap
    cannot mount over a directory that is gone: the call failed with "Can't mkdir /home/x"), and it is one mount, not
    up to `MAX_OTHER_HOMES`. What stays readable, and a workspace inside a home, are bound on top as before."""
    whole = Path(HOMES_DIR)
    if not whole.is_dir() or whole.is_symlink():
        return homes
    return [whole, *(h for h in homes if h != whole and whole not in h.parents)]


def _expand(raw: str, homes: list[Path]) -> list[Path]:
    if raw == "~" or raw.startswith("~/"):
        rest = raw[2:]
        return [h / rest if rest else h for h in homes]
    return [Path(os.path.normpath(raw))]


def build_request(settings: SandboxSettings, env: Mapping[str, str]) -> SandboxRequest:
    """Resolve the hidden paths for `settings` under the environment `env` (its HOME and BearAgent's user dir)."""
    from bearagent.config.workspace import user_config_dir

    homes = _homes(env)
    # paths as text, joined with "/" and normalised once at the end: every run's plan resolves ~100 of them, and
    # building each as a `Path` was half of this function's time (docs/scale-out.md, planning a run)
    hidden: list[str | Path] = [f"{h}/{rel}" for h in homes for rel in HIDDEN_IN_HOME]
    hidden.append(user_config_dir(env))
    hidden.append(user_config_dir(os.environ))
    for var in ("XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "BEARAGENT_HOME"):
        value = env.get(var) or os.environ.get(var)
        if value and value.startswith("/"):
            hidden.append(Path(value))
    hidden.extend(Path(p) for p in HIDDEN_SOCKETS)
    hidden.extend(_named_by_variables(env))
    for raw in (*settings.hide, *settings.credentials):
        hidden.extend(_expand(raw, homes))
    readable = [f"{h}/{rel}" for h in homes for rel in READABLE_IN_HIDDEN]
    others = _other_homes(homes)
    if settings.home == "hidden":
        hidden_homes: list[Path] = _whole_homes_dir([*homes, *others])
    else:  # your own home visible: other people's homes keep their credential stores hidden
        hidden_homes = []
        hidden.extend(h / rel for h in others for rel in HIDDEN_IN_HOME if os.path.lexists(h / rel))
    home_readable: list[Path] = []
    if hidden_homes:
        home_readable = [h / rel for h in homes for rel in HOME_READABLE if (h / rel).is_dir()]
    # BearAgent's own Python stays readable wherever it is installed: under a hidden home, or under /tmp or
    # /var/tmp, which the sandbox replaces with private ones (a checkout tried out under /tmp, its venv there)
    # (strictly inside /tmp: a prefix that is /tmp itself would show all of it)
    private = [Path(p) for p in PRIVATE_TMP]
    for prefix in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}:
        real = Path(os.path.realpath(prefix))
        in_home = any(real == h or h in real.parents for h in hidden_homes)
        if (in_home or any(t in real.parents for t in private)) and real not in home_readable:
            home_readable.append(real)
    unique = list(dict.fromkeys(os.path.normpath(p) for p in hidden))
    return SandboxRequest(
        mode=settings.mode,
        network=settings.network,
        hidden=tuple(unique),
        readable=tuple(dict.fromkeys(readable)),
        bwrap_path=settings.bwrap_path,
        writable=settings.additional_directories,
        git_writable=settings.git == "writable",
        hidden_homes=tuple(str(h) for h in hidden_homes),
        home_readable=tuple(dict.fromkeys(str(p) for p in home_readable)),
        limits=(settings.limits.processes, settings.limits.memory, settings.limits.file_size),
        unix_sockets=settings.unix_sockets,
    )


def default_request(env: Mapping[str, str]) -> SandboxRequest:
    return build_request(SandboxSettings(), env)


def tool_settings(
    sandbox: SandboxSettings,
    shell_env: ShellEnvPolicy,
    env: Mapping[str, str],
    secret_names: Iterable[str],
    plugin_roots: Iterable[Path] = (),
) -> dict[str, JsonValue]:
    """The `ToolContext.settings` entries the Bash tool reads: the resolved request and the filtered environment
    (`secret_names`: the variables model entries read their keys from; they never reach the shell); and the
    additional directories the file tools may use (`permissions.additionalDirectories`, carried by the sandbox
    settings because the shell's confinement needs them too)."""
    shell = build_shell_env(env, shell_env, secret_names=secret_names)
    request = build_request(sandbox, env)
    roots = [str(r) for r in plugin_roots]
    if roots:
        # Claude Code plugins the user installed: their bin/ leads PATH, their folder stays readable (read-only)
        bins = [str(Path(r) / "bin") for r in roots if (Path(r) / "bin").is_dir()]
        shell["PATH"] = os.pathsep.join([*bins, *([shell["PATH"]] if shell.get("PATH") else [])])
        request = dataclasses.replace(request, home_readable=tuple(dict.fromkeys([*request.home_readable, *roots])))
    return {
        SANDBOX_SETTING: request.to_json(),
        SHELL_ENV_SETTING: cast(dict[str, JsonValue], shell),
        ADDITIONAL_DIRECTORIES_SETTING: list(sandbox.additional_directories),
        REVIEW_SETTING: sandbox.review,
    }

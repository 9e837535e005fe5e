"""Where trust decisions live: `$BEARAGENT_HOME/trust.json` (default `~/.config/bearagent/trust.json`), never in
the repository. An entry is keyed by the workspace's resolved path and records the digest of every trusted item, so
a later change can be named ("changed: hook PreToolUse[Bash]#1", "added: model evil")."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeAlias, cast

from bearagent.config.workspace import user_config_dir
from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.rewind.workspace_writes import writes_record
from bearagent.trust.surface import TrustSurface

TRUST_FILE = "trust.json"
TRUST_FORMAT_VERSION = 2
TrustStatus: TypeAlias = Literal["trusted", "untrusted", "changed", "not_needed"]


@dataclass(frozen=True, slots=True)
class TrustChange:
    """How the surface differs from what was trusted: item keys added, changed and removed."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def describe(self) -> str:
        parts: list[str] = []
        for word, keys in (("added", self.added), ("changed", self.changed), ("removed", self.removed)):
            if keys:
                shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
                parts.append(f"{word}: {shown}")
        return "; ".join(parts) or "trusted with an earlier BearAgent version, which recorded less"


def trust_store_path(env: Mapping[str, str] | None = None) -> Path:
    """`$BEARAGENT_HOME/trust.json` (default `$XDG_CONFIG_HOME/bearagent/trust.json`)."""
    return user_config_dir(os.environ if env is None else env) / TRUST_FILE


def workspace_key(root: Path) -> str:
    return str(root.expanduser().resolve())


def trust_command(root: Path) -> str:
    return f"bearagent trust -w {shlex.quote(workspace_key(root))}"


class TrustStore:
    """The trust file. Reads are fresh each call; writes are atomic (temp file + rename), mode 0600."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, dict[str, JsonValue]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data: object = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._corrupt(f"it is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(data, dict):
            raise self._corrupt("it is not a JSON object")
        workspaces = cast(dict[str, object], data).get("workspaces", {})
        if not isinstance(workspaces, dict):
            raise self._corrupt("its 'workspaces' is not an object")
        out: dict[str, dict[str, JsonValue]] = {}
        for key, entry in cast(dict[str, object], workspaces).items():
            if isinstance(entry, dict):
                out[key] = cast(dict[str, JsonValue], entry)
        return out

    def _corrupt(self, why: str) -> BearAgentError:
        return BearAgentError(
            ErrorInfo.of("configuration", "invalid_trust_store", f"the trust file {self.path} is unreadable: {why}"),
            hint=f"fix or delete {self.path}, then trust your workspaces again with `bearagent trust -w DIR`",
        )

    def _save(self, workspaces: Mapping[str, Mapping[str, JsonValue]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"version": TRUST_FORMAT_VERSION, "workspaces": workspaces}, indent=2, sort_keys=True)
        fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def status(self, root: Path, surface: TrustSurface) -> TrustStatus:
        if surface.is_empty:
            return "not_needed"
        entry = self._load().get(workspace_key(root))
        if entry is None:
            return "untrusted"
        return "trusted" if entry.get("surface_sha256") == surface.digest() else "changed"

    def change(self, root: Path, surface: TrustSurface) -> TrustChange:
        """What differs from the trusted entry (empty when nothing is recorded per item)."""
        entry = self._load().get(workspace_key(root)) or {}
        raw = entry.get("items")
        if not isinstance(raw, dict):
            return TrustChange()
        old = {k: v for k, v in raw.items() if isinstance(v, str)}
        new = surface.digests()
        return TrustChange(
            added=tuple(k for k in new if k not in old),
            changed=tuple(k for k in new if k in old and old[k] != new[k]),
            removed=tuple(k for k in old if k not in new),
        )

    def is_trusted(self, root: Path, surface: TrustSurface) -> bool:
        return self.status(root, surface) in ("trusted", "not_needed")

    def trust(self, root: Path, surface: TrustSurface) -> None:
        """Record the decision; the runs' writes recorded for the workspace so far no longer confine its hooks and
        MCP servers (`rewind/workspace_writes.py`): the user looked at what it now holds."""
        writes_record(self.path.parent).trusted(root)
        workspaces = self._load()
        workspaces[workspace_key(root)] = {
            "surface_sha256": surface.digest(),
            "items": cast(JsonValue, surface.digests()),
            "trusted_at": datetime.now(UTC).isoformat(),
            "summary": surface.describe(),
        }
        self._save(workspaces)

    def revoke(self, root: Path) -> bool:
        workspaces = self._load()
        if workspaces.pop(workspace_key(root), None) is None:
            return False
        self._save(workspaces)
        return True

    def require(self, root: Path, surface: TrustSurface) -> None:
        status = self.status(root, surface)
        if status in ("trusted", "not_needed"):
            return
        key = workspace_key(root)
        listing = "\n".join(surface.lines(limit=20, width=None))  # an error message: its lines are not wrapped
        if status == "changed":
            change = self.change(root, surface)
            message = (
                f"workspace {key} changed since you trusted it ({change.describe()}); until you trust it again "
                f"BearAgent will not run it. It now needs trust for:\n{listing}"
            )
        else:
            message = (
                f"workspace {key} is not trusted, and its files would decide where requests and keys go, what code "
                f"runs or what is allowed:\n{listing}"
            )
        raise BearAgentError(
            ErrorInfo.of("permission", "untrusted_workspace", message, workspace=key[-1_000:], status=status),
            hint=f"review the items above, then run: {trust_command(root)}",
        )


def _store(env: Mapping[str, str] | None) -> TrustStore:
    return TrustStore(trust_store_path(env))


def is_trusted(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> bool:
    return _store(env).is_trusted(workspace_root, surface)


def trust_status(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> TrustStatus:
    return _store(env).status(workspace_root, surface)


def trust(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    _store(env).trust(workspace_root, surface)


def revoke(workspace_root: Path, *, env: Mapping[str, str] | None = None) -> bool:
    return _store(env).revoke(workspace_root)


def require_trust(workspace_root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    """Raise `BearAgentError(permission.untrusted_workspace)` unless the workspace (with this surface) is trusted.
    The message lists every item with its file and line; the hint is the exact command to trust it. The CLI maps it
    to exit code 2."""
    _store(env).require(workspace_root, surface)


def trust_workspace(root: Path, surface: TrustSurface, *, env: Mapping[str, str] | None = None) -> None:
    """For `bearagent init`: trust what it just created (call it after writing the config)."""
    trust(root, surface, env=env)

"""Workspace trust: a workspace's files decide nothing about where requests and keys go, what code runs or what is
allowed until its user trusts it. `surface` collects what needs trust; `store` records the user's decisions."""

from bearagent.trust.store import (
    TrustChange,
    TrustStatus,
    TrustStore,
    is_trusted,
    require_trust,
    revoke,
    trust,
    trust_command,
    trust_status,
    trust_store_path,
    trust_workspace,
    workspace_key,
)
from bearagent.trust.surface import TrustItem, TrustSurface, workspace_trust_surface

__all__ = [
    "TrustChange",
    "TrustItem",
    "TrustStatus",
    "TrustStore",
    "TrustSurface",
    "is_trusted",
    "require_trust",
    "revoke",
    "trust",
    "trust_command",
    "trust_status",
    "trust_store_path",
    "trust_workspace",
    "workspace_key",
    "workspace_trust_surface",
]

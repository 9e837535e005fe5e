"""BearAgent: a local-first, plugin-extensible agent runtime.

The curated public API: `open_workspace` / `Workspace` / `RunResult` (bearagent.api) and `hookimpl`, the plugin
marker (pluggy). Everything is imported lazily so `import bearagent` and `bearagent --help` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bearagent._markers import hookimpl
    from bearagent.api import Workspace, open_workspace
    from bearagent.runner import RunResult

__version__ = "0.1.0"

__all__ = ["RunResult", "Workspace", "__version__", "hookimpl", "open_workspace"]


def __getattr__(name: str) -> object:
    if name == "hookimpl":
        from bearagent._markers import hookimpl

        return hookimpl
    if name in ("open_workspace", "Workspace"):
        from bearagent import api

        return getattr(api, name)
    if name == "RunResult":
        from bearagent.runner import RunResult

        return RunResult
    raise AttributeError(f"module 'bearagent' has no attribute {name!r}")

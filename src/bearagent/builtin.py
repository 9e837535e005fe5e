"""Where the built-in agents and skills live: inside the installed wheel (`bearagent/_builtin/`), else the repo's
top-level `builtin_agents/` and `builtin_skills/` (editable installs and source checkouts)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_ROOT = _PACKAGE_DIR.parent.parent


def _locate(packaged: str, repo: str) -> Path:
    inside = _PACKAGE_DIR / "_builtin" / packaged
    if inside.is_dir():
        return inside
    return _REPO_ROOT / repo


def builtin_agents_dir() -> Path:
    return _locate("agents", "builtin_agents")


def builtin_skills_dir() -> Path:
    return _locate("skills", "builtin_skills")

"""The pluggy markers, in a module that imports nothing heavy (so `import bearagent` stays fast)."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("bearagent")
hookimpl = pluggy.HookimplMarker("bearagent")

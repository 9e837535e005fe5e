"""The package's version, in a leaf of its own so an adapter (the MCP client's `clientInfo`, the built-in plugin's
record) reads it without importing the public namespace `bearagent`, which sits above every layer."""

from __future__ import annotations

__version__ = "0.1.0"

"""`python -m bearagent` = the `bearagent` command (the same fast `--version` path as the console script)."""

from bearagent.cli import entry

entry()

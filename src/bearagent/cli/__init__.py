"""The `bearagent` command. `entry` is the console script: it answers `bearagent --version` (and `-V`) from the
version leaf before click or any command module is imported (issue 37: `--version` <= 60 ms), and hands every
other command line to the click group `main`, which is itself imported on first use (`_CliPackage`), so importing
`bearagent.cli` costs nothing. Before that it installs the bytecode table of the methods `dataclasses` generates
(`generated_code`, ~150 ms of a scripted run's start-up)."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

    from bearagent.cli.main import main

__all__ = ["entry", "main"]

VERSION_FLAGS = ("--version", "-V")


def entry() -> None:
    """The console script `bearagent` (pyproject `[project.scripts]`)."""
    args = sys.argv[1:]
    if len(args) == 1 and args[0] in VERSION_FLAGS:
        from bearagent._version import __version__

        # The same line click's `version_option` prints, so the answer does not depend on the path taken.
        sys.stdout.write(f"bearagent, version {__version__}\n")
        sys.stdout.flush()
        return
    from bearagent.cli.generated_code import install
    from bearagent.cli.startup import importing

    install()  # before any class is built: the methods dataclasses generates come from a bytecode table
    with importing("cli"):  # click and the command table, without collections over what they build
        from bearagent.cli.main import main as group

    group(prog_name="bearagent")


class _CliPackage(types.ModuleType):
    """`bearagent.cli.main` is the click group, imported on first use. A property rather than PEP 562's module
    `__getattr__`: importing the submodule `bearagent.cli.main` makes the import system set the package attribute
    `main` to that submodule, which would then shadow the group; the setter ignores that assignment."""

    @property
    def main(self) -> click.Group:
        from bearagent.cli.main import main as group

        return group

    @main.setter
    def main(self, value: object) -> None:
        if not isinstance(value, types.ModuleType):
            raise AttributeError("bearagent.cli.main is the command group; it cannot be replaced")


sys.modules[__name__].__class__ = _CliPackage

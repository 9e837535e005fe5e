"""`bearagent runs`, `bearagent tools`, `bearagent plugins` ...: a command group typed alone lists, as its `list`
subcommand does (`bearagent runs -w ws --json` too); `--help` still prints the group's help."""

from __future__ import annotations

import click


class ListGroup(click.Group):
    """A group whose `list` subcommand runs when no subcommand is named (options before one go to `list`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "list" in self.commands and (not args or (args[0].startswith("-") and args[0] not in ("-h", "--help"))):
            args = ["list", *args]
        return super().parse_args(ctx, args)

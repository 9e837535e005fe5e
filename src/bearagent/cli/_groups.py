"""`bearagent runs`, `bearagent tools`, `bearagent plugins` ...: a command group typed alone lists, as its `list`
subcommand does (`bearagent runs -w ws --json` too); `--help` still prints the group's help. A group may name
subcommands that live in other modules (`lazy`): their module is imported only when that subcommand runs or help is
printed, so `bearagent runs list` does not pay for `runs export`'s imports."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class ListGroup(click.Group):
    """A group whose `list` subcommand runs when no subcommand is named (options before one go to `list`)."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self._lazy.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "list" in self.list_commands(ctx) and (
            not args or (args[0].startswith("-") and args[0] not in ("-h", "--help"))
        ):
            args = ["list", *args]
        return super().parse_args(ctx, args)

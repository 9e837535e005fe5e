"""What `bearagent serve` and `bearagent worker` share: the workspaces they serve (`-w DIR`..., `--config FILE`)
and loading them (the server config, or the directories given, or this one)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from bearagent.cli._run_common import die_from

if TYPE_CHECKING:
    from bearagent.server.config import ServerConfig

F = TypeVar("F", bound=Callable[..., object])


def served_workspaces(workspace_help: str, config_help: str) -> Callable[[F], F]:
    """The `-w/--workspace DIR` (repeatable, as `workspaces`) and `--config FILE` (as `config_file`) options."""

    def decorate(func: F) -> F:
        func = click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            default=None,
            help=config_help,
        )(func)
        return click.option(
            "-w",
            "--workspace",
            "workspaces",
            multiple=True,
            type=click.Path(file_okay=False, exists=True, path_type=Path),
            help=workspace_help,
        )(func)

    return decorate


def load_served(workspaces: tuple[Path, ...], config_file: Path | None) -> ServerConfig:
    """The server config of `--config`, with the `-w` directories; this directory when neither is given. A bad
    config ends the command with its error."""
    from bearagent.domain.errors import BearAgentError
    from bearagent.server.config import load_server_config

    try:
        return load_server_config(config_file, workspaces or (() if config_file else (Path.cwd(),)))
    except BearAgentError as exc:
        die_from(exc, debug=False)

"""`die`: a command's usage or configuration error, one line of what went wrong and one of how to fix it (a
traceback only with --debug), then exit. Its own module so every CLI helper can use it without an import cycle
(`_run_common` re-exports it)."""

from __future__ import annotations

import sys
import traceback
from typing import NoReturn

import click

from bearagent.cli.safe_text import visible

EXIT_USAGE = 2


def die(what: str, fix: str | None, code: int = EXIT_USAGE, *, debug: bool = False) -> NoReturn:
    if debug:
        traceback.print_exc()
    click.echo(visible(f"error: {what}"), err=True)
    if fix:
        click.echo(visible(f"fix: {fix}"), err=True)
    sys.exit(code)

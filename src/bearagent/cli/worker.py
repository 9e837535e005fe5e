"""`bearagent worker`: claim and execute queued runs of the served workspaces (SPEC §17; docs/scale-out.md).

A worker serves the same workspaces as `bearagent serve` (`-w DIR`, `--config FILE`) over the same store, on this
machine or any other sharing the database. It executes up to `--concurrency` runs at once, resumes the runs of
workers that died, and on SIGTERM or Ctrl-C stops claiming, lets its runs finish for `--grace` seconds and hands the
rest back (they are resumed by another worker).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import click

from bearagent.cli._served import load_served, served_workspaces


@click.command("worker")
@served_workspaces(
    "A workspace whose queued runs to execute (repeatable); default: this directory.",
    "Server config naming the workspaces (the one `bearagent serve --config` reads; docs/server.md).",
)
@click.option(
    "--concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(1, 1024),
    help="Runs this worker executes at once.",
)
@click.option(
    "--grace",
    "grace_s",
    default=30.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    help="Seconds runs in flight may take to finish on SIGTERM before they are handed back.",
)
@click.option("--poll", "poll_s", default=0.5, show_default=True, type=click.FloatRange(0.01, 60), hidden=True)
def worker(
    workspaces: tuple[Path, ...], config_file: Path | None, concurrency: int, grace_s: float, poll_s: float
) -> None:
    """Execute queued runs (sent to `bearagent serve --workers 0`, or to any server sharing the store)."""
    config = load_served(workspaces, config_file)
    from bearagent.server.registry import RunManager

    manager = RunManager(
        config.workspaces,
        dict(os.environ),
        workers=1,
        concurrency=concurrency,
        resume_interrupted=True,
        poll_s=poll_s,
        store=config.store,
    )

    def report(workspace_id: str, problem: str) -> None:
        click.echo(f"worker {os.getpid()}: workspace {workspace_id} is not served: {problem}", err=True)

    manager.worker.report = report
    from bearagent.cli.startup import long_lived

    long_lived()

    async def main() -> None:
        from bearagent.store.postgres.io_loop import use_this_loop

        use_this_loop()  # this loop runs for the process's life: a PostgreSQL store's calls need no thread hops
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        serving = asyncio.create_task(manager.worker.serve())
        click.echo(
            f"worker {os.getpid()}: executing queued runs of {len(config.workspaces)} workspace(s), "
            f"{concurrency} at once",
            err=True,
        )
        await stop.wait()
        click.echo(f"worker {os.getpid()}: stopping (runs in flight get {grace_s:g} s, then are handed back)", err=True)
        await manager.worker.stop(grace_s=grace_s)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await manager.aclose()

    asyncio.run(main())

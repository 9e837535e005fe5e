"""Trust at the door of the interactive session: in a workspace whose files would decide where requests and keys
go, what code runs or what is allowed (`bearagent.trust`), and which the user has not trusted (or which changed
since), the session shows that list once and asks. Yes records the trust as `bearagent trust` does; no starts the
session anyway, and every prompt that needs trust is refused with the command to run (as `bearagent run` is).

Only on a terminal: off one, nothing is asked and nothing is trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from bearagent.cli.safe_text import visible

if TYPE_CHECKING:
    from bearagent.workspace import LoadedWorkspace


def trust_at_the_door(loaded: LoadedWorkspace, console: Console, read: Callable[[str], str]) -> bool | None:
    """Ask to trust the workspace when it needs trust and lacks it. True: trusted now; False: the user said no;
    None: nothing to ask (trusted already, or nothing needs trust)."""
    from bearagent.trust import TrustStore, trust_store_path, workspace_trust_surface

    surface = workspace_trust_surface(loaded)
    store = TrustStore(trust_store_path(loaded.env))
    status = store.status(loaded.root, surface)
    if status in ("trusted", "not_needed"):
        return None
    head = "changed since you trusted it" if status == "changed" else "not trusted yet"
    console.print(Text(visible(f"This workspace is {head}. Its files would decide:"), style="yellow"))
    for line in surface.lines():
        console.print(visible(line), markup=False)
    if status == "changed":
        console.print(Text(visible(f"changed: {store.change(loaded.root, surface).describe()}"), style="yellow"))
    while True:
        try:
            answer = read("Trust this workspace? [y/N] ").strip().lower()
        except (EOFError, KeyboardInterrupt):
            answer = "n"
            console.print()
        if answer in ("y", "yes"):
            store.trust(loaded.root, surface)
            console.print(Text(visible(f"Trusted: {surface.describe()} (stored in {store.path})."), style="green"))
            return True
        if answer in ("n", "no", ""):
            console.print(
                Text(
                    "Not trusted: prompts that need it are refused; `bearagent trust` trusts it later.", style="yellow"
                )
            )
            return False

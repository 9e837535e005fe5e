"""`/diff [N]` in the interactive session: the file changes of the session's last prompt (or of prompt N, numbered as
`/rewind` numbers them), every tool call's, Bash included, as diffs of the contents kept in the blob store. The same
service and drawing as `bearagent runs diff` (`service/file_diffs.py`, `run_files_diff.diff_lines`), bounded the same
way; a prompt's subagents are their own runs (`bearagent runs diff` on the child run)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from bearagent.cli.rewind_command import session_prompts
from bearagent.cli.safe_text import visible
from bearagent.domain.errors import BearAgentError
from bearagent.service.runner import WorkspaceRuntime


def _say(console: Console, text: str, style: str | None = None) -> None:
    console.print(Text(visible(text), style=style or ""), markup=False)


def diff_in_session(runtime: WorkspaceRuntime, session: str | None, arg: str, console: Console) -> None:
    from bearagent.cli.run_files_diff import diff_lines
    from bearagent.service.file_diffs import files_diff

    runs = session_prompts(runtime, session)
    if not runs:
        _say(console, "nothing to show: the session has no prompts yet", "red")
        return
    if not arg:
        number = len(runs)
    elif arg.isdigit() and 1 <= int(arg) <= len(runs):
        number = int(arg)
    else:
        _say(console, f"error: /diff takes a prompt number from 1 to {len(runs)} (as /rewind lists them)", "red")
        return
    run = runs[number - 1]
    try:
        found = files_diff(runtime.store, runtime.loaded.root, run.run_id)
    except BearAgentError as exc:
        _say(console, f"error: {exc.info.message}", "red")
        return
    prompt = (run.goal or "").strip().split("\n", 1)[0][:60]
    if not found.files:
        _say(console, f"prompt {number} ({prompt}) changed no files")
        return
    _say(console, f"prompt {number} ({prompt}), run {run.run_id}:", "bold")
    for text, style in diff_lines(found):
        console.print(Text(text, style=style or ""), markup=False, soft_wrap=True)
    for cut in found.cut:
        _say(console, f"note: {cut}", "yellow")

"""`sandbox.review: true` through real runs (scripted model, the real bubblewrap sandbox): a prompt-injected
`rm -rf src` is refused after the fact. Denied -> src is back byte for byte, the log has the approval facts and the
revert (`FilesRewound`), the model is told; approved -> src is gone; review off -> nobody is asked; a headless
`bearagent run` (nobody to ask) reverts; a content the blob store could not keep is named as not reverted."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.config_ws import isolated_env, write
from tests.support.rewind_ws import tree
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.cli import main
from bearagent.domain.events import Event
from bearagent.plugins.manager import PluginHost
from bearagent.ports import AskAnswer, AskRequest
from bearagent.sandbox.probe import find_bwrap

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or find_bwrap(None) is None,
        reason="review is of Bash calls in the sandbox: Linux and bubblewrap",
    ),
]

REVIEW = CONFIG + "sandbox:\n  review: true\n"


def _workspace(tmp_path: Path, config: str, command: str = "rm -rf src") -> Path:
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": command}}]}, {"text": "done"}]
    root = scripted_workspace(
        tmp_path / "ws", json.dumps({"turns": turns}), agents={"main": agent_md("Main.", mode="primary")}, config=config
    )
    write(root, "src/app.py", "print('app')\n")
    write(root, "src/pkg/__init__.py", "")
    write(root, "src/pkg/data.bin", "\x00\x01binary\n")
    (root / "src" / "run.sh").write_text("#!/bin/sh\n")
    (root / "src" / "run.sh").chmod(0o755)
    return root


def _run(root: Path, home: Path, answer: AskAnswer | None) -> tuple[list[AskRequest], list[Event]]:
    asked: list[AskRequest] = []

    async def ask(request: AskRequest) -> AskAnswer:
        asked.append(request)
        assert answer is not None, "review off: nobody is asked"
        return answer

    async def go() -> list[Event]:
        async with open_workspace(root, env=isolated_env(home), plugins=PluginHost(), ask=ask) as ws:
            result = await ws.run("clean up")
            return list(ws.events(str(result.run_id)))

    return asked, asyncio.run(go())


def _of(events: list[Event], kind: str) -> list[dict[str, object]]:
    return [dict(e.payload) for e in events if e.event_type == kind]


def test_a_denied_rm_rf_src_is_reverted_byte_for_byte(tmp_path: Path) -> None:
    root = _workspace(tmp_path, REVIEW)
    before = tree(root)
    asked, events = _run(root, tmp_path / "home", "deny")
    assert tree(root) == before, "src is back: contents, modes"
    assert len(asked) == 1 and asked[0].tool_name == "Bash" and "deleted src/app.py" in asked[0].reason
    assert "-print('app')" in asked[0].reason, "the change shown as a diff"
    requested, resolved = _of(events, "ApprovalRequested"), _of(events, "ApprovalResolved")
    assert len(requested) == 1 and requested[0]["tool_name"] == "Bash" and requested[0]["suggested_rule"] is None
    assert asked[0].review is True
    assert [r["decision"] for r in resolved] == ["deny"]
    changed, rewound = _of(events, "FilesChanged"), _of(events, "FilesRewound")
    assert len(changed) == 1 and len(rewound) == 1
    call = changed[0]["tool_call_id"]
    assert rewound[0]["to_tool_call_id"] == call
    put_back = {c["path"] for c in rewound[0]["changes"]}  # type: ignore[union-attr]
    assert {"src", "src/app.py", "src/pkg/data.bin", "src/run.sh"} <= put_back
    failed = _of(events, "ToolCallFailed")
    assert len(failed) == 1
    content = str(failed[0]["result"]["content"])  # type: ignore[index]
    assert "refused (the user denied them) and reverted" in content
    kinds = [e.event_type for e in events]
    assert kinds.index("FilesChanged") < kinds.index("ApprovalRequested") < kinds.index("FilesRewound")


def test_an_approved_rm_rf_src_stays_done(tmp_path: Path) -> None:
    root = _workspace(tmp_path, REVIEW)
    asked, events = _run(root, tmp_path / "home", "allow_once")
    assert len(asked) == 1 and not (root / "src").exists()
    assert [r["decision"] for r in _of(events, "ApprovalResolved")] == ["allow_once"]
    assert _of(events, "FilesRewound") == [] and len(_of(events, "ToolCallCompleted")) == 1


def test_review_off_asks_nobody(tmp_path: Path) -> None:
    root = _workspace(tmp_path, CONFIG)
    asked, events = _run(root, tmp_path / "home", None)
    assert asked == [] and not (root / "src").exists()
    assert _of(events, "ApprovalRequested") == [] and _of(events, "FilesRewound") == []


def test_a_call_that_changes_nothing_asks_nothing(tmp_path: Path) -> None:
    root = _workspace(tmp_path, REVIEW, command="ls src")
    asked, events = _run(root, tmp_path / "home", None)
    assert asked == [] and _of(events, "FilesRewound") == []


def test_a_headless_run_has_nobody_to_ask_and_reverts(tmp_path: Path) -> None:
    root = _workspace(tmp_path, REVIEW)
    before = tree(root)
    env = isolated_env(tmp_path / "home")
    result = CliRunner().invoke(main, ["run", "-w", str(root), "--json", "clean up"], env=env, prog_name="bearagent")
    assert result.exit_code == 0, result.output
    assert tree(root) == before
    run_id = json.loads(result.output)["run_id"]
    shown = CliRunner().invoke(main, ["events", run_id[:8], "-w", str(root), "--json"], env=env)
    lines = [json.loads(line) for line in shown.output.splitlines() if line.startswith("{")]
    kinds = [line["event_type"] for line in lines]
    assert "FilesRewound" in kinds and "ApprovalRequested" not in kinds
    failed = next(line for line in lines if line["event_type"] == "ToolCallFailed")
    assert "nobody could approve them" in failed["payload"]["result"]["content"]


def test_a_content_the_blob_store_did_not_keep_is_named_as_not_reverted(tmp_path: Path) -> None:
    """Over `rewind.max_file_size` (user config) a deleted file's content was recorded by hash only: the rest is
    reverted, that file is named in the result and the notice, and stays deleted."""
    root = _workspace(tmp_path, REVIEW)
    write(root, "src/big.txt", "x" * 5000)
    home = tmp_path / "home"
    write(home, "bearagent/config.yaml", "rewind:\n  max_file_size: 1000\n")
    asked, events = _run(root, home, "deny")
    assert len(asked) == 1
    assert (root / "src" / "app.py").read_text() == "print('app')\n" and not (root / "src" / "big.txt").exists()
    content = str(_of(events, "ToolCallFailed")[0]["result"]["content"])  # type: ignore[index]
    assert "Not reverted: not restorable" in content and "src/big.txt" in content


def test_the_terminal_asks_and_always_adds_no_rule(tmp_path: Path) -> None:
    """In the interactive session (a real pseudo-terminal) the review is the usual approval prompt, with the diff:
    `n` reverts; `a` keeps the changes and, unlike a tool call's "always", remembers no `Bash` rule."""
    import sqlite3

    import pexpect
    from tests.support.pty_session import interactive_session, session_env

    rm = {"tool_calls": [{"name": "Bash", "arguments": {"command": "rm -rf src"}}]}
    turns = [rm, {"text": "Refused then."}, rm, {"text": "Removed now."}]
    root = scripted_workspace(
        tmp_path / "ws", json.dumps({"turns": turns}), agents={"main": agent_md("Main.", mode="primary")}, config=REVIEW
    )
    write(root, "src/app.py", "print('app')\n")
    before = tree(root)
    home = tmp_path / "home"
    with interactive_session(root, session_env(home / "bearagent", HOME=str(home))) as child:
        child.sendline("clean up")
        child.expect("needs approval")
        child.expect("deleted src/app.py")
        child.expect(r"\[n\]o")
        child.sendline("n")
        child.expect("Refused then.")
        child.expect("main>")
        assert tree(root) == before
        child.sendline("clean up again")
        child.expect("needs approval")
        child.expect(r"\[a\]lways this session")
        child.sendline("a")
        child.expect("Removed now.")
        child.expect("main>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    assert not (root / "src").exists()
    with sqlite3.connect(f"file:{root / '.bearagent' / 'state.db'}?mode=ro", uri=True) as conn:
        (rules,) = conn.execute("SELECT allowed_rules FROM sessions").fetchone()
        decisions = [
            json.loads(p)["decision"]
            for (p,) in conn.execute("SELECT payload FROM events WHERE event_type = 'ApprovalResolved' ORDER BY seq_no")
        ]
    assert decisions == ["deny", "allow_always"]
    assert not json.loads(rules or "[]"), "a review's 'always' adds no rule"


def test_a_run_whose_questions_would_suspend_it_reverts_instead_of_waiting(tmp_path: Path) -> None:
    """`wait_approvals` without an asker (a server's run, `bearagent run --wait-approvals`): a question would leave
    the run waiting after the command already changed the files, so nobody is asked and the changes are reverted."""
    root = _workspace(tmp_path, REVIEW)
    before = tree(root)

    async def go() -> tuple[str, list[Event]]:
        async with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=PluginHost()) as ws:
            result = await ws.run("clean up", wait_approvals=True)
            return result.status, list(ws.events(str(result.run_id)))

    status, events = asyncio.run(go())
    assert status == "succeeded" and tree(root) == before
    assert _of(events, "ApprovalRequested") == [] and len(_of(events, "FilesRewound")) == 1

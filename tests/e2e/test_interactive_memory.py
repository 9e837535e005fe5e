"""`/init` and `/memory` in the interactive session (issue 32, Claude Code's habits), in a real terminal (tmux):
`/init` has the agent write AGENTS.md without asking for that one file, and asks before touching an existing one;
`/memory` lists the memory files (the project's, the user's `~/.claude/CLAUDE.md` and `CLAUDE.local.md`, all read as
Claude Code reads them) and opens the one picked in $EDITOR, whose edit the next prompt's system prompt carries."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import load, write
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace
from tests.support.tmux import TmuxScreen, base_env, require_tmux

from bearagent.trust import trust, workspace_trust_surface

INIT_SCRIPT = """
turns:
  - text: "Writing the memory file."
    tool_calls: [{name: Write, arguments: {file_path: AGENTS.md, content: "# Demo\\n\\nTest with `make test`.\\n"}}]
  - text: "Wrote AGENTS.md."
"""


def test_init_writes_agents_md_and_asks_before_touching_it_again(tmp_path: Path) -> None:
    require_tmux()
    config = CONFIG + "permission_mode: default\n"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Write, Edit]")}
    root = scripted_workspace(tmp_path / "ws", INIT_SCRIPT, agents=agents, config=config)
    home = tmp_path / "home"
    with TmuxScreen(
        [sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=base_env(home), cwd=root
    ) as term:
        term.wait_for("main>")
        term.send_text("/init")
        term.send("Enter")
        screen = term.wait_for(r"succeeded · ")
        assert "needs approval" not in screen  # the run may write AGENTS.md without asking
        assert (root / "AGENTS.md").read_text() == "# Demo\n\nTest with `make test`.\n"
        term.send_text("/init")
        term.send("Enter")
        term.wait_for(r"AGENTS\.md exists: let the agent rewrite it from the repository\? \[y/N\]")
        term.send_text("n")
        term.send("Enter")
        term.wait_for(r"AGENTS\.md left as it is")
        term.send_text("/memory")
        term.send("Enter")
        screen = term.wait_for(r"edit which\?")
        assert "project  AGENTS.md  (loaded, 31 characters in all)" in screen, screen
        assert "user     ~/.claude/CLAUDE.md  (all projects; not there yet)" in screen, screen
        assert "local    CLAUDE.local.md  (this project, yours; not there yet)" in screen, screen
        term.send("Enter")
        term.send_text("/exit")
        term.send("Enter")
    assert (root / "AGENTS.md").read_text() == "# Demo\n\nTest with `make test`.\n"  # the no left it


def test_memory_opens_the_project_file_in_the_editor_and_the_next_prompt_uses_it(tmp_path: Path) -> None:
    require_tmux()
    root, home = tmp_path / "ws", tmp_path / "home"
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "Always answer in French.\\n" >> "$1"\n', encoding="utf-8")
    editor.chmod(0o755)
    with FakeOpenAI([Answer(text="Bonjour.")]) as server:
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
            f"base_url: '{server.base_url}', model: local-model, api_key_env: FAKE_KEY}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary"))
        env = {**base_env(home), "FAKE_KEY": "sk-fake", "EDITOR": str(editor)}
        trust(root, workspace_trust_surface(load(root, home)), env=env)
        with TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=env, cwd=root) as term:
            term.wait_for("main>")
            term.send_text("/memory")
            term.send("Enter")
            screen = term.wait_for(r"edit which\?")
            assert "AGENTS.md  (not there yet" in screen, screen
            term.send_text("1")
            term.send("Enter")
            term.wait_for(r"memory: AGENTS\.md loaded; the next prompt uses it")
            term.send_text("hello")
            term.send("Enter")
            term.wait_for(r"succeeded · ")
            term.send_text("/exit")
            term.send("Enter")
        (request,) = server.chat_requests()
    messages = cast(list[Mapping[str, object]], request.body["messages"])
    assert "Always answer in French." in str(messages[0]["content"])
    assert (root / "AGENTS.md").read_text() == "Always answer in French.\n"


def test_memory_reads_and_edits_the_user_and_local_files(tmp_path: Path) -> None:
    require_tmux()
    root, home = tmp_path / "ws", tmp_path / "home"
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "Always answer in French.\\n" >> "$1"\n', encoding="utf-8")
    editor.chmod(0o755)
    with FakeOpenAI([Answer(text="Bonjour.")]) as server:
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
            f"base_url: '{server.base_url}', model: local-model, api_key_env: FAKE_KEY}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", mode="primary"))
        write(root, "AGENTS.md", "Project rule: run make test.\n")
        write(root, "CLAUDE.local.md", "Local rule: my sandbox URL is http://localhost:3000.\n")
        env = {**base_env(home), "FAKE_KEY": "sk-fake", "EDITOR": str(editor)}
        trust(root, workspace_trust_surface(load(root, home)), env=env)
        with TmuxScreen([sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=env, cwd=root) as term:
            term.wait_for("main>")
            term.send_text("/memory")
            term.send("Enter")
            screen = term.wait_for(r"edit which\?")
            assert "user     ~/.claude/CLAUDE.md  (all projects; not there yet)" in screen, screen
            assert "local    CLAUDE.local.md  (loaded: this project, yours)" in screen, screen
            term.send_text("2")  # the user's file: ~/.claude/ is made, the editor creates the file
            term.send("Enter")
            term.wait_for(r"memory: ~/\.claude/CLAUDE\.md loaded; the next prompt uses it")
            term.send_text("hello")
            term.send("Enter")
            term.wait_for(r"succeeded · ")
            term.send_text("/exit")
            term.send("Enter")
        (request,) = server.chat_requests()
    system = str(cast(list[Mapping[str, object]], request.body["messages"])[0]["content"])
    user_at, project_at, local_at = (
        system.index("Always answer in French."),
        system.index("Project rule: run make test."),
        system.index("Local rule: my sandbox URL"),
    )
    assert user_at < project_at < local_at  # Claude Code's order: user, project, local
    assert (home / ".claude" / "CLAUDE.md").read_text() == "Always answer in French.\n"

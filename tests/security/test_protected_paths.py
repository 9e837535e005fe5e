"""Real runs (open_workspace + a scripted model) against the trust boundary of issue 13: the workspace's control
files, BearAgent's own state files, workspace files BearAgent reads, and the agent's tool grant."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace
from tests.support.tools import call

from bearagent.api import runtime_of
from bearagent.domain.errors import BearAgentError
from bearagent.domain.models import ModelEvent, ModelRequest
from bearagent.domain.tools import ToolSpec
from bearagent.providers.scripted import ScriptedProvider
from bearagent.tools.gate import ToolGate
from bearagent.tools.policy import ToolPolicy
from bearagent.tools.runtime_tools import SkillContent, SkillTool
from bearagent.trust import trust, workspace_trust_surface

MAIN = {"main": agent_md("Main.", mode="primary")}
USER_NO_SANDBOX = "sandbox: off\n"  # the user's own choice: Bash is unconfined, so the tests do not depend on bwrap


def _script(*calls: Mapping[str, object]) -> str:
    turns = [{"tool_calls": [call]} for call in calls]
    return json.dumps({"turns": [*turns, {"text": "done"}]})


def _write(path: str, content: str = "garbage") -> dict[str, object]:
    return {"name": "Write", "arguments": {"file_path": path, "content": content}}


def _run(root: Path, home: Path, prompt: str = "go") -> list[dict[str, object]]:
    """Run once; return the tool outcomes (ToolCallCompleted / ToolCallFailed payloads, in order)."""
    with open_ws(root, home) as ws:
        result = ws.run_sync(prompt)
        assert result.status == "succeeded", result.error
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    return [
        {"type": e["event_type"], **e["payload"]["result"]}
        for e in events
        if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")
    ]


def _trusted(root: Path, home: Path) -> None:
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))


def _user_config(home: Path, text: str) -> None:
    write(home / "bearagent", "config.yaml", text)


# ---- control files: denied non-interactively with the rule named, allowed with that rule ------------------------

PROTECTED = [
    ".bearagent/config.yaml",
    ".bearagent/hooks/guard.sh",
    ".claude/settings.json",
    ".mcp.json",
    ".git/config",
    "AGENTS.md",
]


@pytest.mark.parametrize("target", PROTECTED)
def test_a_write_to_a_control_file_is_denied_naming_the_rule(tmp_path: Path, target: str) -> None:
    root = scripted_workspace(tmp_path / "ws", _script(_write(target, "{}")), agents=MAIN)
    before = (root / target).read_text() if (root / target).exists() else None
    [outcome] = _run(root, tmp_path / "home")
    assert outcome["type"] == "ToolCallFailed"
    content = str(outcome["content"])
    assert "control file" in content and "Nobody can approve it" in content
    assert f'permissions: {{allow: ["Edit(/{target})"]}}' in content
    assert "acceptEdits" not in content  # no mode lets it through, so none is suggested
    after = (root / target).read_text() if (root / target).exists() else None
    assert after == before


@pytest.mark.parametrize("target", PROTECTED)
def test_an_allow_rule_naming_the_control_file_allows_the_write(tmp_path: Path, target: str) -> None:
    config = CONFIG + f'permissions: {{allow: ["Edit(/{target})"]}}\n'
    root = scripted_workspace(tmp_path / "ws", _script(_write(target, "{}")), agents=MAIN, config=config)
    home = tmp_path / "home"
    _trusted(root, home)
    [outcome] = _run(root, home)
    assert outcome["type"] == "ToolCallCompleted", outcome["content"]
    assert (root / target).read_text() == "{}"


def test_a_bare_edit_rule_or_bypass_mode_does_not_open_a_control_file(tmp_path: Path) -> None:
    config = CONFIG + 'permission_mode: bypassPermissions\npermissions: {allow: [Edit, Write, "Edit(**)"]}\n'
    write(tmp_path / "ws", "AGENTS.md", "be careful\n")
    root = scripted_workspace(tmp_path / "ws", _script(_write("AGENTS.md")), agents=MAIN, config=config)
    home = tmp_path / "home"
    _user_config(home, "permission_mode: bypassPermissions\n")  # the user's own bypass, even
    _trusted(root, home)
    [outcome] = _run(root, home)
    assert outcome["type"] == "ToolCallFailed"
    assert 'permissions: {allow: ["Edit(/AGENTS.md)"]}' in str(outcome["content"])
    assert (root / "AGENTS.md").read_text() == "be careful\n"


def test_edit_of_a_hook_script_is_denied_and_the_script_is_unchanged(tmp_path: Path) -> None:
    call = {
        "name": "Edit",
        "arguments": {"file_path": ".bearagent/hooks/guard.sh", "old_string": "exit 2", "new_string": "exit 0"},
    }
    root = scripted_workspace(tmp_path / "ws", _script(call), agents=MAIN)
    write(root, ".bearagent/hooks/guard.sh", "#!/bin/sh\nexit 2\n")
    [outcome] = _run(root, tmp_path / "home")
    assert outcome["type"] == "ToolCallFailed"
    assert 'permissions: {allow: ["Edit(/.bearagent/hooks/guard.sh)"]}' in str(outcome["content"])
    assert (root / ".bearagent/hooks/guard.sh").read_text() == "#!/bin/sh\nexit 2\n"


def test_garbage_never_reaches_the_event_store_even_with_a_rule_naming_it(tmp_path: Path) -> None:
    config = CONFIG + 'permissions: {allow: ["Edit(/.bearagent/state.db)", "Edit(/.bearagent/state.db-wal)"]}\n'
    script = _script(_write(".bearagent/state.db"), _write(".bearagent/state.db-wal"))
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    home = tmp_path / "home"
    _trusted(root, home)
    outcomes = _run(root, home)
    assert [o["type"] for o in outcomes] == ["ToolCallFailed", "ToolCallFailed"]
    assert "BearAgent's event store" in str(outcomes[0]["content"])
    assert (root / ".bearagent/state.db").read_bytes()[:16] == b"SQLite format 3\x00"
    with open_ws(root, home) as ws:  # the log is still readable afterwards
        [run] = ws.runs()
        assert run.status == "succeeded"
        assert any(e.event_type == "ToolCallFailed" for e in ws.events(str(run.run_id)))


# ---- bypass attempts: other spellings and symlinks -----------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "sub/../.bearagent/config.yaml",
        "./.bearagent/config.yaml",
        "{root}/.bearagent/config.yaml",
        ".bearagent//config.yaml",
    ],
)
def test_other_spellings_of_a_control_file_are_denied(tmp_path: Path, spelling: str) -> None:
    root = tmp_path / "ws"
    path = spelling.format(root=root)
    scripted_workspace(root, _script(_write(path)), agents=MAIN)
    (root / "sub").mkdir()
    before = (root / ".bearagent/config.yaml").read_text()
    [outcome] = _run(root, tmp_path / "home")
    assert outcome["type"] == "ToolCallFailed"
    assert 'permissions: {allow: ["Edit(/.bearagent/config.yaml)"]}' in str(outcome["content"])
    assert (root / ".bearagent/config.yaml").read_text() == before


def test_a_symlink_into_a_control_directory_is_refused(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws",
        _script(_write("link/config.yaml"), _write("link/agents/new.md"), _write("innocent.yaml")),
        agents=MAIN,
    )
    (root / "link").symlink_to(".bearagent")
    (root / "innocent.yaml").symlink_to(".bearagent/config.yaml")
    before = (root / ".bearagent/config.yaml").read_text()
    outcomes = _run(root, tmp_path / "home")
    assert [o["type"] for o in outcomes] == ["ToolCallFailed"] * 3
    for outcome in outcomes:
        assert outcome["error"]["code"] == "permission.protected_path", outcome  # type: ignore[index]
        assert "a control file of the workspace, through a symlink" in str(outcome["content"])
    assert (root / ".bearagent/config.yaml").read_text() == before
    assert not (root / ".bearagent/agents/new.md").exists()


def test_creating_directories_through_a_symlink_into_a_control_directory_is_refused(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", _script(_write("link/skills/evil/SKILL.md")), agents=MAIN)
    (root / "link").symlink_to(".claude")
    [outcome] = _run(root, tmp_path / "home")
    assert outcome["type"] == "ToolCallFailed"
    assert not (root / ".claude").exists()  # the link dangles: nothing was created behind it


def test_the_real_path_of_a_symlinked_control_file_is_guarded_too(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", _script(_write("docs/agents.md"), _write("claude-conf/settings.json")), agents=MAIN
    )
    write(root, "docs/agents.md", "rules\n")
    write(root, "claude-conf/settings.json", "{}")
    (root / "AGENTS.md").symlink_to("docs/agents.md")
    (root / ".claude").symlink_to("claude-conf")
    outcomes = _run(root, tmp_path / "home")
    assert [o["type"] for o in outcomes] == ["ToolCallFailed"] * 2
    assert "leads to 'AGENTS.md'" in str(outcomes[0]["content"])
    assert "leads to '.claude/settings.json'" in str(outcomes[1]["content"])
    assert (root / "docs/agents.md").read_text() == "rules\n"


def test_ordinary_files_stay_writable(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", _script(_write("src/app.py", "x = 1\n")), agents=MAIN)
    [outcome] = _run(root, tmp_path / "home")
    assert outcome["type"] == "ToolCallCompleted"
    assert (root / "src/app.py").read_text() == "x = 1\n"


# ---- workspace files BearAgent reads -----------------------------------------------------------------------


def test_agents_md_linked_to_a_secret_outside_never_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "outside" / "id_rsa"
    write(secret.parent, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY----- s3cr3t\n")
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": [{"text": "hi"}]}), agents=MAIN)
    (root / "AGENTS.md").symlink_to(secret)
    write(root, "CLAUDE.md", "fallback instructions\n")
    seen: list[ModelRequest] = []
    original = ScriptedProvider.stream

    async def recording(self: ScriptedProvider, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        seen.append(request)
        async for event in original(self, request):
            yield event

    monkeypatch.setattr(ScriptedProvider, "stream", recording)
    home = tmp_path / "home"
    with open_ws(root, home) as ws:
        result = ws.run_sync("hello")
        assert result.status == "succeeded", result.error
    sent = json.dumps([r.model_dump(mode="json") for r in seen])
    assert seen and "s3cr3t" not in sent
    assert "fallback instructions" in sent  # CLAUDE.md, a regular file, is still used
    diags = [d for d in load(root, home).diagnostics() if d.code == "workspace.path_refused"]
    assert diags and "AGENTS.md" in diags[0].message and "outside the workspace" in diags[0].message


def test_an_agent_file_linked_outside_is_not_loaded(tmp_path: Path) -> None:
    write(tmp_path / "outside", "spy.md", "---\ndescription: Planted.\n---\nSpy.\n")
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": [{"text": "hi"}]}), agents=MAIN)
    (root / ".bearagent/agents/spy.md").symlink_to(tmp_path / "outside" / "spy.md")
    loaded = load(root, tmp_path / "home")
    assert loaded.agents.get("spy") is None and loaded.agents.get("main") is not None
    assert any(d.code == "workspace.path_refused" and "spy.md" in d.message for d in loaded.diagnostics())


def test_a_workspace_skills_bundled_file_linked_outside_is_not_listed_or_read(tmp_path: Path) -> None:
    write(tmp_path / "outside", "secret.txt", "s3cr3t\n")
    script = json.dumps(
        {
            "turns": [
                {"tool_calls": [{"name": "Skill", "arguments": {"name": "notes"}}]},
                {"tool_calls": [{"name": "Skill", "arguments": {"name": "notes", "file": "secret.txt"}}]},
                {"tool_calls": [{"name": "Skill", "arguments": {"name": "notes", "file": "guide.md"}}]},
                {"text": "done"},
            ]
        }
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN)
    write(root, ".bearagent/skills/notes/SKILL.md", "---\nname: notes\ndescription: Notes.\n---\nRead the guide.\n")
    write(root, "docs/guide.md", "the guide\n")
    (root / ".bearagent/skills/notes/secret.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / ".bearagent/skills/notes/guide.md").symlink_to("../../../docs/guide.md")  # inside: followed
    listing, secret, guide = _run(root, tmp_path / "home")
    assert listing["type"] == "ToolCallCompleted"
    assert "guide.md" in str(listing["content"]) and "secret.txt" not in str(listing["content"])
    assert secret["type"] == "ToolCallFailed" and "s3cr3t" not in json.dumps(secret)
    assert guide["type"] == "ToolCallCompleted" and "the guide" in str(guide["content"])


def test_the_skill_tool_refuses_a_bundled_file_swapped_for_a_symlink_after_loading(tmp_path: Path) -> None:
    write(tmp_path / "outside", "secret.txt", "s3cr3t\n")
    root = tmp_path / "ws"
    write(root, ".bearagent/skills/notes/notes.txt", "harmless\n")
    directory = root / ".bearagent/skills/notes"
    content = SkillContent(name="notes", body="b", directory=str(directory), files=["notes.txt"])
    spec = ToolSpec(name="Skill", description="d", input_schema={"type": "object"})
    gate = ToolGate({"Skill": SkillTool(spec, lambda _name: content)}, policy=ToolPolicy())
    first = asyncio.run(call(root, "Skill", {"name": "notes", "file": "notes.txt"}, gate=gate))
    assert first.status == "succeeded" and "harmless" in first.content
    (directory / "notes.txt").unlink()
    (directory / "notes.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    second = asyncio.run(call(root, "Skill", {"name": "notes", "file": "notes.txt"}, gate=gate))
    assert second.status == "failed" and "s3cr3t" not in second.content
    assert second.error is not None and second.error.code == "permission.skill_file_refused"
    assert "leads outside the workspace" in second.content


# ---- BearAgent's own state: never through a symlink -------------------------------------------------------------


@pytest.mark.parametrize("planted", ["state.db", "state.db-wal", "locks", "transcripts"])
def test_a_state_path_planted_as_a_symlink_is_refused_and_nothing_is_created_outside(
    tmp_path: Path, planted: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": [{"text": "hi"}]}), agents=MAIN)
    (root / ".bearagent" / planted).symlink_to(outside / planted if "." in planted else outside)
    with open_ws(root, tmp_path / "home") as ws, pytest.raises(BearAgentError) as caught:
        ws.run_sync("hi")
    assert caught.value.info.code == "permission.state_symlink"
    assert f".bearagent/{planted} is a symlink" in caught.value.info.message
    assert "rm " in (caught.value.hint or "")
    assert list(outside.iterdir()) == []


def test_the_state_directory_itself_as_a_symlink_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    root = tmp_path / "ws"
    scripted_workspace(outside.parent / "staging", json.dumps({"turns": [{"text": "hi"}]}), agents=MAIN)
    shutil.move(str(outside.parent / "staging" / ".bearagent"), str(outside))
    root.mkdir()
    (root / ".bearagent").symlink_to(outside)
    before = sorted(p.name for p in outside.rglob("*"))
    with pytest.raises(BearAgentError) as caught, open_ws(root, tmp_path / "home") as ws:
        ws.run_sync("hi")
    # refused by whichever check meets the link first: the guard files' (its config.yaml is reached through the
    # link, so it does not load: fail closed) or the state directory's own
    info = caught.value.info
    assert info.code in ("permission.state_symlink", "configuration.guard_file_invalid"), info
    assert ".bearagent" in info.message and "symlink" in info.message, info.message
    assert sorted(p.name for p in outside.rglob("*")) == before  # no state.db, locks or transcripts appeared
    loaded = load(root, tmp_path / "home")
    assert any(d.code == "workspace.path_refused" for d in loaded.diagnostics())  # its config was not read


def test_state_files_are_private(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": [{"text": "hi"}]}), agents=MAIN)
    _run_text_only(root, tmp_path / "home")
    state = root / ".bearagent"
    assert (state / "state.db").stat().st_mode & 0o777 == 0o600
    for name in ("locks", "transcripts"):
        assert (state / name).stat().st_mode & 0o777 == 0o700
        files = list((state / name).iterdir())
        assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)


def _run_text_only(root: Path, home: Path) -> None:
    with open_ws(root, home) as ws:
        assert ws.run_sync("hi").status == "succeeded"


# ---- the agent's tool grant in real runs ---------------------------------------------------------------------


def test_a_disallowed_specifier_denies_matching_calls_in_a_real_run(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Bash]", disallowed_tools='["Bash(rm *)"]')}
    config = CONFIG + "permissions: {allow: [Bash]}\n"  # without the agent's deny, rm would run
    script = _script(
        {"name": "Bash", "arguments": {"command": "rm -rf x"}}, {"name": "Bash", "arguments": {"command": "ls x"}}
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=config)
    (root / "x").mkdir()
    home = tmp_path / "home"
    _user_config(home, USER_NO_SANDBOX)
    _trusted(root, home)
    outcomes = _run(root, home)
    assert [o["type"] for o in outcomes] == ["ToolCallFailed", "ToolCallCompleted"]
    assert "'Bash(rm *)' (the agent's disallowed_tools)" in str(outcomes[0]["content"])
    assert (root / "x").is_dir()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_tools_specifier_keeps_bash_and_pre_approves_only_its_commands(tmp_path: Path) -> None:
    agents = {"main": agent_md("Main.", mode="primary", tools='[Read, "Bash(git *)"]')}
    script = _script(
        {"name": "Bash", "arguments": {"command": "git status"}}, {"name": "Bash", "arguments": {"command": "touch y"}}
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    subprocess.run(["git", "init", "-q", str(root)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    home = tmp_path / "home"
    _user_config(home, USER_NO_SANDBOX)
    _trusted(root, home)  # a pre-approval in an agent file widens what runs unasked
    outcomes = _run(root, home)
    assert [o["type"] for o in outcomes] == ["ToolCallCompleted", "ToolCallFailed"]
    assert "Bash runs unconfined here because" in str(outcomes[1]["content"])
    assert 'permissions: {allow: ["Bash(touch y)"]}' in str(outcomes[1]["content"])
    assert not (root / "y").exists()
    with open_ws(root, home) as ws:
        assert not [d for d in runtime_of(ws).loaded.project("main").diagnostics if d.code == "agent.unknown_tool"]

"""`bearagent run --disallowed-tools`, `--system-prompt`, `--append-system-prompt` and `--add-dir` (Claude Code's
flags, issue 32), through real `bearagent` processes: what the model is sent, what a tool may reach and do; the
choices are sealed in the run's record, so a run resumed by another process keeps them, and a log whose record was
edited to add one is refused."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from tests.support.config_ws import isolated_env, load, write
from tests.support.fake_openai import Answer, FakeOpenAI
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface


def _run(root: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        cwd=root,
        env={**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _system(body: Mapping[str, object]) -> str:
    messages = cast(list[Mapping[str, object]], body["messages"])
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


def test_system_prompt_replaces_the_agents_prompt_and_append_adds_to_the_end(tmp_path: Path) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    with FakeOpenAI([Answer(text="Arr."), Answer(text="Hello.")]) as server:
        write(
            root,
            ".bearagent/config.yaml",
            "default_agent: main\ndefault_model: local\nmodels:\n  local: {provider: openai-compatible, "
            f"base_url: '{server.base_url}', model: local-model, api_key_env: FAKE_KEY}}\n",
        )
        write(root, ".bearagent/agents/main.md", agent_md("Main.", "You are the file's agent.", mode="primary"))
        env = {**isolated_env(home), "FAKE_KEY": "sk-fake"}
        trust(root, workspace_trust_surface(load(root, home)), env=env)
        write(tmp_path, "extra.md", "Always answer in one word.\n")
        chosen = _run(
            root,
            env,
            "run",
            "--system-prompt",
            "You are a pirate.",
            "--append-system-prompt",
            f"@{tmp_path / 'extra.md'}",
            "hi",
        )
        assert chosen.returncode == 0, chosen.stderr
        plain = _run(root, env, "run", "hi")
        assert plain.returncode == 0, plain.stderr
        first, second = (_system(r.body) for r in server.chat_requests())
    assert first.startswith("You are a pirate.") and "file's agent" not in first
    assert "# Environment" in first  # the environment section stays
    assert first.rstrip().endswith("Always answer in one word.")
    assert second.startswith("You are the file's agent.") and "pirate" not in second and "one word" not in second


def test_bad_values_are_refused_before_the_run(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", 'turns:\n  - text: "x"\n', agents={"main": agent_md("M.", mode="primary")}
    )
    env = isolated_env(tmp_path / "home")
    cases = {
        ("--add-dir", str(tmp_path / "nope")): "--add-dir",
        ("--add-dir", "/"): "whole file system",
        ("--system-prompt", "@" + str(tmp_path / "missing.md")): "cannot read",
        ("--append-system-prompt", "  "): "is empty",
        ("--disallowed-tools", "Bash(*"): "Bash(*",
    }
    for flags, why in cases.items():
        done = _run(root, env, "run", *flags, "hi")
        assert done.returncode == 2, (flags, done.stdout, done.stderr)
        assert why in done.stderr and "Traceback" not in done.stderr, (flags, done.stderr)
    assert not (root / ".bearagent" / "state.db").exists()


SCRIPT = """
turns:
  - text: "Reading the shared notes."
    tool_calls: [{{name: Read, arguments: {{file_path: "{shared}/notes.txt"}}}}]
  - text: "Writing."
    tool_calls: [{{name: Write, arguments: {{file_path: out.txt, content: "written\\n"}}}}]
  - text: "Done."
"""


def _tool_results(root: Path, home: Path) -> list[tuple[str, str]]:
    """(event type, result text) of each finished tool call of the workspace's runs, in order."""
    out: list[tuple[str, str]] = []
    with open_ws(root, home) as ws:
        for run in sorted(ws.runs(), key=lambda r: r.created_at):
            for event in ws.events(str(run.run_id)):
                if event.event_type in ("ToolCallCompleted", "ToolCallFailed"):
                    result = cast(Mapping[str, object], thaw_json_mapping(event.payload)["result"])
                    out.append((event.event_type, json.dumps(result)))
    return out


def _shared_notes_ws(
    tmp_path: Path, script: str = SCRIPT, tools: str = "[Read, Write]", permissions: str = ""
) -> tuple[Path, Path, dict[str, str], Path]:
    """A workspace whose scripted model reads `shared/notes.txt` (a directory beside it) and writes out.txt, edits
    accepted: its root, the home, the environment of its runs and the shared directory."""
    shared = tmp_path / "shared"
    write(shared, "notes.txt", "shared secret notes\n")
    home = tmp_path / "home"
    agents = {"main": agent_md("Main.", mode="primary", tools=tools)}
    config = CONFIG + "permission_mode: acceptEdits\n" + permissions
    root = scripted_workspace(tmp_path / "ws", script.format(shared=shared), agents=agents, config=config)
    return root, home, isolated_env(home), shared


def _add_dir_to_the_record(root: Path, add_dir: Path, run_id: str | None = None) -> None:
    """Edit the log: a directory added to the record of the run (the only one, or `run_id`); its seal no longer
    verifies."""
    db = sqlite3.connect(root / ".bearagent" / "state.db")
    try:
        query = "SELECT rowid, payload FROM events WHERE event_type = 'RunCreated'"
        row = db.execute(query + " AND run_id = ?", (run_id,)).fetchone() if run_id else db.execute(query).fetchone()
        payload = json.loads(row[1])
        payload["request"]["add_dirs"] = [str(add_dir)]
        db.execute("UPDATE events SET payload = ? WHERE rowid = ?", (json.dumps(payload), row[0]))
        db.commit()
    finally:
        db.close()


def _replay_last(root: Path, env: Mapping[str, str]) -> dict[str, object]:
    """`bearagent replay last --json` (it must exit 0): its report."""
    replayed = _run(root, env, "replay", "last", "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    return cast(dict[str, object], json.loads(replayed.stdout))


def test_disallowed_tools_and_add_dir_shape_one_run_only(tmp_path: Path) -> None:
    root, home, env, shared = _shared_notes_ws(tmp_path)
    chosen = _run(root, env, "run", "--add-dir", str(shared), "--disallowedTools", "Write", "go")
    assert chosen.returncode == 0, chosen.stderr
    assert not (root / "out.txt").exists()  # Write denied for this run
    (read, write_call) = _tool_results(root, home)
    assert read[0] == "ToolCallCompleted" and "shared secret notes" in read[1]
    assert write_call[0] == "ToolCallFailed"
    assert "--disallowed-tools" in write_call[1]  # the denial names the flag that caused it: the user's fix
    # the replay plans the run as it was (its sealed choices): the re-executed Read reaches --add-dir again
    report = _replay_last(root, env)
    assert report["ok"] and report["mismatches"] == 0, report
    assert not any("without the run's own choices" in note for note in cast(list[str], report["notes"])), report
    plain = _run(root, env, "run", "go")  # a new run: neither choice carries over
    assert plain.returncode == 0, plain.stderr
    assert (root / "out.txt").read_text() == "written\n"
    later = _tool_results(root, home)[2:]
    assert later[0][0] == "ToolCallFailed" and "shared secret notes" not in later[0][1]
    assert later[1][0] == "ToolCallCompleted"


def test_a_denial_by_a_disallowed_tools_rule_names_the_flag_and_a_replay_keeps_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}
    script = SCRIPT.format(shared=tmp_path / "ws")
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=CONFIG + "permission_mode: acceptEdits\n")
    write(root, "notes.txt", "local notes\n")
    env = isolated_env(home)
    chosen = _run(root, env, "run", "--disallowed-tools", "Write(out.txt)", "go")
    assert chosen.returncode == 0, chosen.stderr
    assert not (root / "out.txt").exists()
    write_call = _tool_results(root, home)[1]
    assert write_call[0] == "ToolCallFailed"
    assert "Write(out.txt)" in write_call[1] and "this run's --disallowed-tools" in write_call[1], write_call
    assert "run again without that rule in --disallowed-tools" in write_call[1], write_call
    assert _replay_last(root, env)["ok"]


def test_a_replay_of_a_record_not_sealed_by_you_drops_its_choices_with_a_note(tmp_path: Path) -> None:
    root, home, env, shared = _shared_notes_ws(tmp_path)
    plain = _run(root, env, "run", "go")
    assert plain.returncode == 0, plain.stderr
    assert "shared secret notes" not in _tool_results(root, home)[0][1]
    _add_dir_to_the_record(root, shared)  # a log edited to add a directory to the run's record
    replayed = _run(root, env, "replay", "last", "--json")
    report = json.loads(replayed.stdout)
    assert any("without the run's own choices" in note for note in report["notes"]), report
    assert "shared secret notes" not in replayed.stdout  # the edited record reached nothing


WAIT_SCRIPT = """
turns:
  - text: "Checking."
    tool_calls: [{{name: Bash, arguments: {{command: "echo asked"}}}}]
  - text: "Reading."
    tool_calls: [{{name: Read, arguments: {{file_path: "{shared}/notes.txt"}}}}]
  - text: "Writing."
    tool_calls: [{{name: Write, arguments: {{file_path: out.txt, content: "written\\n"}}}}]
  - text: "Done."
"""


def _wait(root: Path, env: Mapping[str, str], *flags: str) -> tuple[str, str]:
    """Start a run that stops at its Bash approval (exit 4): its run id and the approval's id."""
    waiting = _run(root, env, "run", "--json", "--wait-approvals", *flags, "go")
    assert waiting.returncode == 4, waiting.stdout + waiting.stderr
    run_id = json.loads(waiting.stdout)["run_id"]
    listed = _run(root, env, "approvals", "list", "--json")
    (approval,) = [a["approval_id"] for a in json.loads(listed.stdout) if a["run_id"] == run_id]
    return run_id, approval


def test_a_resumed_run_keeps_its_choices_and_an_edited_record_is_refused(tmp_path: Path) -> None:
    root, home, env, shared = _shared_notes_ws(
        tmp_path, WAIT_SCRIPT, tools="[Read, Write, Bash]", permissions="permissions:\n  ask: [Bash]\n"
    )
    run_id, approval = _wait(root, env, "--add-dir", str(shared), "--disallowed-tools", "Write")
    # the answer is given by another process, which resumes the run from its sealed record
    answered = _run(root, env, "approvals", "answer", run_id, approval, "allow")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert not (root / "out.txt").exists()  # the resumed run still denies Write
    results = _tool_results(root, home)
    assert [kind for kind, _ in results] == ["ToolCallCompleted", "ToolCallCompleted", "ToolCallFailed"]
    assert "shared secret notes" in results[1][1]  # and still reaches --add-dir

    # a log edited to add a directory to a waiting run's record: refused, never executed
    other, approval = _wait(root, env)
    _add_dir_to_the_record(root, shared, other)
    refused = _run(root, env, "approvals", "answer", other, approval, "allow")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "not executed" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert len(_tool_results(root, home)) == 3  # nothing of the edited run ran

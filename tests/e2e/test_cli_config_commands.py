"""The config commands through the real `bearagent` executable: list/show, tools, plugins, doctor, init."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.config_ws import agent_file, skill_file, write

BEARAGENT = str(Path(sys.executable).parent / "bearagent")

CLAUDE_AGENT = """\
---
name: code-reviewer
description: Reviews code after changes. Use proactively.
tools: Read, Grep, Glob
model: inherit
---
You review code.
"""


def run(*args: str, cwd: Path, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "BEARAGENT_HOME": str(home / "bearagent"),
        "BEARAGENT_LOAD_PLUGINS": "",
        "NO_COLOR": "1",
    }
    environ.update(env or {})
    return subprocess.run(
        [BEARAGENT, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture()
def newcomer(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write(root, ".claude/agents/code-reviewer.md", CLAUDE_AGENT)
    write(root, ".claude/skills/pdf-tools/SKILL.md", skill_file("pdf-tools", "Extract text from PDF files."))
    write(root, ".bearagent/agents/build.md", agent_file("My own build agent.", mode="primary"))
    return root


def test_claude_agent_and_skill_are_listed_with_source_and_shadowing(newcomer: Path, tmp_path: Path) -> None:
    out = run("agents", "list", cwd=newcomer, home=tmp_path / "home")
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("code-reviewer"))
    assert "compat:.claude/agents" in line and ".claude/agents/code-reviewer.md" in line
    build = next(line for line in out.stdout.splitlines() if line.startswith("build"))
    assert "workspace" in build and "builtin" in build  # SHADOWS column
    data = json.loads(run("agents", "list", "--json", cwd=newcomer, home=tmp_path / "home").stdout)
    by_name = {a["name"]: a for a in data["agents"]}
    assert by_name["build"]["source"] == "workspace" and by_name["build"]["shadows"][0]["source"] == "builtin"
    assert by_name["explore"]["source"] == "builtin"
    skills = json.loads(run("skills", "list", "--json", cwd=newcomer, home=tmp_path / "home").stdout)
    pdf = next(s for s in skills["skills"] if s["name"] == "pdf-tools")
    assert pdf["source"] == "compat:.claude/skills" and skills["catalog"]["dropped_descriptions"] == []


def test_show_names_path_level_and_what_it_shadows(newcomer: Path, tmp_path: Path) -> None:
    out = run("agents", "show", "build", cwd=newcomer, home=tmp_path / "home")
    assert out.returncode == 0
    assert "workspace" in out.stdout and "builtin_agents/build.md" in out.stdout and "My own build agent." in out.stdout
    shown = json.loads(run("agents", "show", "code-reviewer", "--json", cwd=newcomer, home=tmp_path / "home").stdout)
    assert shown["tools"] == ["Read", "Grep", "Glob"] and shown["source"] == "compat:.claude/agents"


def test_discovery_from_a_subdirectory_and_workspace_flag(newcomer: Path, tmp_path: Path) -> None:
    sub = newcomer / "src" / "deep"
    sub.mkdir(parents=True)
    out = run("agents", "list", "--json", cwd=sub, home=tmp_path / "home")
    assert json.loads(out.stdout)["workspace"] == str(newcomer)
    out = run("agents", "list", "--json", "-w", str(newcomer), cwd=tmp_path, home=tmp_path / "home")
    assert json.loads(out.stdout)["workspace"] == str(newcomer)
    missing = run("agents", "list", "-w", str(tmp_path / "nope"), cwd=tmp_path, home=tmp_path / "home")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_unknown_name_exits_2_with_what_and_fix(newcomer: Path, tmp_path: Path) -> None:
    out = run("agents", "show", "code-reviwer", cwd=newcomer, home=tmp_path / "home")
    assert out.returncode == 2
    assert "error: no agent named 'code-reviwer' (did you mean 'code-reviewer'?)" in out.stderr and "fix:" in out.stderr
    out = run("models", "show", "gtp", cwd=newcomer, home=tmp_path / "home")
    assert out.returncode == 2 and "unknown model 'gtp'" in out.stderr


def test_duplicate_in_one_source_shows_both_paths(newcomer: Path, tmp_path: Path) -> None:
    write(newcomer, ".bearagent/agents/one.md", agent_file(name="twin"))
    write(newcomer, ".bearagent/agents/two.md", agent_file(name="twin"))
    listing = run("agents", "list", cwd=newcomer, home=tmp_path / "home")
    row = next(line for line in listing.stdout.splitlines() if line.startswith("twin"))
    assert "ERROR" in row and "one.md" in row and "two.md" in row
    show = run("agents", "show", "twin", cwd=newcomer, home=tmp_path / "home")
    assert show.returncode == 2 and "one.md" in show.stderr and "two.md" in show.stderr
    doctor = run("doctor", cwd=newcomer, home=tmp_path / "home")
    assert doctor.returncode == 2 and "defined 2 times in workspace" in doctor.stdout


def test_doctor_prints_every_diagnostic_and_exit_codes(newcomer: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(
        newcomer,
        ".bearagent/config.yaml",
        "defualt_agent: build\nhooks:\n  PreTooluse:\n    - hooks: [{command: ./missing.sh}]\n",
    )
    out = run("doctor", cwd=newcomer, home=home)
    assert out.returncode == 2
    assert (
        "config.yaml:1: warning: unknown key 'defualt_agent'" in out.stdout
        and "did you mean 'default_agent'" in out.stdout
    )
    assert "did you mean 'PreToolUse'" in out.stdout
    assert "shadows the one from builtin" in out.stdout  # info: build shadows builtin
    data = json.loads(run("doctor", "--json", cwd=newcomer, home=home).stdout)
    assert data["errors"] >= 1 and any(d["code"] == "hooks.unknown_event" for d in data["diagnostics"])
    write(newcomer, ".bearagent/config.yaml", "default_agent: build\n")
    no_model = run("doctor", "--json", cwd=newcomer, home=home)
    codes = [d["code"] for d in json.loads(no_model.stdout)["diagnostics"] if d["severity"] == "error"]
    assert no_model.returncode == 2 and codes == ["config.no_model"]
    write(newcomer, ".bearagent/config.yaml", "default_agent: build\nmodels:\n  m: {provider: openai, model: x}\n")
    unset = run("doctor", "-q", cwd=newcomer, home=home)  # what `run` would refuse, doctor reports (issue 32)
    assert unset.returncode == 2 and "the environment variable OPENAI_API_KEY is not set" in unset.stdout
    ok = run("doctor", "-q", cwd=newcomer, home=home, env={"OPENAI_API_KEY": "sk-test"})
    assert ok.returncode == 0 and "0 error(s)" in ok.stdout and "shadows" not in ok.stdout


def test_init_scaffolds_a_working_workspace_and_refuses_to_overwrite(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    home = tmp_path / "home"
    out = run("init", cwd=root, home=home)
    assert out.returncode == 0, out.stderr
    assert (root / ".bearagent/config.yaml").is_file() and (root / ".bearagent/agents/helper.md").is_file()
    assert "state.db" in (root / ".bearagent/.gitignore").read_text()
    doctor = run("doctor", "-q", cwd=root, home=home)
    assert doctor.returncode == 0, doctor.stdout
    tools = json.loads(run("tools", "list", "--json", cwd=root, home=home).stdout)
    assert tools["agent"] == "helper" and tools["model"] == "workspace/demo"
    assert [t["name"] for t in tools["tools"]][:3] == ["Read", "Glob", "Grep"]
    # it can edit, as Claude Code's default agent can (issue 32: a read-only one broke commands that need Bash)
    assert {"Edit", "Write", "Bash", "Skill", "Task"} <= {t["name"] for t in tools["tools"]}
    assert not tools["diagnostics"], tools["diagnostics"]
    models = json.loads(run("models", "list", "--json", cwd=root, home=home).stdout)
    assert models["default_model"] == "workspace/demo"
    actions = json.loads(run("actions", "list", "--json", cwd=root, home=home).stdout)
    assert actions["actions"][0]["name"] == "summarize" and actions["actions"][0]["agent"] == "helper"
    again = run("init", cwd=root, home=home)
    assert (
        again.returncode == 2
        and "already exists; init never overwrites files" in again.stderr
        and "fix:" in again.stderr
    )


def test_tools_list_for_an_agent(newcomer: Path, tmp_path: Path) -> None:
    write(newcomer, ".bearagent/config.yaml", "models:\n  m: {provider: openai, model: x}\ndefault_model: m\n")
    out = run("tools", "list", "--agent", "explore", cwd=newcomer, home=tmp_path / "home")
    assert out.returncode == 0, out.stderr
    rows = [line.split()[0] for line in out.stdout.splitlines()[3:] if line.strip()]
    assert rows[:3] == ["Read", "Glob", "Grep"] and "Write" not in out.stdout and "Skill" not in rows
    allreg = run("tools", "list", "--all", cwd=newcomer, home=tmp_path / "home")
    assert "Bash" in allreg.stdout and "native" in allreg.stdout
    bad = run("tools", "list", "--agent", "nobody", cwd=newcomer, home=tmp_path / "home")
    assert bad.returncode == 2 and "no agent named 'nobody'" in bad.stderr


def test_models_show_never_prints_literal_header_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "models:\n  m: {provider: openai, model: x, headers: {X-Key: literal-secret-123, X-Ref: '${REF}'}}\n",
    )
    out = run("models", "show", "m", "--json", cwd=tmp_path, home=tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert "literal-secret-123" not in out.stdout
    assert json.loads(out.stdout)["headers"] == {"X-Key": "***", "X-Ref": "${REF}"}


def test_plugins_list_without_plugins(tmp_path: Path) -> None:
    out = run("plugins", "list", cwd=tmp_path, home=tmp_path / "home")
    assert out.returncode == 0 and "no plugins" in out.stdout
    data = json.loads(run("plugins", "list", "--json", cwd=tmp_path, home=tmp_path / "home").stdout)
    assert data["plugins"] == [] and data["filter"] == ""


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_do_not_import_sdks_or_pydantic_heavy_modules(flag: str) -> None:
    code = (
        "import sys\n"
        "from bearagent.cli.main import main\n"
        "try:\n"
        f"    main([{flag!r}], standalone_mode=False)\n"
        "finally:\n"
        "    heavy = sorted(m for m in ('openai', 'anthropic', 'mcp', 'httpx', 'bearagent.workspace', 'bearagent.tools') if m in sys.modules)\n"
        "    print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "HEAVY=\n" in out.stdout or out.stdout.rstrip().endswith("HEAVY=")


def test_agents_list_does_not_import_sdks(newcomer: Path) -> None:
    code = (
        "import sys\n"
        "from bearagent.cli.main import main\n"
        "try:\n"
        "    main(['agents', 'list'], standalone_mode=False)\n"
        "finally:\n"
        "    print('HEAVY=' + ','.join(sorted(m for m in ('openai', 'anthropic', 'mcp') if m in sys.modules)))\n"
    )
    env = {**os.environ, "BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(newcomer / "h")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=newcomer, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("HEAVY=")

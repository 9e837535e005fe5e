"""The example plugins, pip-installed into a fresh virtual environment, seen through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.support.built_once import built_once

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow]


def _sh(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=600, check=False, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository and the example plugins installed into a new venv, once per run (`built_once`: the tests
    only run its `bearagent`), not once per worker."""
    return built_once(tmp_path_factory, "plugins-venv", _build_venv) / "venv"


def _build_venv(base: Path) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is required to install the example plugins"
    broken = base / "bearagent-broken"
    (broken / "src" / "bearagent_broken").mkdir(parents=True)
    (broken / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "bearagent-broken"
            version = "0.0.1"
            [project.entry-points.bearagent]
            broken = "bearagent_broken"
            [build-system]
            requires = ["hatchling"]
            build-backend = "hatchling.build"
            [tool.hatch.build.targets.wheel]
            packages = ["src/bearagent_broken"]
            """
        )
    )
    (broken / "src" / "bearagent_broken" / "__init__.py").write_text("import this_module_does_not_exist_anywhere\n")
    venv_dir = base / "venv"
    created = _sh(uv, "venv", "--python", sys.executable, str(venv_dir))
    assert created.returncode == 0, created.stderr
    python = venv_dir / "bin" / "python"
    env = {**os.environ, "UV_LINK_MODE": "copy"}
    env.pop("VIRTUAL_ENV", None)
    installed = _sh(
        uv,
        "pip",
        "install",
        "--python",
        str(python),
        str(REPO),
        str(REPO / "plugins/bearagent-guard"),
        str(REPO / "plugins/bearagent-reviewers"),
        str(broken),
        env=env,
    )
    assert installed.returncode == 0, installed.stderr[-4000:]


def _cli(venv: Path, tmp_path: Path, *args: str, load: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BEARAGENT_HOME": str(tmp_path / "user"),
        "NO_COLOR": "1",
    }
    if load is not None:
        env["BEARAGENT_LOAD_PLUGINS"] = load
    return _sh(str(venv / "bin" / "bearagent"), *args, env=env, cwd=tmp_path)


def test_plugins_list_shows_versions_contributions_and_the_broken_plugin(venv: Path, tmp_path: Path) -> None:
    out = _cli(venv, tmp_path, "plugins", "list", "--json")
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)["plugins"]}
    assert plugins["guard"]["version"] == "0.2.0" and plugins["guard"]["status"] == "loaded"
    assert plugins["guard"]["registered"]["tools"] == ["FileHash"]
    assert plugins["guard"]["registered"]["hook_handlers"] == ["PreToolUse:destructive-shell-guard"]
    assert plugins["reviewers"]["version"] == "0.3.0" and len(plugins["reviewers"]["registered"]["agent_dirs"]) == 1
    assert (
        plugins["broken"]["status"] == "failed" and "this_module_does_not_exist_anywhere" in plugins["broken"]["error"]
    )
    table = _cli(venv, tmp_path, "plugins", "list")
    assert "plugin 'broken' failed to import" in table.stdout and "guard" in table.stdout and "0.2.0" in table.stdout


def test_plugin_agents_skills_and_tools_appear_in_the_cli(venv: Path, tmp_path: Path) -> None:
    agents = json.loads(_cli(venv, tmp_path, "agents", "list", "--json").stdout)
    by_name = {a["name"]: a for a in agents["agents"]}
    assert (
        by_name["security-reviewer"]["source"] == "plugin:reviewers"
        and by_name["security-reviewer"]["level"] == "platform"
    )
    assert by_name["build"]["source"] == "builtin"  # packaged built-ins found inside the installed wheel
    assert "bearagent/_builtin/agents" in by_name["build"]["path"]
    skills = json.loads(_cli(venv, tmp_path, "skills", "list", "--json").stdout)
    changelog = next(s for s in skills["skills"] if s["name"] == "changelog")
    assert changelog["source"] == "plugin:reviewers" and changelog["files"] == ["template.md"]
    tools = json.loads(_cli(venv, tmp_path, "tools", "list", "--all", "--json").stdout)
    assert {"name": "FileHash", "origin": "plugin:guard"}.items() <= next(
        t for t in tools["tools"] if t["name"] == "FileHash"
    ).items()
    projection = json.loads(_cli(venv, tmp_path, "tools", "list", "--agent", "build", "--json").stdout)
    assert any(t["name"] == "FileHash" and t["source"] == "plugin" for t in projection["tools"])


def test_workspace_file_shadows_a_plugin_agent(venv: Path, tmp_path: Path) -> None:
    agent = tmp_path / ".bearagent" / "agents" / "security-reviewer.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\ndescription: Mine.\n---\nbody\n")
    shown = json.loads(_cli(venv, tmp_path, "agents", "show", "security-reviewer", "--json").stdout)
    assert shown["source"] == "workspace" and shown["shadows"][0]["source"] == "plugin:reviewers"


def test_load_filter_narrows_and_empty_disables(venv: Path, tmp_path: Path) -> None:
    only = json.loads(_cli(venv, tmp_path, "plugins", "list", "--json", load="reviewers").stdout)
    assert [p["name"] for p in only["plugins"]] == ["reviewers"]
    by_dist = json.loads(_cli(venv, tmp_path, "plugins", "list", "--json", load="bearagent-guard").stdout)
    assert [p["name"] for p in by_dist["plugins"]] == ["guard"]
    none = _cli(venv, tmp_path, "agents", "list", "--json", load="")
    assert "security-reviewer" not in {a["name"] for a in json.loads(none.stdout)["agents"]}
    doctor = _cli(venv, tmp_path, "doctor", "--json", load="reviewers,guard")
    assert all(d["code"] != "plugin.import_failed" for d in json.loads(doctor.stdout)["diagnostics"])


def test_guard_hook_handler_and_tool_work_in_the_installed_environment(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("abc")
    code = textwrap.dedent(
        f"""\
        import asyncio, json
        from pathlib import Path
        from bearagent.workspace import load_workspace
        from bearagent.ports import ToolContext
        ws = load_workspace(Path({str(tmp_path)!r}))
        handler = ws.hooks.python_handlers("PreToolUse")[0]
        deny = handler.callback({{"tool_name": "Bash", "tool_input": {{"command": "rm -rf /"}}}})
        allow = handler.callback({{"tool_name": "Bash", "tool_input": {{"command": "ls -la"}}}})
        tool = ws.tools.get("FileHash")
        ctx = ToolContext(workspace_root=Path({str(tmp_path)!r}))
        result = asyncio.run(tool.execute(tool.prepare({{"file_path": "f.txt"}}, ctx), ctx))
        escape = asyncio.run(tool.execute(tool.prepare({{"file_path": "../etc/passwd"}}, ctx), ctx))
        print(json.dumps({{"deny": deny, "allow": allow, "plugin": handler.plugin, "on_failure": handler.on_failure,
                          "hash": result.content, "escape": escape.status}}))
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BEARAGENT_HOME": str(tmp_path / "user"),
        "BEARAGENT_LOAD_PLUGINS": "guard",
    }
    out = _sh(str(venv / "bin" / "python"), "-c", code, env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["deny"]["hookSpecificOutput"]["permissionDecision"] == "deny" and data["allow"] is None
    assert data["plugin"] == "guard" and data["on_failure"] == "block"
    assert data["hash"].startswith("sha256 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert data["escape"] == "failed"

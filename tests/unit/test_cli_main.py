"""The command table of `bearagent`: every entry resolves, --help imports none of the command modules, and a
scripted `bearagent run` imports none of what only other runs need."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from bearagent.cli import main
from bearagent.cli.main import LAZY_COMMANDS


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_every_lazy_command_resolves_to_a_click_command_of_that_name(name: str) -> None:
    ctx = click.Context(main)
    command = main.get_command(ctx, name)
    assert isinstance(command, click.Command)
    assert command.name == name


def test_help_lists_every_command_without_importing_them() -> None:
    # the group's own run flags are declared in `_choice_flags` (click only): the one other cli module loaded
    code = (
        "import sys\n"
        "from bearagent.cli import main\n"
        "try:\n    main(['--help'], prog_name='bearagent')\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('bearagent.cli.') and m not in "
        "('bearagent.cli.main', 'bearagent.cli._choice_flags'))\n"
        "heavy = sorted(m for m in ('openai', 'anthropic', 'mcp', 'httpx', 'pydantic') if m in sys.modules)\n"
        "print('LOADED', loaded)\nprint('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    for name in LAZY_COMMANDS:
        assert f"  {name} " in out
    assert "LOADED []" in out
    assert "HEAVY []" in out


REPO = Path(__file__).resolve().parents[2]

# Imported by something a scripted run without hooks, MCP servers or web tools never does (docs/benchmarks.md,
# issue 22): the SDKs, httpx (WebFetch, the HTTP providers), jsonschema (a schema outside the fast subset), Grep's
# regex engine, path-rule matching, rich's Markdown and live regions (the interactive session), the hook handler
# machinery, the MCP connection manager, the shell launcher (Bash), the PostgreSQL store; and (issue 37) the models
# of run event versions only old logs hold, the web search services (none configured), hook replies' models.
LAZY_ON_A_SCRIPTED_RUN = (
    "openai",
    "anthropic",
    "mcp",
    "httpx",
    "jsonschema",
    "regex",
    "pathspec",
    "rich.markdown",
    "rich.live",
    "bearagent.cli.live_markdown",
    "bearagent.hooks.hook_input",
    "bearagent.hooks.runners",
    "bearagent.hooks.interceptor",
    "bearagent.hooks.matching",
    "bearagent.mcp.manager",
    "bearagent.sandbox.launch",
    "bearagent.store.postgres.storage",
    "bearagent.providers.openai_responses",
    "bearagent.providers.anthropic_messages",
    "bearagent.domain.run_events_legacy",
    "bearagent.tools.search_backends",
    "bearagent.hooks.reply_models",
)


def test_a_scripted_run_imports_none_of_what_only_other_runs_need(tmp_path: Path) -> None:
    workspace = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", workspace, ignore=shutil.ignore_patterns("state.db*", "outputs"))
    code = (
        "import sys\n"
        "from bearagent.cli import main\n"
        "prompt = 'Read docs/project.md and write a summary to outputs/intro.md'\n"
        "try:\n    main(['run', '-w', sys.argv[1], prompt], prog_name='bearagent')\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "print('EXIT', code, file=sys.stderr)\n"
        f"print('LOADED', sorted(m for m in {LAZY_ON_A_SCRIPTED_RUN!r} if m in sys.modules), file=sys.stderr)\n"
    )
    env = {**os.environ, "BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert "EXIT 0" in done.stderr, done.stderr
    assert "● Write(outputs/intro.md)" in done.stdout
    assert (workspace / "outputs" / "intro.md").is_file()
    assert "LOADED []" in done.stderr, done.stderr


RUNTIME_ONLY = ("bearagent.app.resources", "bearagent.runtime.loop", "bearagent.tools.gate")
"""What only a command that runs an agent needs: the read commands open the store through `app/stores.py`."""


def test_reading_the_log_imports_no_agent_loop(tmp_path: Path) -> None:
    workspace = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", workspace, ignore=shutil.ignore_patterns("state.db*", "outputs"))
    env = {**os.environ, "BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    prompt = "Read docs/project.md and write a summary to outputs/intro.md"
    ran = subprocess.run(
        [sys.executable, "-m", "bearagent", "run", "-w", str(workspace), prompt],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    code = (
        "import sys\n"
        "from bearagent.cli import main\n"
        "try:\n    main(['runs', 'list', '-w', sys.argv[1]], prog_name='bearagent')\n"
        "except SystemExit as exc:\n    print('EXIT', exc.code, file=sys.stderr)\n"
        f"print('LOADED', sorted(m for m in {RUNTIME_ONLY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert "EXIT 0" in done.stderr, done.stderr
    assert "succeeded" in done.stdout  # the listing shows the run
    assert "LOADED []" in done.stderr, done.stderr


def test_version_is_answered_before_click_is_imported() -> None:
    """The console script's fast path (issue 37): `bearagent --version` loads the version leaf and nothing else."""
    code = (
        "import sys\n"
        "sys.argv = ['bearagent', sys.argv[1]]\n"
        "from bearagent.cli import entry\n"
        "entry()\n"
        "print('LOADED', sorted(m for m in sys.modules if m == 'click' or m.startswith(('bearagent.cli.', 'pydantic'))))\n"
    )
    for flag in ("--version", "-V"):
        out = subprocess.run(
            [sys.executable, "-c", code, flag], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        assert out.splitlines() == ["bearagent, version " + __import__("bearagent").__version__, "LOADED []"]


def test_the_fast_version_line_is_the_one_click_prints() -> None:
    from click.testing import CliRunner

    from bearagent import __version__

    result = CliRunner().invoke(main, ["--version"], prog_name="bearagent")
    assert result.exit_code == 0
    assert result.output == f"bearagent, version {__version__}\n"


def test_the_console_script_is_the_fast_entry() -> None:
    script = Path(sys.executable).parent / "bearagent"
    assert "from bearagent.cli import entry" in script.read_text(encoding="utf-8")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.startswith("bearagent, version ")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True, timeout=60)
    assert "Commands:" in done.stdout


def _passes_in_a_fresh_process(code: str) -> None:
    """Run `code` in a new interpreter (the collector's state is per process) and check it got to its end."""
    done = subprocess.run(
        [sys.executable, "-c", code + "print('OK')\n"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "OK", done.stderr


def test_imports_run_without_collection_and_what_they_built_is_frozen() -> None:
    """`cli.startup.importing` (issue 37): the collector is off while a command imports, what was imported is frozen
    once per stage, and the collector comes back on only if it was on (a process that turned it off keeps it off)."""
    code = (
        "import gc\n"
        "from bearagent.cli.startup import importing\n"
        "before = gc.get_freeze_count()\n"
        "with importing('run_imports'):\n"
        "    assert not gc.isenabled()\n"
        "    import decimal\n"
        "assert gc.isenabled()\n"
        "frozen = gc.get_freeze_count()\n"
        "assert frozen > before, (before, frozen)\n"
        "with importing('run_imports'):\n"
        "    kept = [[] for _ in range(1000)]\n"
        "assert gc.get_freeze_count() == frozen  # a stage freezes once per process\n"
        "gc.disable()\n"
        "try:\n"
        "    with importing('command'):\n"
        "        raise KeyError('x')\n"
        "except KeyError:\n"
        "    pass\n"
        "assert not gc.isenabled()\n"
    )
    _passes_in_a_fresh_process(code)


def test_a_long_lived_process_freezes_its_start_up_and_collects_in_full_less_often() -> None:
    """`cli.startup.long_lived` (`serve`, `worker`): what start-up built is frozen, and a full collection comes after
    `FULL_COLLECTION_AFTER` collections of the middle generation instead of Python's 10 (the young thresholds kept);
    a middle collection is still triggered by the young one as before, and the full one still runs when its turn
    comes."""
    code = (
        "import gc\n"
        "from bearagent.cli.startup import FULL_COLLECTION_AFTER, long_lived\n"
        "gc.set_threshold(50, 10, 10)  # a small young generation: the test's loop stays short\n"
        "before = gc.get_freeze_count()\n"
        "long_lived()\n"
        "assert gc.get_freeze_count() > before\n"
        "assert gc.get_threshold() == (50, 10, FULL_COLLECTION_AFTER), gc.get_threshold()\n"
        "assert FULL_COLLECTION_AFTER > 10\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append(info['generation']) if phase == 'stop' else None)\n"
        "class Cycle:\n"
        "    def __init__(self):\n"
        "        self.me = self\n"
        "kept = []\n"
        "while seen.count(1) < 2 * FULL_COLLECTION_AFTER + 5 and len(kept) < 10_000_000:\n"
        "    kept.append(Cycle())\n"
        "full_ones, middle_ones = seen.count(2), seen.count(1)\n"
        "assert 1 <= full_ones <= 2, (full_ones, middle_ones)  # at Python's 10: ~18\n"
    )
    _passes_in_a_fresh_process(code)

"""CLI cold start and config loading at scale.

    uv run python benchmarks/bench_cli.py [--runs N] [--parts startup,scale,bytecode,run] [--tree LABEL=SRC ...]

1. `startup`: `bearagent --help` / `--version` cold start, against `python -c pass` measured in the same run (the
   floor). Target: <= 150 ms.
2. `scale`: `bearagent agents list` on generated workspaces of 250/500/1,000 agent files + 75/150/300 skills, to show
   the cost is linear in the number of files. Target: <= 1 s at 1,000 agents + 300 skills.
3. `bytecode`: start-up where bytecode caches cannot be written (`PYTHONDONTWRITEBYTECODE=1`). From a clone of this
   checkout's HEAD (so uncommitted edits do not count) it builds three environments: a non-editable install without
   bytecode (uv's default, and `uv tool install` without `--compile-bytecode`), the same with `--compile-bytecode`
   (what `uv tool install --compile-bytecode` and `pip install` give), and the clone's own `uv sync` (editable, with
   the project's `[tool.uv] compile-bytecode`). In each it times `bearagent --version` and a scripted `bearagent run`
   in a copy of examples/quickstart, with and without `PYTHONDONTWRITEBYTECODE=1`, and counts the modules a run
   compiles from source because no bytecode is cached. Needs `uv` and the package index (or uv's cache).
4. `run`: a whole scripted `bearagent run` as a process (README's quickstart command, in a fresh copy of
   examples/quickstart each time, offline, the scripted model) and `bearagent --version`, beside `python -c pass`,
   in alternating rounds (each round runs every command once, in turn), with wall and CPU time (user + system of
   the child) and the number of modules a run imports. Targets: run <= 250 ms, `--version` <= 60 ms. `--tree
   LABEL=SRC` (repeatable) adds the same two commands with the package from the `src/` directory SRC put first on
   PYTHONPATH, so it shadows the installed one (before/after in one run; e.g. `mkdir /tmp/before && git archive
   REV src examples | tar -x -C /tmp/before`, then `--tree before=/tmp/before/src`); each tree's bytecode is
   compiled first, so no tree pays for compiling.
Each figure is the median of N runs of a fresh process (plugins off, isolated user dir).
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
REPO = Path(__file__).resolve().parents[1]
QUICKSTART_PROMPT = "Read docs/project.md and write a summary to outputs/intro.md"


def timed(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples)


def make_workspace(root: Path, agents: int, skills: int) -> None:
    agent_dir = root / ".bearagent" / "agents"
    agent_dir.mkdir(parents=True)
    for i in range(agents):
        (agent_dir / f"agent-{i:04d}.md").write_text(
            f"---\ndescription: Generated agent number {i}, for the benchmark.\nmode: subagent\ntools: Read, Grep, Glob\n"
            f"model: inherit\n---\nYou are generated agent {i}. Answer briefly.\n"
        )
    for i in range(skills):
        skill_dir = root / ".claude" / "skills" / f"skill-{i:04d}"
        skill_dir.mkdir(parents=True)
        (skill_dir / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Generated skill {i}.\n---\nStep one.\n"
        )
        (skill_dir / "reference.md").write_text("reference\n")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# Run `bearagent` in-process and report, at exit, how many of the modules imported from .py files had no cached
# bytecode to load (so they were compiled from source in this process). Frozen modules have no `__cached__`.
_COUNT_MODULES = """
import atexit, os, sys
def _count():
    mods = {id(m): m for m in list(sys.modules.values()) if getattr(m, "__cached__", None)}.values()
    fresh = [m for m in mods if not os.path.exists(m.__cached__)]
    sys.stderr.write(f"\\nMODULES {len(mods)} {len(fresh)}\\n")
atexit.register(_count)
sys.argv[0] = "bearagent"
try:
    from bearagent.cli import entry
except ImportError:  # a tree from before the console script's fast entry
    from bearagent.cli import main as entry
entry()
"""

# The console script of a tree (`--tree`), which may predate `bearagent.cli:entry` (the installed script imports it).
_TREE_SCRIPT = """
import sys
sys.argv[0] = "bearagent"
try:
    from bearagent.cli import entry
except ImportError:
    from bearagent.cli import main as entry
entry()
"""


def count_modules(python: Path, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, int]:
    done = subprocess.run([str(python), "-c", _COUNT_MODULES, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bearagent {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("MODULES "))
    _, total, fresh = line.split()
    return int(total), int(fresh)


def samples_ms(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> list[float]:
    out: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((time.perf_counter() - start) * 1000)
    return out


def uv_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    env["UV_NO_PROGRESS"] = "1"
    env.pop("UV_COMPILE_BYTECODE", None)
    return env


def build_environments(uv: str, base: Path, repo: Path, rev: str) -> tuple[str, list[tuple[str, Path]]]:
    """Clone `repo` at `rev` and build the three environments; returns (commit, [(label, bin dir)])."""
    quiet = uv_env()
    clone = base / "clone"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", rev], cwd=clone, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True, capture_output=True, text=True
    ).stdout.strip()
    reqs = base / "requirements.txt"
    subprocess.run(
        [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "-q", "-o", str(reqs)],
        cwd=clone,
        env=quiet,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    envs: list[tuple[str, Path]] = []
    for label, name, flags in (
        ("install, no bytecode", "plain", []),
        ("install --compile-bytecode", "compiled", ["--compile-bytecode"]),
    ):
        venv = base / name
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], cwd=base, env=quiet, check=True)
        subprocess.run(
            [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *flags, "-r", str(reqs), str(clone)],
            cwd=base,  # no pyproject here: only the flags decide
            env=quiet,
            check=True,
        )
        envs.append((label, venv / "bin"))
    subprocess.run([uv, "sync", "--locked", "-q"], cwd=clone, env=quiet, check=True)
    envs.append(("clone + uv sync (editable)", clone / ".venv" / "bin"))
    return commit, envs


def bytecode_part(runs: int, base: Path, env: dict[str, str], repo: Path, rev: str) -> None:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        print("\n(bytecode part skipped: uv not found)")
        return
    print("\n## start-up without writable bytecode caches\n")
    commit, envs = build_environments(uv, base / "envs", repo, rev)
    print(f"source: a clone at {commit}; {runs} fresh processes per cell, ms")
    floor = samples_ms([sys.executable, "-c", "pass"], runs, base, env)
    floor_dw = samples_ms([sys.executable, "-c", "pass"], runs, base, {**env, "PYTHONDONTWRITEBYTECODE": "1"})
    print(
        f"floor `python -c pass`: {statistics.median(floor):.0f} ms, "
        f"with PYTHONDONTWRITEBYTECODE=1 {statistics.median(floor_dw):.0f} ms\n"
    )
    print(
        "| environment | command | PYTHONDONTWRITEBYTECODE=1: median (min) | unset: median (min), first run | "
        "modules imported | compiled from source at each start with =1 |"
    )
    print("|---|---|---|---|---|---|")
    for label, bindir in envs:
        workspace = base / f"ws-{bindir.parent.name}-{len(label)}"
        shutil.copytree(base / "envs" / "clone" / "examples" / "quickstart", workspace)
        for cmd_label, args in (
            ("`bearagent --version`", ["--version"]),
            ("scripted `bearagent run`", ["run", "-w", str(workspace), QUICKSTART_PROMPT]),
        ):
            no_write = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
            # first, while nothing has written bytecode for this environment's own files
            total, fresh = count_modules(bindir / "python", args, base, no_write)
            cmd = [str(bindir / "bearagent"), *args]
            dw = samples_ms(cmd, runs, base, no_write)
            writable = samples_ms(cmd, runs, base, env)
            print(
                f"| {label} | {cmd_label} | {statistics.median(dw):.0f} ({min(dw):.0f}) | "
                f"{statistics.median(writable):.0f} ({min(writable):.0f}), {writable[0]:.0f} | {total} | {fresh} |"
            )
    # what the setting costs: `uv run` re-checks the bytecode of the whole environment on every call
    clone = base / "envs" / "clone"
    overhead = {
        flag: statistics.median(samples_ms([uv, "run", *extra, "true"], runs, clone, uv_env()))
        for flag, extra in (("compile", []), ("no-compile", ["--no-compile-bytecode"]))
    }
    print(
        f"\n`uv run true` in the clone: {overhead['compile']:.0f} ms with the project's compile-bytecode, "
        f"{overhead['no-compile']:.0f} ms with --no-compile-bytecode"
    )


@dataclass
class Cell:
    """One command of the run part, sampled once per round: `args` after the program, and whether it runs in a fresh
    copy of the quickstart workspace (`-w` is added after the subcommand)."""

    label: str
    program: str
    args: list[str]
    env: dict[str, str]
    quickstart: bool = False
    pre: list[str] = field(default_factory=list[str])
    """Arguments of the program before the command's (the interpreter's `-c SCRIPT` for a `--tree`)."""
    wall: list[float] = field(default_factory=list[float])
    cpu: list[float] = field(default_factory=list[float])

    def argv(self, base: Path, tag: str) -> list[str]:
        if not self.quickstart:
            return list(self.args)
        workspace = base / f"qs-{tag}"
        ignore = shutil.ignore_patterns("state.db*", "outputs")  # what an earlier README run left in the checkout
        shutil.copytree(REPO / "examples" / "quickstart", workspace, ignore=ignore)
        return [self.args[0], "-w", str(workspace), *self.args[1:]]

    def sample(self, base: Path, tag: str) -> None:
        argv = [self.program, *self.pre, *self.argv(base, tag)]
        with tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(argv, cwd=base, env=self.env, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = (time.perf_counter() - start) * 1000
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"{self.label} failed (exit {proc.returncode}):\n{err.read().decode()[-3000:]}")
        self.wall.append(wall)
        self.cpu.append((usage.ru_utime + usage.ru_stime) * 1000)

    def modules(self, base: Path) -> int:
        """How many modules the command has imported when it exits (`sys.modules`)."""
        code = (
            "import atexit, sys\n"
            "atexit.register(lambda: sys.stderr.write(f'\\nMODULES {len(sys.modules)}\\n'))\n"
            "sys.argv[0] = 'bearagent'\n"
        ) + _TREE_SCRIPT  # the console script's path: `entry`, which answers `--version` before click loads
        done = subprocess.run(
            [sys.executable, "-c", code, *self.argv(base, f"count-{id(self)}")],
            cwd=base,
            env=self.env,
            capture_output=True,
            text=True,
        )
        line = next((ln for ln in done.stderr.splitlines() if ln.startswith("MODULES ")), None)
        if line is None:
            raise SystemExit(f"{self.label}: no module count (exit {done.returncode}):\n{done.stderr[-3000:]}")
        return int(line.split()[1])


def run_part(runs: int, base: Path, env: dict[str, str], trees: list[tuple[str, Path]]) -> None:
    print("\n## a scripted `bearagent run` (the quickstart) and `bearagent --version` as whole processes\n")
    floor = Cell("python -c pass (floor)", sys.executable, ["-c", "pass"], env)
    cells = [floor]
    for label, src in [("installed", None), *trees]:
        tree_env = dict(env)
        if src is not None:
            compileall.compile_dir(str(src), quiet=1)
            tree_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
        program, pre = (BEARAGENT, []) if src is None else (sys.executable, ["-c", _TREE_SCRIPT])
        cells.append(Cell(f"{label}: bearagent --version", program, ["--version"], tree_env, pre=pre))
        run = Cell(
            f"{label}: scripted bearagent run", program, ["run", QUICKSTART_PROMPT], tree_env, quickstart=True, pre=pre
        )
        cells.append(run)
    for i, cell in enumerate(cells):  # warm-up: the page cache, and any bytecode a first start writes
        cell.sample(base, f"warm-{i}")
        cell.wall.clear()
        cell.cpu.clear()
    for round_no in range(runs):
        for i, cell in enumerate(cells):
            cell.sample(base, f"{round_no}-{i}")
    print(f"{runs} alternating rounds, ms; load average now {os.getloadavg()[0]:.1f}\n")
    print("| command | wall median | wall min | CPU median | CPU min | modules |\n|---|---|---|---|---|---|")
    for cell in cells:
        modules = "" if cell is floor else str(cell.modules(base))
        print(
            f"| `{cell.label}` | {statistics.median(cell.wall):.0f} | {min(cell.wall):.0f} | "
            f"{statistics.median(cell.cpu):.0f} | {min(cell.cpu):.0f} | {modules} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--parts", default="startup,scale,bytecode", help="comma-separated: startup,scale,bytecode,run")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="LABEL=SRC",
        help="for the run part: also time the package in this src/ directory (first on PYTHONPATH)",
    )
    parser.add_argument("--repo", default=str(REPO), help="the git repository the bytecode part clones")
    parser.add_argument("--rev", default="HEAD", help="the commit the bytecode part builds its environments from")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = {**os.environ, "BEARAGENT_LOAD_PLUGINS": "", "BEARAGENT_HOME": str(base / "home"), "NO_COLOR": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        print(
            f"machine: {platform.machine()} {os.cpu_count()} cpus ({cpu_model()}), Python "
            f"{platform.python_version()}, {platform.system()}; {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
            f"UTC, load average {os.getloadavg()[0]:.1f}"
        )
        print(f"runs per figure: {args.runs} (median / min, ms)\n")
        if "startup" in parts:
            print("| command | median ms | min ms |\n|---|---|---|")
            for label, cmd in (
                ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
                ("bearagent --version", [BEARAGENT, "--version"]),
                ("bearagent --help", [BEARAGENT, "--help"]),
            ):
                median, low = timed(cmd, args.runs, base, env)
                print(f"| `{label}` | {median:.0f} | {low:.0f} |")
        if "scale" in parts:
            print("\n| workspace | agents list median ms | min ms | ms per file |\n|---|---|---|---|")
            for agents, skills in ((250, 75), (500, 150), (1000, 300)):
                root = base / f"ws-{agents}"
                make_workspace(root, agents, skills)
                median, low = timed([BEARAGENT, "agents", "list"], args.runs, root, env)
                print(
                    f"| {agents} agents + {skills} skills | {median:.0f} | {low:.0f} | "
                    f"{median / (agents + skills):.2f} |"
                )
        if "bytecode" in parts:
            bytecode_part(args.runs, base, env, Path(args.repo), args.rev)
        if "run" in parts:
            trees = [(label, Path(src).resolve()) for label, _, src in (t.partition("=") for t in args.tree)]
            run_part(args.runs, base, env, trees)


if __name__ == "__main__":
    main()

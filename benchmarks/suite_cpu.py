"""Where the test suite's CPU goes: the suite run as CI runs it, every Python process's own CPU time by command.

    uv run python benchmarks/suite_cpu.py [--rev REV] [--keep] [-- PYTEST ARGS]

Clones this checkout's HEAD (or REV) into a new directory under /tmp whose name has a space and a non-ASCII letter
(as `.ci/run` does), runs `uv sync --locked` there, and puts a `sitecustomize.py` into that clone's own virtual
environment (never this checkout's): at exit, every Python process started from it appends its pid, its own CPU
time (user + system, not its children's: each process counts once) and its command line to a log. Then it runs
`uv run pytest` in the clone with PYTHONDONTWRITEBYTECODE=1 and prints the wall time, the suite's CPU (every process
it waited for) and the logged CPU grouped by command (`bearagent run`, `bearagent runs`, the xdist workers, MCP test
servers...).

Not in the log: processes ended by SIGKILL or `os._exit`, sandboxed processes (their /tmp is private), and what is
not this environment's Python (node, PostgreSQL, chromium, bwrap). The clone is removed unless `--keep`.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

SITECUSTOMIZE = """\
import atexit, os, sys
_LOG = {log!r}
def _bench_suite_cpu_done() -> None:
    t = os.times()
    line = "%d\\t%.3f\\t%s\\n" % (os.getpid(), t.user + t.system,
                                 " ".join(sys.argv)[:300].replace("\\t", " ").replace("\\n", " "))
    try:
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(line)
    except OSError:
        pass
atexit.register(_bench_suite_cpu_done)
"""


def kind(argv: str, clone: str) -> str:
    words = argv.replace(clone + "/", "").split()
    if not words:
        return "?"
    first = words[0]
    if first == "-c":
        return "python -c (xdist workers, inline scripts)"
    if first.endswith(("bin/bearagent", "bearagent/__main__.py")):
        # the first command word; option values (`-w /path`) are paths or numbers, never a lowercase word alone
        command = next((w for w in words[1:] if re.fullmatch(r"[a-z][a-z-]*", w)), None)
        return "bearagent " + (command or "(session)")
    if "pytest" in first:
        return "pytest"
    return re.sub(r"^.*/(tests|examples)/", r"\1/", first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    if shutil.which("uv") is None:
        sys.exit("suite_cpu: uv is not on PATH; install it with `python3 -m pip install uv`")
    base = Path(tempfile.mkdtemp(prefix="suite cpu ö."))
    clone = base / "bearagent"
    try:
        subprocess.run(["git", "clone", "-q", str(HERE), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", args.rev], check=True)
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # the npm and PyPI packages some tests install, already fetched into this checkout's .cache/ (as CI has them)
        for cached in [*(HERE / ".cache").glob("npm-*"), *(HERE / ".cache").glob("pypi-*")]:
            shutil.copytree(cached, clone / ".cache" / cached.name, symlinks=True)
        subprocess.run(["uv", "sync", "--locked", "-q"], cwd=clone, env=env, check=True)
        site = subprocess.run(
            [str(clone / ".venv/bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        log = base / "processes.log"
        Path(site, "sitecustomize.py").write_text(SITECUSTOMIZE.format(log=str(log)), encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run(
            ["uv", "run", "pytest", "-q", "-p", "no:cacheprovider", *args.pytest_args],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        suite_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        tail = [line for line in done.stdout.splitlines() if " passed" in line or " failed" in line][-1:]
        cpu: collections.Counter[str] = collections.Counter()
        count: collections.Counter[str] = collections.Counter()
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
            _pid, seconds, argv = line.split("\t", 2)
            k = kind(argv, str(clone))
            cpu[k] += float(seconds)
            count[k] += 1
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        print(
            f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}; {now}, "
            f"load average {os.getloadavg()[0]:.1f}; rev {args.rev}; pytest {' '.join(args.pytest_args) or '(all)'}"
        )
        print(f"pytest exit {done.returncode}: {tail[0] if tail else '(no summary line)'}")
        print(
            f"wall {wall:.0f} s; the suite's CPU (every process it waited for) {suite_cpu:.0f} s; "
            f"logged {sum(cpu.values()):.0f} s in {sum(count.values())} processes"
        )
        print()
        print("| command | processes | CPU s | CPU s each |")
        print("|---|---:|---:|---:|")
        for k, seconds in cpu.most_common(30):
            print(f"| `{k}` | {count[k]} | {seconds:.1f} | {seconds / count[k]:.2f} |")
        if done.returncode != 0:
            print(done.stdout[-3000:], file=sys.stderr)
    finally:
        if args.keep:
            print(f"clone kept: {clone}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The quickstart's event log and output, normalised, compared between two versions of BearAgent (issue 22).

A performance change must leave behaviour, events and output as they were. This script runs README's quickstart
command (`bearagent run -w examples/quickstart "Read docs/project.md and write a summary to outputs/intro.md"`) in
a fresh copy of the workspace, once with the sources of a git revision (`--base`, extracted with `git archive`,
imported ahead of the installed package through PYTHONPATH) and once with the working tree, and compares:

- every stored event row byte for byte (the `payload` text as SQLite holds it, type, version, sequence, causation
  and correlation), the run row (`data` text) and the activity rows (`data` text);
- what `bearagent run` printed (stdout and stderr) and its exit code; plain `run`, `--json` and `--stream-json`.

Ids (UUIDs), times (ISO-8601 stamps) and durations (`*_ms` fields, `N ms` / `N.Ns` in the output) are replaced by
placeholders numbered by first appearance, so two runs are equal when they differ only there. Exits 1 with a diff
when they are not equal.

    uv run python benchmarks/quickstart_log.py --base <rev>              # <rev> against the working tree
    uv run python benchmarks/quickstart_log.py --base <rev> --head <rev2>
    uv run python benchmarks/quickstart_log.py --without <c1>,<c2>       # the working tree without two commits
    uv run python benchmarks/quickstart_log.py --dump                     # the working tree's normalised log
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPT = "Read docs/project.md and write a summary to outputs/intro.md"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SHORT_ID = re.compile(r"\b[0-9a-f]{8}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_MS_FIELD = re.compile(r'(\\?"(?:[a-z_]*_ms|pid|process_start)\\?"\s*:\s*)\d+')
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b")
_SEAL = re.compile(r'(\\?"seal\\?"\s*:\s*\\?")[0-9a-f]{64}')
"""A run request's seal: an HMAC over the run's id (and its request), so it differs whenever the ids do."""


class Normaliser:
    """Replaces ids and times by numbered placeholders (the same id gets the same number everywhere)."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def _id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"<id{len(self.ids) + 1}>")

    def __call__(self, text: str) -> str:
        text = _UUID.sub(self._id, text)
        text = _TIME.sub("<time>", text)
        text = _MS_FIELD.sub(r"\1<ms>", text)
        return _SEAL.sub(r"\1<seal>", text)

    def output(self, text: str) -> str:
        """Printed output: also short ids (a run id's first 8 hex digits) and human durations."""
        text = self(text)
        short = {full[:8]: name for full, name in self.ids.items()}
        text = _SHORT_ID.sub(lambda m: short.get(m.group(0), m.group(0)), text)
        return _DURATION.sub("<duration>", text)


def run_quickstart(src: Path | None, workdir: Path, flags: list[str]) -> tuple[str, str, int]:
    """One quickstart run in a fresh copy of the workspace; `src` (a `src/` tree) is imported ahead of the
    installed package. Returns (stdout, stderr, exit code); the store is left in `workdir`."""
    shutil.copytree((src.parent if src else REPO) / "examples" / "quickstart", workdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEARAGENT_")}
    env.update(
        BEARAGENT_HOME=str(workdir.parent / f"{workdir.name}-home"),
        BEARAGENT_LOAD_PLUGINS="",
        NO_COLOR="1",
        COLUMNS="100",
        PYTHONHASHSEED="0",
    )
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    code = "from bearagent.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "-w", str(workdir), *flags, PROMPT],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=workdir,
    )
    return done.stdout, done.stderr, done.returncode


def store_dump(workdir: Path, norm: Normaliser) -> list[str]:
    """The stored rows of every run, in order, normalised: events, run rows, activity rows."""
    found = list(workdir.rglob("*.db"))
    if len(found) != 1:
        raise SystemExit(f"expected one SQLite store under {workdir}, found {found}")
    conn = sqlite3.connect(found[0])
    lines: list[str] = []
    try:
        for row in conn.execute(
            "SELECT run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
            " correlation_id, payload FROM events ORDER BY seq_no"
        ):
            lines.append(norm("event " + json.dumps(list(row))))
        for row in conn.execute(
            "SELECT run_id, session_id, parent_run_id, status, created_at, last_sequence, data, active_activity,"
            " goal FROM run_projections ORDER BY rowid"
        ):
            lines.append(norm("run " + json.dumps(list(row))))
        for row in conn.execute(
            "SELECT run_id, activity_id, requested_sequence, status, data FROM activity_projections"
            " ORDER BY requested_sequence"
        ):
            lines.append(norm("activity " + json.dumps(list(row))))
        for row in conn.execute("SELECT * FROM sessions ORDER BY created_at"):
            lines.append(norm("session " + json.dumps(list(row))))
    finally:
        conn.close()
    return lines


def snapshot(src: Path | None, tmp: Path) -> list[str]:
    lines: list[str] = []
    for flags in ([], ["--json"], ["--stream-json"]):
        norm = Normaliser()
        workdir = tmp / "ws"  # one path for every run: the prompt's context holds it (and so the token counts)
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(tmp / "ws-home", ignore_errors=True)
        out, err, code = run_quickstart(src, workdir, flags)
        lines.append(f"## bearagent run {' '.join(flags)} (exit {code})")
        lines += store_dump(workdir, norm)
        lines += [f"stdout {line}" for line in norm.output(out).splitlines()]
        lines += [f"stderr {line}" for line in norm.output(err).splitlines() if "Bytecode compiled" not in line]
        written = workdir / "outputs" / "intro.md"
        lines.append("outputs/intro.md " + json.dumps(written.read_text() if written.exists() else None))
    return lines


def extract(rev: str, into: Path) -> Path:
    """The `src/` and `examples/` trees of `rev` (read-only: `git archive`, no worktree)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "src", "examples"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def revert(tree: Path, commits: list[str]) -> Path:
    """`tree` (an extracted revision) without the changes of `commits` to src/ and examples/ (newest undone first),
    so one change set can be compared alone on a branch others commit to as well."""
    for commit in reversed(commits):
        patch = subprocess.run(
            ["git", "-C", str(REPO), "show", "--format=", commit, "--", "src", "examples"],
            capture_output=True,
            check=True,
        ).stdout
        if patch.strip():
            undone = subprocess.run(["git", "apply", "-R", "-"], input=patch, cwd=tree, capture_output=True)
            if undone.returncode != 0:  # lines next to the change moved since: let patch(1) find them (fuzz)
                subprocess.run(["patch", "-R", "-p1", "-F3", "-s"], input=patch, cwd=tree, check=True)
    return tree / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", help="git revision to compare the working tree with")
    parser.add_argument(
        "--base-src", type=Path, help="a src/ tree (with examples/ beside it) to compare instead of --base"
    )
    parser.add_argument("--head", help="git revision to compare with --base (default: the working tree)")
    parser.add_argument(
        "--without",
        default="",
        help="comma list of commits: compare --head (or the working tree) with itself minus these commits",
    )
    parser.add_argument("--dump", action="store_true", help="print the normalised log and output of --head")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        after = snapshot(extract(args.head, tmp / "head") if args.head else None, tmp)
        if args.base_src:
            base_src = args.base_src.resolve()
            args.base = str(base_src)
        elif args.without:
            if args.head:
                tree = extract(args.head, tmp / "base").parent
            else:  # the working tree as it is (others' uncommitted edits too), copied
                tree = tmp / "base"
                for part in ("src", "examples"):
                    shutil.copytree(REPO / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
            base_src = revert(tree, args.without.split(","))
            args.base = f"{args.head or 'working tree'} without {args.without}"
        elif args.base:
            base_src = extract(args.base, tmp / "base")
        else:
            print("\n".join(after))
            return
        before = snapshot(base_src, tmp)
    events = sum(1 for line in after if line.startswith("event "))
    if before == after:
        print(f"identical: {len(after)} lines ({events} event rows over 3 runs) apart from ids and times")
        return
    sys.stdout.writelines(
        difflib.unified_diff(
            [f"{x}\n" for x in before], [f"{x}\n" for x in after], args.base, args.head or "working tree"
        )
    )
    raise SystemExit(1)


if __name__ == "__main__":
    main()

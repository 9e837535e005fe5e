"""The TypeScript client (clients/typescript/): its decoder gives Python's verdict on every shared sample and on the
edge-case table (tests/fixtures/stream_edge_cases.json, which Python is checked against here too), it type-checks
under the pinned `tsc --noEmit` (erasable syntax only), and its node:test suite passes against a live
`bearagent serve` on 127.0.0.1.

Needs node and npm (the pinned TypeScript and @types/node install into .cache/ on first use, or from
scripts/ci-extras.sh); without them the TypeScript tests skip with that reason, the Python half still runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from tests.server.test_http_api import JWT_SECRET, TOKEN, Server, gateway_token, start
from tests.support.config_ws import write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace
from tests.support.typescript import ensure_node_types, ensure_tsc, node_missing_reason, run_tsc

from bearagent.domain.errors import BearAgentError
from bearagent.domain.stream import STREAM_EVENT_TYPES, encode_stream_event, parse_stream_event_json

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
SAMPLES = ROOT / "schemas" / "samples"
EDGE_CASES = ROOT / "tests" / "fixtures" / "stream_edge_cases.json"


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _edge_cases() -> list[dict[str, object]]:
    doc = cast(dict[str, object], json.loads(EDGE_CASES.read_text(encoding="utf-8")))
    return cast(list[dict[str, object]], doc["cases"])


def _field_named(message: str) -> str | None:
    """The field a decode error names (None: the line itself), as the TypeScript StreamDecodeError.field."""
    if message.startswith("unknown stream event type") or "needs a string field 'type'" in message:
        return "type"
    match = re.match(r"invalid '[^']+' stream event: field ([^:]+): ", message)
    return match.group(1) if match else None


def python_verdict(line: str) -> dict[str, object]:
    try:
        event = parse_stream_event_json(line)
    except BearAgentError as exc:
        assert exc.code == "validation.stream_event" and exc.hint, str(exc)
        return {"line": line, "verdict": "reject", "field": _field_named(str(exc))}
    return {"line": line, "verdict": "accept", "decoded": json.loads(encode_stream_event(event))}


def shared_lines() -> list[str]:
    invalid = cast(list[dict[str, object]], json.loads((SAMPLES / "invalid.json").read_text(encoding="utf-8")))
    return [
        *_lines(SAMPLES / "valid.jsonl"),
        *_lines(SAMPLES / "forward_compat.jsonl"),
        *(json.dumps(sample["event"], ensure_ascii=False) for sample in invalid),
        *(cast(str, case["line"]) for case in _edge_cases()),
    ]


# ---- Python against the edge-case table (no node needed) ------------------------------------------------------


@pytest.mark.parametrize("case", _edge_cases(), ids=lambda case: str(case["name"]))
def test_python_gives_the_verdict_of_the_edge_case_table(case: dict[str, object]) -> None:
    got = python_verdict(cast(str, case["line"]))
    assert got["verdict"] == case["verdict"], f"{case['why']}: {got}"
    if case["verdict"] == "reject":
        assert got["field"] == case["field"], f"{case['why']}: the error names {got['field']!r}"
    elif "decoded" in case:
        assert got["decoded"] == case["decoded"]


def test_the_edge_case_table_covers_the_issue_kinds() -> None:
    names = {str(case["name"]) for case in _edge_cases()}
    for kind in ("run_id_not_uuid", "empty_tool_name", "index_1_0", "seq_negative", "unknown_type"):
        assert kind in names
    assert {"missing_is_error", "extra_field", "null_content"} <= names
    assert len(names) == len(_edge_cases()) >= 8


def test_the_client_union_has_exactly_the_python_types_in_erasable_syntax() -> None:
    source = (CLIENT / "src" / "stream.ts").read_text(encoding="utf-8")
    every = source[source.index("const EVERY_TYPE") : source.index("};", source.index("const EVERY_TYPE"))]
    assert re.findall(r'^\s+"?([a-z._]+)"?: true,$', every, re.MULTILINE) == list(STREAM_EVENT_TYPES)
    interfaces = set(re.findall(r'^\s+type: "([a-z._]+)";$', source, re.MULTILINE))
    assert interfaces == set(STREAM_EVENT_TYPES)
    for path in sorted((CLIENT / "src").glob("*.ts")) + sorted((CLIENT / "test").glob("*.ts")):
        code = re.sub(r"//.*", "", path.read_text(encoding="utf-8"))
        assert not re.search(r"\b(enum|namespace|module)\s+\w+\s*\{", code), f"{path.name}: not erasable"
        assert not re.search(r"constructor\s*\([^)]*\b(public|private|protected|readonly)\s", code), path.name


# ---- TypeScript ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toolchain() -> tuple[Path, Path]:
    reason = node_missing_reason()
    if reason is not None:
        pytest.skip(f"{reason} (the TypeScript client's tests need Node.js >= 20 with npm)")
    tsc, types = ensure_tsc(), ensure_node_types()
    assert tsc is not None and types is not None
    return tsc, types


@pytest.mark.slow
def test_the_client_type_checks_with_the_pinned_typescript(toolchain: tuple[Path, Path]) -> None:
    tsc, types = toolchain
    # The client alone: DOM's fetch, no Node types (it runs in browsers too).
    done = run_tsc(tsc, "--noEmit", "-p", "tsconfig.json", cwd=CLIENT)
    assert done.returncode == 0, f"tsc --noEmit -p clients/typescript/tsconfig.json:\n{done.stdout}{done.stderr}"
    done = run_tsc(tsc, "--noEmit", "-p", "tsconfig.test.json", "--typeRoots", str(types), cwd=CLIENT)
    assert done.returncode == 0, f"tsc --noEmit -p clients/typescript/tsconfig.test.json:\n{done.stdout}{done.stderr}"


@pytest.mark.slow
def test_the_valid_samples_type_check_as_client_events(toolchain: tuple[Path, Path], tmp_path: Path) -> None:
    tsc, _ = toolchain
    lines = [f'import type {{ AgentEvent }} from "{(CLIENT / "src" / "stream.ts").as_posix()}";', ""]
    for i, line in enumerate(_lines(SAMPLES / "valid.jsonl")):
        lines.append(f"export const valid{i}: AgentEvent = {json.dumps(json.loads(line), ensure_ascii=False)};")
    (tmp_path / "samples.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
    flags = ("--strict", "--exactOptionalPropertyTypes", "--erasableSyntaxOnly", "--allowImportingTsExtensions")
    done = run_tsc(tsc, "--noEmit", *flags, "--target", "es2022", "--module", "nodenext", "samples.ts", cwd=tmp_path)
    assert done.returncode == 0, f"the samples do not type-check as the client's AgentEvent:\n{done.stdout}"


ALPHA_SCRIPT = """
turns:
  - text: "Let me read the notes."
    tool_calls:
      - {name: Read, arguments: {file_path: notes.md}}
  - text: "first answer"
  - text: "second answer"
  - text: "third answer"
"""
SLOW_SCRIPT = """
turns:
  - text: "slow answer"
    delay_ms: 4000
  - text: "after the slow one"
"""
STREAMING_SCRIPT = """
turns:
  - text: "one two three four five six"
    delta_delay_ms: 150
"""
WRITE_SCRIPT = """
turns:
  - text: "Writing."
    tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - text: "Done."
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    agents = {"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    alpha = scripted_workspace(tmp_path / "alpha", ALPHA_SCRIPT, agents=agents)
    write(alpha, "notes.md", "These are the notes of alpha.\n")
    write(alpha, ".bearagent/actions/greet.md", "---\ndescription: Greets.\n---\nSay hello.\n")
    beta = scripted_workspace(tmp_path / "beta", SLOW_SCRIPT, agents=agents)
    gamma = scripted_workspace(tmp_path / "gamma", STREAMING_SCRIPT, agents=agents)
    writers = {"main": agent_md("Main agent.", mode="primary", tools="[Read, Write]")}
    delta = scripted_workspace(
        tmp_path / "delta", WRITE_SCRIPT, agents=writers, config=CONFIG + "permission_mode: default\n"
    )
    config = f"""
workspaces:
  - {{id: alpha, path: {alpha}, name: Alpha, external_ref: "gh:acme/alpha"}}
  - {{id: beta, path: {beta}}}
  - {{id: gamma, path: {gamma}}}
  - {{id: delta, path: {delta}}}
auth:
  jwt: {{key: {JWT_SECRET}, algorithms: [HS256], audience: bearagent}}
"""
    srv = start(tmp_path, config=config)
    try:
        yield srv
    finally:
        srv.proc.terminate()
        srv.proc.wait(timeout=15)


@pytest.mark.slow
@pytest.mark.network_local
def test_the_node_suite_passes_against_a_live_server(
    toolchain: tuple[Path, Path], server: Server, tmp_path: Path
) -> None:
    tsc, types = toolchain
    build = tmp_path / "build"
    done = run_tsc(tsc, "-p", "tsconfig.test.json", "--typeRoots", str(types), "--outDir", str(build), cwd=CLIENT)
    assert done.returncode == 0, f"compiling the client's tests failed:\n{done.stdout}{done.stderr}"
    verdicts = tmp_path / "python_verdicts.json"
    verdicts.write_text(json.dumps([python_verdict(line) for line in shared_lines()], ensure_ascii=False))
    reader = gateway_token("reader", "runs:read", ["alpha"])
    node = shutil.which("node")
    assert node is not None
    tests = sorted(str(path) for path in (build / "test").glob("*.test.js"))
    assert len(tests) >= 3, tests
    env = {
        "PATH": str(Path(node).parent) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "BEARAGENT_ROOT": str(ROOT),
        "BEARAGENT_PY_VERDICTS": str(verdicts),
        "BEARAGENT_BASE_URL": server.base,
        "BEARAGENT_TOKEN": TOKEN,
        "BEARAGENT_READER_TOKEN": reader,
    }
    ran = subprocess.run(
        [node, "--test", "--test-reporter=spec", *tests],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=240,
    )
    output = f"{ran.stdout}\n{ran.stderr}"
    assert ran.returncode == 0, f"node --test failed (exit {ran.returncode}):\n{output}"
    assert re.search(r"^ℹ fail 0$", ran.stdout, re.MULTILINE), output
    assert "no BEARAGENT_" not in ran.stdout, f"a node test skipped for want of the environment:\n{output}"
    passed = re.search(r"^ℹ pass (\d+)$", ran.stdout, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 100, output

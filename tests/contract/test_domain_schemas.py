"""The public data shapes are pinned by a snapshot: any change shows up as a reviewed diff, never by surprise.

When a test here fails after a deliberate change, regenerate and review:

    uv run python scripts/update_schemas.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest

from bearagent.domain.run_events import RUN_EVENT_PAYLOADS
from bearagent.domain.schema import domain_schemas, render_schemas
from bearagent.domain.stream import stream_json_schema

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "contract" / "snapshots" / "domain_schemas.json"
STREAM_SCHEMA = ROOT / "schemas" / "stream.schema.json"
REGENERATE = "uv run python scripts/update_schemas.py"

REQUIRED_NAMES = {
    "Event",
    "ErrorInfo",
    "Message",
    "ModelRequest",
    "ModelEvent",
    "ToolSpec",
    "ToolRequest",
    "ToolResult",
    "Artifact",
    "BudgetLimits",
    "BudgetUsage",
    "RunProjection",
    "ActivityProjection",
    "StreamEvent",
}


def drift(current: dict[str, object], snapshot: dict[str, object]) -> list[str]:
    """Human-readable differences between generated schemas and the snapshot, by schema name."""
    lines = [f"new schema {name!r} (not in the snapshot)" for name in sorted(current.keys() - snapshot.keys())]
    lines += [f"schema {name!r} was removed" for name in sorted(snapshot.keys() - current.keys())]
    lines += [
        f"schema {name!r} changed"
        for name in sorted(current.keys() & snapshot.keys())
        if render_schemas(current[name]) != render_schemas(snapshot[name])
    ]
    return lines


def load_snapshot() -> dict[str, object]:
    assert SNAPSHOT.exists(), f"{SNAPSHOT.relative_to(ROOT)} is missing; create it with: {REGENERATE}"
    return cast(dict[str, object], json.loads(SNAPSHOT.read_text(encoding="utf-8")))


def test_domain_schemas_match_the_snapshot() -> None:
    current = domain_schemas()
    changes = drift(current, load_snapshot())
    assert not changes, (
        "public domain schemas differ from tests/contract/snapshots/domain_schemas.json:\n  "
        + "\n  ".join(changes)
        + f"\nif the change is intended, regenerate with `{REGENERATE}` and review the diff before committing"
    )
    # Byte for byte too: the file is exactly what the script writes (sorted keys, indent 2).
    assert SNAPSHOT.read_text(encoding="utf-8") == render_schemas(current), (
        f"snapshot not canonical; run `{REGENERATE}`"
    )


def test_stream_schema_file_matches_the_models() -> None:
    assert STREAM_SCHEMA.read_text(encoding="utf-8") == render_schemas(stream_json_schema()), (
        f"schemas/stream.schema.json is out of date with bearagent.domain.stream; regenerate with `{REGENERATE}`"
    )


def test_snapshot_holds_the_listed_models_and_every_run_event() -> None:
    names = set(domain_schemas())
    assert names >= REQUIRED_NAMES
    expected_events = {f"{event_type}.v{version}" for (event_type, version) in RUN_EVENT_PAYLOADS}
    assert expected_events <= names
    assert names == REQUIRED_NAMES | expected_events, "only the listed public models belong in the snapshot"


@pytest.mark.slow  # several fresh interpreters generating every schema: ~20 s measured under load
def test_generation_is_deterministic_across_processes() -> None:
    code = "from bearagent.domain.schema import domain_schemas, render_schemas; print(render_schemas(domain_schemas()), end='')"
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    second = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    ).stdout
    assert first == second == render_schemas(domain_schemas())


def test_drift_reports_a_changed_added_and_removed_schema() -> None:
    snapshot = load_snapshot()
    current = dict(snapshot)
    event = cast(dict[str, object], json.loads(json.dumps(current["Event"])))
    cast(dict[str, object], event["properties"])["actor"] = {"type": "string"}  # a new field sneaks in
    current["Event"] = event
    current["Brand.v1"] = {"type": "object"}
    del current["RunStarted.v1"]
    assert drift(current, snapshot) == [
        "new schema 'Brand.v1' (not in the snapshot)",
        "schema 'RunStarted.v1' was removed",
        "schema 'Event' changed",
    ]


def _load_update_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("update_schemas", ROOT / "scripts" / "update_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_update_script_checks_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _load_update_script()
    monkeypatch.setattr(script, "ROOT", tmp_path)
    monkeypatch.setattr(script, "DOMAIN_SNAPSHOT", tmp_path / "snap" / "domain_schemas.json")
    monkeypatch.setattr(script, "STREAM_SCHEMA", tmp_path / "schemas" / "stream.schema.json")
    main = cast(Callable[[list[str]], int], script.main)
    assert main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "snap/domain_schemas.json is out of date" in err
    assert f"run: {REGENERATE}" in err
    assert main([]) == 0
    assert (tmp_path / "snap" / "domain_schemas.json").read_text(encoding="utf-8") == render_schemas(domain_schemas())
    assert main(["--check"]) == 0
    assert "schemas are up to date" in capsys.readouterr().out

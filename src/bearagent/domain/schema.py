"""The JSON Schemas of the public domain models, as one deterministic dict.

`scripts/update_schemas.py` writes it to `tests/contract/snapshots/domain_schemas.json` (and the stream protocol's
schema to `schemas/stream.schema.json`); `tests/contract/test_domain_schemas.py` fails while the generated schemas
and the snapshot differ, so every change of a public data shape shows up in review as a diff of that file.

Only the models listed here are part of the snapshot; add a model deliberately, then regenerate.
"""

from __future__ import annotations

import json
from typing import Final

from pydantic import BaseModel, TypeAdapter

from bearagent.domain.budgets import BudgetLimits, BudgetUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.messages import Message
from bearagent.domain.models import ModelEvent, ModelRequest
from bearagent.domain.run_events import RUN_EVENT_PAYLOADS
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.domain.stream import stream_json_schema
from bearagent.domain.tools import Artifact, ToolRequest, ToolResult, ToolSpec

PUBLIC_MODELS: Final[tuple[type[BaseModel], ...]] = (
    Event,
    ErrorInfo,
    Message,
    ModelRequest,
    ToolSpec,
    ToolRequest,
    ToolResult,
    Artifact,
    BudgetLimits,
    BudgetUsage,
    RunProjection,
    ActivityProjection,
)


def domain_schemas() -> dict[str, object]:
    """Every public schema keyed by name: the models above, `ModelEvent`, each run event payload as
    `"<EventType>.v<N>"`, and `StreamEvent` (the live stream union). Deterministic: same code, same dict."""
    schemas: dict[str, object] = {model.__name__: model.model_json_schema() for model in PUBLIC_MODELS}
    schemas["ModelEvent"] = TypeAdapter[ModelEvent](ModelEvent).json_schema()
    for (event_type, version), payload in sorted(RUN_EVENT_PAYLOADS.items()):
        schemas[f"{event_type}.v{version}"] = payload.model_json_schema()
    schemas["StreamEvent"] = stream_json_schema()
    return {name: schemas[name] for name in sorted(schemas)}


def render_schemas(schemas: object) -> str:
    """The canonical text of a schema file: sorted keys, indent 2, trailing newline, non-ASCII kept."""
    return json.dumps(schemas, sort_keys=True, indent=2, ensure_ascii=False) + "\n"

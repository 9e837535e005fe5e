"""The BearAgent plugin of `bench_loop_frameworks.py`: a zero-latency fake model and a `lookup` tool, registered
through the public plugin hooks (`register_models`, `register_tools`) exactly as a third-party plugin would.

The model is scripted by `STATE`: while fewer than `STATE.target` tool calls were made it answers each request with
one call `lookup(i)`, then with the final text. Its provider id is `bench-fake`; a workspace names it in `models:`.
It imports only from `bearagent.plugin`, the plugin-author namespace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bearagent.plugin import (
    BaseTool,
    IdGenerator,
    JsonMapping,
    ModelCompleted,
    ModelEntry,
    ModelEvent,
    ModelProvider,
    ModelRequest,
    ModelToolCall,
    ProviderRegistration,
    RegisterModel,
    RegisterTool,
    TextDelta,
    TokenUsage,
    ToolCallId,
    ToolContext,
    ToolResult,
    ToolSpec,
    hookimpl,
)

FINAL_TEXT = "done"
PROVIDER_ID = "bench-fake"
TOOL_NAME = "lookup"


@dataclass
class FakeState:
    """What the fake model is told to do, and what it and the tool counted (reset before every run)."""

    target: int = 0
    model_calls: int = 0
    tool_calls: int = 0

    def reset(self, target: int) -> None:
        self.target = target
        self.model_calls = 0
        self.tool_calls = 0


STATE = FakeState()
_USAGE = TokenUsage(input_tokens=10, output_tokens=5)


class FakeModel:
    """A `ModelProvider` answering at once: `lookup(i)` for i < target, then `FINAL_TEXT`."""

    def __init__(self, ids: IdGenerator | None) -> None:
        self._ids = ids

    def _call_id(self) -> ToolCallId:
        return self._ids.new(ToolCallId) if self._ids is not None else ToolCallId.new()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        i = STATE.model_calls
        STATE.model_calls += 1
        if i < STATE.target:
            yield ModelToolCall(
                tool_call_id=self._call_id(), provider_call_id=f"call_{i}", name=TOOL_NAME, arguments={"i": i}
            )
            yield ModelCompleted(model="fake", stop_reason="tool_use", usage=_USAGE)
        else:
            yield TextDelta(text=FINAL_TEXT)
            yield ModelCompleted(model="fake", stop_reason="end_turn", usage=_USAGE)


def make_fake_model(
    entry: ModelEntry, *, env: Mapping[str, str], base_dir: Path, ids: IdGenerator | None = None
) -> ModelProvider:
    return FakeModel(ids)


class LookupTool(BaseTool):
    """`lookup(i)` -> `"value <i>"` (read-only; its arguments are validated against the schema by `BaseTool`)."""

    def __init__(self) -> None:
        super().__init__(
            ToolSpec(
                name=TOOL_NAME,
                description="Look up the value of item i.",
                input_schema={
                    "type": "object",
                    "properties": {"i": {"type": "integer"}},
                    "required": ["i"],
                    "additionalProperties": False,
                },
                side_effect="read_only",
            )
        )

    async def run(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        STATE.tool_calls += 1
        return self.ok(context, f"value {arguments['i']}")


@hookimpl
def register_models(register: RegisterModel) -> None:
    register(ProviderRegistration(id=PROVIDER_ID, factory=make_fake_model, description="benchmark fake model"))


@hookimpl
def register_tools(register: RegisterTool) -> None:
    register(LookupTool())


AGENT = f"""---
name: bench
description: The benchmark agent.
mode: primary
tools: [{TOOL_NAME}]
---
You are a benchmark.
"""

CONFIG = f"""kind: project
default_agent: bench
default_model: fake
models:
  fake:
    provider: {PROVIDER_ID}
    model: fake
"""

USER_CONFIG = """budgets:
  max_model_iterations: 100000
  max_tool_calls: 100000
"""
"""The budgets the benchmark's long runs need, in the user config: a workspace's config may only lower budgets, never
raise them above the user's or the defaults (docs/security.md, budgets have a ceiling)."""


def make_workspace(root: Path, home: Path) -> None:
    """A workspace at `root` whose default agent runs the fake model with the `lookup` tool, and the user dir `home`
    (`BEARAGENT_HOME`) whose config raises the budgets."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(USER_CONFIG)
    (root / ".bearagent" / "agents").mkdir(parents=True)
    (root / ".bearagent" / "config.yaml").write_text(CONFIG)
    (root / ".bearagent" / "agents" / "bench.md").write_text(AGENT)

"""Typed payloads of run events, keyed by `(event_type, schema_version)`.

`parse_run_event_payload` finds the exact payload model for a pair and fails closed on anything unknown. A v1
payload never changes meaning: new facts go into a new version (v2 adds what the agent loop must record to audit and
replay a run). Facts that do not move a state machine (agent switches, hook executions, to-do lists, child runs)
are versioned the same way.

Why one long module: it is the catalogue of what a run log may contain. Each payload is a small model, and keeping
every type and version beside the one registry (`RUN_EVENT_PAYLOADS`) is what makes "a v1 payload never changes
meaning" checkable by reading one file. The exception is the versions BearAgent no longer writes (`LEGACY_PAIRS`):
their models are in `run_events_legacy.py`, loaded the first time an old log's pair is looked up, so a run does not
build them at start-up (issue 37).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, TypeAlias

from pydantic import AfterValidator, Field, PlainSerializer, ValidationError

from bearagent.domain._base import DomainModel, JsonObject, JsonValue
from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, SessionId, ToolCallId
from bearagent.domain.models import StopReason
from bearagent.domain.run_event_payload import RunEventPayload as RunEventPayload  # the base (its own module)
from bearagent.domain.tools import ToolResult

if TYPE_CHECKING:  # at run time these load on first use (`__getattr__` below)
    from bearagent.domain.run_events_legacy import ChildRunFinishedV1 as ChildRunFinishedV1
    from bearagent.domain.run_events_legacy import ModelCallCompletedV1 as ModelCallCompletedV1
    from bearagent.domain.run_events_legacy import ModelCallFailedV1 as ModelCallFailedV1
    from bearagent.domain.run_events_legacy import ModelCallRequestedV1 as ModelCallRequestedV1
    from bearagent.domain.run_events_legacy import ModelCallRequestedV2 as ModelCallRequestedV2
    from bearagent.domain.run_events_legacy import RunCreatedV1 as RunCreatedV1
    from bearagent.domain.run_events_legacy import RunFailedV1 as RunFailedV1
    from bearagent.domain.run_events_legacy import RunSucceededV1 as RunSucceededV1
    from bearagent.domain.run_events_legacy import ToolCallCompletedV1 as ToolCallCompletedV1
    from bearagent.domain.run_events_legacy import ToolCallFailedV1 as ToolCallFailedV1
    from bearagent.domain.run_events_legacy import ToolCallRequestedV1 as ToolCallRequestedV1

TriggerType: TypeAlias = Literal["message", "manual_action", "api_action", "hook", "system", "subagent"]


def _freeze_str_map(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


FrozenStrMap = Annotated[Mapping[str, str], AfterValidator(_freeze_str_map), PlainSerializer(dict[str, str])]
"""A string-to-string mapping copied into a read-only view (a plain `Mapping` field would stay a mutable dict)."""


# ---- run lifecycle -------------------------------------------------------------------------------------------


class RunCreatedV2(RunEventPayload):
    """Adds what is needed to audit and replay: the goal, who ran it, with which prompt and tool versions."""

    session_id: SessionId | None = None
    budget_limits: BudgetLimits
    goal: str = Field(max_length=1_048_576)
    agent_name: str = Field(min_length=1, max_length=64)
    prompt_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool_spec_versions: FrozenStrMap = Field(default_factory=dict[str, str])
    model_ref: str | None = Field(default=None, max_length=256)
    parent_run_id: RunId | None = None
    trigger_type: TriggerType = "message"
    trigger_ref: str | None = Field(default=None, max_length=256)
    depth: int = Field(default=0, ge=0, le=16)


MAX_RUN_PROMPT_CHARS = 100_000
"""The longest `--system-prompt` / `--append-system-prompt` a run records."""
MAX_RUN_ADD_DIRS = 20
"""The most `--add-dir` directories of one run."""
RUN_CHOICE_FIELDS = ("disallowed_tools", "system_prompt", "append_system_prompt", "add_dirs")
"""`RunRequest` fields added after records were first sealed: left out of the sealed text while unset, so a record
sealed before they existed still verifies (`trust/run_seals.py`)."""


class RunRequest(DomainModel):
    """What was asked of a run beyond its goal: who asked (the caller's subject and a snapshot of their context, for
    runs started over the HTTP API) and the per-run choices a process must repeat to execute or resume it exactly
    (a queued run is started by whichever worker claims it)."""

    initiator_ref: str | None = Field(default=None, max_length=256)
    """The subject that started the run (`CallerContext.subject_ref`); None for a local run."""
    auth_context: JsonObject | None = None
    """The caller context the run was started with (subject, scopes, workspace access, auth source); never a
    token."""
    model_override: str | None = Field(default=None, max_length=256)
    """The model the request chose (`-m`, a command's `model`), over the agent's own."""
    allowed_tools: tuple[str, ...] = Field(default=(), max_length=200)
    """Permission rules pre-approved for this run (a command's `allowed-tools`)."""
    disallowed_tools: tuple[str, ...] = Field(default=(), max_length=200)
    """Permission rules denied in this run (`run --disallowed-tools`, Claude Code's `--disallowedTools`)."""
    system_prompt: str | None = Field(default=None, max_length=MAX_RUN_PROMPT_CHARS)
    """The top-level agent's prompt for this run, instead of the agent file's (`run --system-prompt`)."""
    append_system_prompt: str | None = Field(default=None, max_length=MAX_RUN_PROMPT_CHARS)
    """Text appended to the top-level agent's system prompt for this run (`run --append-system-prompt`)."""
    add_dirs: tuple[str, ...] = Field(default=(), max_length=MAX_RUN_ADD_DIRS)
    """Absolute directories the file tools and a sandboxed Bash may use in this run besides the workspace
    (`run --add-dir`, as `permissions.additionalDirectories`)."""
    wait_approvals: bool = False
    """With nobody attached to answer, an `ask` leaves the run waiting for an answer (else it is denied at once)."""
    metadata: JsonObject | None = None
    """The client's own fields for the run (seed 002's `Run.metadata`), bounded as error details are
    (`domain.errors.bounded_details`, checked when the run is asked for)."""
    seal: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The creating user's seal over the run's record (`trust/run_seals.py`): the log is a workspace file, so a
    queued run starts, and an interrupted one resumes, only if this verifies with the executing user's key."""


class RunCreatedV3(RunCreatedV2):
    """Adds the run's request (`RunRequest`), so the record says who started it and a queued run can be started,
    and any run resumed, by another process with the same choices."""

    request: RunRequest = Field(default_factory=RunRequest)


class RunCreatedV4(RunCreatedV3):
    """Adds `planned`. False: the run was recorded `queued` before it was planned (an API-only server records a run
    without starting MCP servers or building providers), so this event's `prompt_hash` (`UNPLANNED_PROMPT_HASH`),
    `tool_spec_versions` ({}) and `model_ref` (None) describe no plan; the worker that starts the run records its
    plan in RunStarted v3. Read a run's plan with `run_plan_facts`."""

    planned: bool = True


UNPLANNED_PROMPT_HASH = "0" * 64
"""The `prompt_hash` of a RunCreated v4 with `planned: false` (no system prompt was built yet)."""


class RunPlanFacts(DomainModel):
    """What the plan a run executes says, for audit, resume and replay: the hash of its system prompt, its tools'
    spec versions and its model entry."""

    prompt_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool_spec_versions: FrozenStrMap = Field(default_factory=dict[str, str])
    model_ref: str | None = Field(default=None, max_length=256)


class RunStartedV1(RunEventPayload):
    pass


class RunOwner(DomainModel):
    """The process executing a run (its lease): who may append to it, and how another process tells whether that
    process is still alive. On the same host `boot_id` + `pid` + `process_start` name one process for its whole
    life (a reused pid has another start time); from another host only the heartbeat tells."""

    host: str = Field(min_length=1, max_length=256)
    boot_id: str = Field(default="", max_length=64)
    pid: int = Field(ge=0)
    process_start: int = Field(default=0, ge=0)
    """The process start time in clock ticks since boot (Linux `/proc/<pid>/stat` field 22); 0 where unknown."""
    lease_ms: int = Field(default=60_000, ge=1_000, le=86_400_000)
    """How long after its last heartbeat the run counts as abandoned when the owner cannot be checked directly."""


class RunStartedV2(RunEventPayload):
    """Adds the run's owner (its lease), so a later process can tell a live run from one whose process died."""

    owner: RunOwner


class RunStartedV3(RunStartedV2):
    """Adds the plan of a run recorded unplanned (RunCreated v4 `planned: false`), made by the worker that starts
    it."""

    plan: RunPlanFacts


def run_plan_facts(created: RunCreatedV2, started: RunEventPayload | None = None) -> RunPlanFacts:
    """A run's plan: its RunStarted v3's when it was recorded unplanned, else its RunCreated's."""
    if isinstance(started, RunStartedV3):
        return started.plan
    return RunPlanFacts(
        prompt_hash=created.prompt_hash, tool_spec_versions=created.tool_spec_versions, model_ref=created.model_ref
    )


class RunSucceededV2(RunEventPayload):
    final_text: str = Field(default="", max_length=1_048_576)
    stop_reason: StopReason = "end_turn"


class RunFailedV2(RunEventPayload):
    """A failed run; a budget stop is a failure whose error category is `budget`."""

    error: ErrorInfo
    partial_text: str = Field(default="", max_length=1_048_576)


class RunCancelledV1(RunEventPayload):
    reason: str = Field(default="cancelled", max_length=2_000)


class InFlight(DomainModel):
    """The activity a run had in flight when it stopped."""

    activity_id: ActivityId
    kind: Literal["model_call", "tool_call"]
    name: str | None = Field(default=None, max_length=256)
    model_call_id: ModelCallId | None = None
    tool_call_id: ToolCallId | None = None

    @classmethod
    def of(cls, activity: _ActivityLike) -> InFlight:
        return cls(
            activity_id=activity.activity_id,
            kind=activity.kind,
            name=activity.name,
            model_call_id=activity.model_call_id,
            tool_call_id=activity.tool_call_id,
        )


class _ActivityLike(Protocol):
    @property
    def activity_id(self) -> ActivityId: ...
    @property
    def kind(self) -> Literal["model_call", "tool_call"]: ...
    @property
    def name(self) -> str | None: ...
    @property
    def model_call_id(self) -> ModelCallId | None: ...
    @property
    def tool_call_id(self) -> ToolCallId | None: ...


class RunInterruptedV1(RunEventPayload):
    """The run's owner is gone (its process died, or its lease expired) while the run was running. Not terminal:
    `runs resume` continues it. Its wall time counted until `last_seen_at`, the owner's last sign of life."""

    reason: str = Field(max_length=2_000)
    owner: RunOwner | None = None
    last_seen_at: datetime
    in_flight: InFlight | None = None


class RunResumedV1(RunEventPayload):
    """A process took over an interrupted run (or a waiting run whose approval was answered) and continues it."""

    owner: RunOwner
    reason: Literal["interrupted", "approval"] = "interrupted"
    changes: tuple[str, ...] = Field(default=(), max_length=64)
    """What changed since the run started (agent prompt, tool specs), one line each; empty when nothing did."""


class ToolCallAbandonedV1(RunEventPayload):
    """A side-effecting tool call that was in flight when the run was interrupted: it is never executed again
    automatically. Its outcome is unknown; the model is told so and asked to check before redoing it."""

    tool_call_id: ToolCallId
    tool_name: str = Field(min_length=1, max_length=256)
    side_effect: str = Field(min_length=1, max_length=32)
    message: str = Field(max_length=2_000)


# ---- approvals -------------------------------------------------------------------------------------------------

ApprovalChoice: TypeAlias = Literal["allow_once", "allow_always", "deny"]
APPROVAL_CHOICES: tuple[ApprovalChoice, ...] = ("allow_once", "allow_always", "deny")


class ApprovalRequestedV1(RunEventPayload):
    """The tool gate's answer for a call was `ask`: the run waits (status `waiting`, wall time paused) until
    someone answers. `attached` says whether the asking process keeps waiting for the answer (an interactive
    terminal) or has let go of the run (whoever answers continues it)."""

    approval_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    activity_id: ActivityId
    tool_call_id: ToolCallId
    tool_name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    reason: str = Field(max_length=4_000)
    suggested_rule: str | None = Field(default=None, max_length=1_000)
    choices: tuple[ApprovalChoice, ...] = APPROVAL_CHOICES
    attached: bool = False


class ApprovalResolvedV1(RunEventPayload):
    """The answer to the run's pending approval, once: a second, late or misdirected answer is refused."""

    approval_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    decision: ApprovalChoice
    answered_by: str = Field(min_length=1, max_length=256)
    message: str | None = Field(default=None, max_length=2_000)
    seal: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    """The answering user's seal over (run, approval, decision) (`trust/seals.py`): the log is a workspace file, so
    a resume acts on an answer only if its seal verifies with the resuming user's key."""


ElicitAnswerAction: TypeAlias = Literal["accept", "decline", "cancel"]


class ElicitationRequestedV1(RunEventPayload):
    """An MCP server asked the user a question in the middle of a tool call (MCP elicitation) and the run waits for
    someone to answer it: its process keeps the call open (the run stays `running`, its wall time paused) until
    `ElicitationResolved` (answered over HTTP, by `bearagent approvals answer`, or declined when the wait ran out).
    `requested_schema` is the server's form (a flat JSON Schema object); `url` a page to open instead."""

    elicitation_id: str = Field(min_length=1, max_length=64, pattern=r"^el_[A-Za-z0-9_-]+$")
    tool_call_id: ToolCallId | None = None
    tool_name: str | None = Field(default=None, max_length=256)
    server: str = Field(min_length=1, max_length=256)
    message: str = Field(max_length=2_000)
    mode: Literal["form", "url"] = "form"
    requested_schema: JsonObject | None = None
    url: str | None = Field(default=None, max_length=2_000)
    wait_s: float | None = Field(default=None, ge=0)
    """How long the run waits for an answer before it declines (None: until the run ends)."""


class ElicitationResolvedV1(RunEventPayload):
    """The answer to `ElicitationRequested` `elicitation_id`, once: `answered_by` is who gave it (a subject, `cli:USER`,
    or `nobody` when the wait ran out or the run ended); `content` the accepted form's values as sent to the server."""

    elicitation_id: str = Field(min_length=1, max_length=64, pattern=r"^el_[A-Za-z0-9_-]+$")
    action: ElicitAnswerAction
    content: JsonObject | None = None
    answered_by: str = Field(min_length=1, max_length=256)
    message: str | None = Field(default=None, max_length=2_000)
    waited_ms: int = Field(default=0, ge=0)
    """How long the call waited for the answer, from the request: not counted as the run's wall time."""


# ---- model activity ------------------------------------------------------------------------------------------


class ModelCallStartedV1(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId


class RecordedToolCall(DomainModel):
    tool_call_id: ToolCallId
    provider_call_id: str | None = Field(default=None, max_length=256)
    name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    invalid_arguments: str | None = Field(default=None, max_length=2_000)


class ModelCallCompletedV2(RunEventPayload):
    """Adds the model's text and tool calls, the provider request id, the actual model and the stop reason."""

    activity_id: ActivityId
    model_call_id: ModelCallId
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_microusd: int = Field(default=0, ge=0)
    text: str = Field(default="", max_length=1_048_576)
    tool_calls: tuple[RecordedToolCall, ...] = Field(default=(), max_length=512)
    provider_request_id: str | None = Field(default=None, max_length=256)
    model: str | None = Field(default=None, max_length=256)
    stop_reason: StopReason = "end_turn"
    refusal: str | None = Field(default=None, max_length=16_384)


class ModelCallFailedV2(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_microusd: int = Field(default=0, ge=0)
    error: ErrorInfo
    partial_text: str = Field(default="", max_length=1_048_576)
    will_retry: bool = False


# ---- tool activity -------------------------------------------------------------------------------------------


class ToolCallRequestedV2(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId
    tool_name: str = Field(min_length=1, max_length=256)
    arguments: JsonObject
    provider_call_id: str | None = Field(default=None, max_length=256)
    source: str = Field(default="native", max_length=32)


class ToolCallStartedV1(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId


class ToolCallCompletedV2(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId
    result: ToolResult


class ToolCallFailedV2(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId
    result: ToolResult


# ---- facts that do not move a state machine ------------------------------------------------------------------


class AgentSwitchedV1(RunEventPayload):
    from_agent: str = Field(min_length=1, max_length=64)
    to_agent: str = Field(min_length=1, max_length=64)
    switch_count: int = Field(ge=1)
    reason: str = Field(default="", max_length=2_000)


class HookExecutedV1(RunEventPayload):
    hook_event: str = Field(min_length=1, max_length=64)
    handler: str = Field(min_length=1, max_length=512)
    handler_type: str = Field(min_length=1, max_length=32)
    duration_ms: int = Field(ge=0)
    decision: Literal["none", "allow", "deny", "ask", "block", "rewrite", "context", "error"] = "none"
    reason: str | None = Field(default=None, max_length=4_000)
    error: ErrorInfo | None = None
    output: JsonObject | None = None


class TodosUpdatedV1(RunEventPayload):
    todos: tuple[JsonObject, ...] = Field(default=(), max_length=500)


class ChildRunStartedV1(RunEventPayload):
    child_run_id: RunId
    agent_name: str = Field(min_length=1, max_length=64)
    tool_call_id: ToolCallId | None = None


class MessageInjectedV1(RunEventPayload):
    """A user-role message the run added to the conversation besides the goal, so a history rebuilt from the log
    equals what the model was sent: `prompt_context` is appended to the goal (a UserPromptSubmit hook's
    additionalContext), `stop_feedback` is a message of its own (a Stop hook that made the agent continue)."""

    kind: Literal["prompt_context", "stop_feedback"]
    text: str = Field(min_length=1, max_length=1_048_576)


class MessageInjectedV2(RunEventPayload):
    """v1's kinds plus `continuation`: the run asked the model to go on with an answer the output limit cut
    (`model_turns.max_output_continuations`)."""

    kind: Literal["prompt_context", "stop_feedback", "continuation"]
    text: str = Field(min_length=1, max_length=1_048_576)


class ChildUsage(DomainModel):
    """What a child run consumed, charged to its parent when it finishes (wall time is not: it overlaps)."""

    model_iterations: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_microusd: int = Field(default=0, ge=0)


class ChildRunFinishedV2(RunEventPayload):
    """A finished child run (subagent, action tool, hook judge) and its usage, which the reducer adds to the
    parent's: a subagent's model calls count against the budgets of every ancestor."""

    child_run_id: RunId
    status: Literal["succeeded", "failed", "cancelled"]
    usage: ChildUsage = Field(default_factory=ChildUsage)


# ---- context accounting and compaction -----------------------------------------------------------------------

ModelCallPurpose: TypeAlias = Literal["turn", "compaction"]


class ModelCallRequestedV3(RunEventPayload):
    """v2 plus the size of the request (`runtime/context_size.py`) and what the call is for: a model turn of the
    conversation, or the summary of a compaction (closed by `ContextCompacted` instead of `ModelCallCompleted`)."""

    activity_id: ActivityId
    model_call_id: ModelCallId
    model_ref: str = Field(min_length=1, max_length=256)
    attempt: int = Field(default=1, ge=1, le=100)
    purpose: ModelCallPurpose = "turn"
    estimated_input_tokens: int = Field(default=0, ge=0)
    """The request's estimated size in tokens (system prompt, messages, tool specs), before it was sent."""
    estimator: str = Field(default="", max_length=64)
    """How it was estimated: `tiktoken:<encoding>`, or `chars/<n>` (characters per token), `×<f>` when corrected
    by the input tokens the provider reported for the run's previous call."""
    context_window: int | None = Field(default=None, ge=1)
    """The model's context window in tokens, when known; `context_window_source` says where it came from."""
    context_window_source: str | None = Field(default=None, max_length=32)


class ModelCallRequestedV4(ModelCallRequestedV3):
    """v3 plus the provider the call goes to: the model entry's `provider` id (`openai`, `openai-compatible`,
    `anthropic`, `scripted`, a plugin's id), so a reader of the log (the OpenTelemetry plugin's
    `gen_ai.provider.name`) knows it without the config the run had. None when the plan did not say (a plan built
    outside the planner). A v4 is a v3 to every reader that only needs v3's fields (it subclasses it)."""

    provider: str | None = Field(default=None, min_length=1, max_length=64)


class ContextCompactedV1(RunEventPayload):
    """Earlier turns of the conversation were summarised: the summary replaces the first `replaced_messages`
    messages of the working history (counted after the system prompt, as `runtime/history.py` rebuilds it at this
    point of the log) and the rest stays verbatim. Closes the compaction's model call (its `ModelCallRequested` v3
    has purpose `compaction`) with its usage, so budgets count it; the replaced events stay in the log."""

    activity_id: ActivityId
    model_call_id: ModelCallId
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_microusd: int = Field(default=0, ge=0)
    summary: str = Field(min_length=1, max_length=1_048_576)
    replaced_messages: int = Field(ge=1)
    kept_messages: int = Field(ge=0)
    tokens_before: int = Field(ge=0)
    """Estimated tokens of the request before the compaction."""
    tokens_after: int = Field(ge=0)
    """Estimated tokens of the same request with the summary in place of the replaced messages."""
    trigger: Literal["threshold", "overflow", "manual"]
    focus: str | None = Field(default=None, max_length=4_000)
    model_ref: str = Field(min_length=1, max_length=256)
    model: str | None = Field(default=None, max_length=256)
    provider_request_id: str | None = Field(default=None, max_length=256)


# ---- workspace file changes (rewind) -----------------------------------------------------------------------


class FileState(DomainModel):
    """One path as it was (or became): a regular file (its content by sha256 in the blob store), a symlink (its
    target) or a directory. `restorable` is False when the content exceeded the blob store's limit: the hash is
    recorded, the bytes are not."""

    kind: Literal["file", "symlink", "dir"]
    mode: int = Field(ge=0, le=0o7777)
    size: int = Field(default=0, ge=0)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    target: str | None = Field(default=None, max_length=4_096)
    restorable: bool = True


class FileChange(DomainModel):
    """A workspace path a tool call changed: `before` None (created), `after` None (deleted), both (modified)."""

    path: str = Field(min_length=1, max_length=4_096)
    """Relative to the workspace root, `/`-separated."""
    before: FileState | None = None
    after: FileState | None = None


class FilesChangedV1(RunEventPayload):
    """What one tool call (Write, Edit, MultiEdit, NotebookEdit, Bash...) changed in the workspace, with what each
    change replaced, so `bearagent rewind` can restore it (`rewind/`). `unrecorded` counts changes seen but not listed
    (over `max_changes`); `note` says why capture was partial (a tree over the scan limit)."""

    tool_call_id: ToolCallId | None = None
    tool_name: str = Field(min_length=1, max_length=128)
    changes: tuple[FileChange, ...] = Field(default=(), max_length=10_000)
    unrecorded: int = Field(default=0, ge=0)
    note: str | None = Field(default=None, max_length=2_000)


class FilesRewoundV1(RunEventPayload):
    """A rewind, recorded in the run it undid (so a later rewind of the same run sees it; a rewind is a fact that can
    itself be rewound): every path put back, from what (`before`: the content it had then, kept in the blob store) to
    what (`after`), and the point it went back to."""

    to_tool_call_id: ToolCallId | None = None
    """The tool call the files were rewound to the state before (None: before the whole run)."""
    changes: tuple[FileChange, ...] = Field(default=(), max_length=10_000)
    forced: tuple[str, ...] = Field(default=(), max_length=10_000)
    """Paths changed by someone else since the run that `--force` overwrote (their content kept in the blob store)."""


class ConversationRewoundV1(RunEventPayload):
    """The session's conversation was rewound: from this fact on, the history a next run of the session is given
    is the conversation as it stood before event `to_sequence` of run `to_run_id` (None: before that run began),
    as `runtime/session_history.py` rebuilds it. Recorded in the session's latest run (a finished run accepts it);
    the events it rewound stay in the log, and a later rewind to a point before this fact brings them back."""

    to_run_id: RunId
    to_sequence: int | None = Field(default=None, ge=1)
    to_tool_call_id: ToolCallId | None = None
    """The tool call the conversation was rewound to (before its request), when that is how it was named."""


_CURRENT_PAYLOADS: dict[tuple[str, int], type[RunEventPayload]] = {
    ("RunCreated", 2): RunCreatedV2,
    ("RunCreated", 3): RunCreatedV3,
    ("RunCreated", 4): RunCreatedV4,
    ("RunStarted", 1): RunStartedV1,
    ("RunStarted", 2): RunStartedV2,
    ("RunStarted", 3): RunStartedV3,
    ("RunInterrupted", 1): RunInterruptedV1,
    ("RunResumed", 1): RunResumedV1,
    ("ToolCallAbandoned", 1): ToolCallAbandonedV1,
    ("ApprovalRequested", 1): ApprovalRequestedV1,
    ("ApprovalResolved", 1): ApprovalResolvedV1,
    ("ElicitationRequested", 1): ElicitationRequestedV1,
    ("ElicitationResolved", 1): ElicitationResolvedV1,
    ("RunSucceeded", 2): RunSucceededV2,
    ("RunFailed", 2): RunFailedV2,
    ("RunCancelled", 1): RunCancelledV1,
    ("ModelCallStarted", 1): ModelCallStartedV1,
    ("ModelCallCompleted", 2): ModelCallCompletedV2,
    ("ModelCallFailed", 2): ModelCallFailedV2,
    ("ToolCallRequested", 2): ToolCallRequestedV2,
    ("ToolCallStarted", 1): ToolCallStartedV1,
    ("ToolCallCompleted", 2): ToolCallCompletedV2,
    ("ToolCallFailed", 2): ToolCallFailedV2,
    ("AgentSwitched", 1): AgentSwitchedV1,
    ("HookExecuted", 1): HookExecutedV1,
    ("TodosUpdated", 1): TodosUpdatedV1,
    ("ChildRunStarted", 1): ChildRunStartedV1,
    ("ChildRunFinished", 2): ChildRunFinishedV2,
    ("MessageInjected", 1): MessageInjectedV1,
    ("MessageInjected", 2): MessageInjectedV2,
    ("ModelCallRequested", 3): ModelCallRequestedV3,
    ("ModelCallRequested", 4): ModelCallRequestedV4,
    ("ContextCompacted", 1): ContextCompactedV1,
    ("FilesChanged", 1): FilesChangedV1,
    ("FilesRewound", 1): FilesRewoundV1,
    ("ConversationRewound", 1): ConversationRewoundV1,
}

LEGACY_PAIRS: Mapping[tuple[str, int], str] = MappingProxyType(
    {
        ("RunCreated", 1): "RunCreatedV1",
        ("RunSucceeded", 1): "RunSucceededV1",
        ("RunFailed", 1): "RunFailedV1",
        ("ModelCallRequested", 1): "ModelCallRequestedV1",
        ("ModelCallRequested", 2): "ModelCallRequestedV2",
        ("ModelCallCompleted", 1): "ModelCallCompletedV1",
        ("ModelCallFailed", 1): "ModelCallFailedV1",
        ("ToolCallRequested", 1): "ToolCallRequestedV1",
        ("ToolCallCompleted", 1): "ToolCallCompletedV1",
        ("ToolCallFailed", 1): "ToolCallFailedV1",
        ("ChildRunFinished", 1): "ChildRunFinishedV1",
    }
)
"""The versions BearAgent no longer writes, by the name of their model in `run_events_legacy` (loaded on first use)."""
_LEGACY_MODULE = "bearagent.domain.run_events_legacy"


def _legacy_payloads() -> Mapping[tuple[str, int], type[RunEventPayload]]:
    from bearagent.domain.run_events_legacy import LEGACY_RUN_EVENT_PAYLOADS

    return LEGACY_RUN_EVENT_PAYLOADS


class _PayloadCatalogue(Mapping[tuple[str, int], type[RunEventPayload]]):
    """Every known `(event_type, schema_version)` pair and its model. The pairs of old versions are known without
    their models: membership, iteration and `len` never load them; looking one up does (`run_events_legacy`)."""

    __slots__ = ()

    def __getitem__(self, key: tuple[str, int]) -> type[RunEventPayload]:
        model = _CURRENT_PAYLOADS.get(key)
        if model is not None:
            return model
        if key in LEGACY_PAIRS:
            return _legacy_payloads()[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in _CURRENT_PAYLOADS or key in LEGACY_PAIRS

    def __iter__(self) -> Iterator[tuple[str, int]]:
        yield from _CURRENT_PAYLOADS
        yield from LEGACY_PAIRS

    def __len__(self) -> int:
        return len(_CURRENT_PAYLOADS) + len(LEGACY_PAIRS)


RUN_EVENT_PAYLOADS: Mapping[tuple[str, int], type[RunEventPayload]] = _PayloadCatalogue()
"""The model of each `(event_type, schema_version)` pair, fail-closed lookups through `payload_type_for`."""

LATEST_VERSIONS: Mapping[str, int] = {
    event_type: max(v for (t, v) in RUN_EVENT_PAYLOADS if t == event_type)
    for (event_type, _version) in RUN_EVENT_PAYLOADS
}


def payload_type_for(event_type: str, schema_version: int) -> type[RunEventPayload]:
    """The payload model for a pair; `BearAgentError(validation.unknown_event)` when there is none."""
    model = RUN_EVENT_PAYLOADS.get((event_type, schema_version))
    if model is None:
        known = sorted(v for (t, v) in RUN_EVENT_PAYLOADS if t == event_type)
        hint = f"known versions of {event_type}: {known}" if known else "no such event type is known"
        raise BearAgentError(
            ErrorInfo.of(
                "validation",
                "unknown_event",
                f"unknown run event {event_type!r} v{schema_version} ({hint}); upgrade BearAgent to read this log",
            )
        )
    return model


def parse_run_event_payload(event_type: str, schema_version: int, payload: Mapping[str, JsonValue]) -> RunEventPayload:
    """Validate `payload` against the exact model for `(event_type, schema_version)`; fail closed otherwise."""
    model = payload_type_for(event_type, schema_version)
    if type(payload) is MappingProxyType:
        # a frozen payload (an `Event`'s): its top level as a plain dict, which pydantic reads without going
        # through the mapping protocol key by key (the same fields, values and errors; nested values are shared)
        payload = payload.copy()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType]
    try:
        return model.__pydantic_validator__.validate_python(payload)  # `model_validate` without its wrapper
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "payload"
        raise BearAgentError(
            ErrorInfo.of(
                "validation",
                "invalid_event_payload",
                f"{event_type} v{schema_version}: {where}: {first['msg']}",
            )
        ) from exc


_PAIR_OF_MODEL: Mapping[type[RunEventPayload], tuple[str, int]] = {m: k for k, m in _CURRENT_PAYLOADS.items()}


def _pair_of(payload: RunEventPayload) -> tuple[str, int] | None:
    pair = _PAIR_OF_MODEL.get(type(payload))
    if pair is None and _LEGACY_MODULE in sys.modules:  # an old version's payload exists only once they are loaded
        pair = next((k for k, m in _legacy_payloads().items() if m is type(payload)), None)
    return pair


def event_type_of(payload: RunEventPayload) -> tuple[str, int]:
    """The `(event_type, schema_version)` pair a payload instance is stored under."""
    pair = _pair_of(payload)
    if pair is None:
        raise KeyError(f"{type(payload).__name__} is not a registered run event payload")
    return pair


def __getattr__(name: str) -> type[RunEventPayload]:
    """PEP 562: the old versions' models, still importable from here (`from bearagent.domain.run_events import
    RunCreatedV1`), load `run_events_legacy` when first named."""
    if name in LEGACY_PAIRS.values():
        from bearagent.domain import run_events_legacy

        model: type[RunEventPayload] = getattr(run_events_legacy, name)
        return model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

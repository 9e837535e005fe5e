"""What a caller passes to a run (`RunOptions`) and gets back (`RunResult`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bearagent.domain._base import JsonValue
from bearagent.domain.budgets import BudgetUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.run_events import TriggerType
from bearagent.runtime.loop_state import RunOutcome
from bearagent.runtime.plan import CommandExpansion
from bearagent.service.planner import RunChoices


@dataclass(frozen=True, slots=True)
class RunResult:
    """The final record of a run (`bearagent run --json` prints `to_json()`)."""

    run_id: RunId
    session_id: SessionId | None
    agent: str
    status: str
    final: str
    usage: BudgetUsage
    error: ErrorInfo | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "run_id": str(self.run_id),
            "session_id": str(self.session_id) if self.session_id is not None else None,
            "agent": self.agent,
            "status": self.status,
            "final": self.final,
            "usage": {
                "model_iterations": self.usage.model_iterations,
                "tool_calls": self.usage.tool_calls,
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cost_microusd": self.usage.cost_microusd,
                "wall_time_ms": self.usage.wall_time_ms,
            },
            "error": None
            if self.error is None
            else {
                "category": self.error.category,
                "code": self.error.code,
                "message": self.error.message,
                "retryable": self.error.retryable,
            },
        }


def result_of(outcome: RunOutcome, session_id: SessionId | None) -> RunResult:
    """The caller's record of a loop's outcome (a run, a resumed run, `/compact`)."""
    return RunResult(
        run_id=outcome.run_id,
        session_id=session_id,
        agent=outcome.agent_name,
        status=outcome.status,
        final=outcome.final_text,
        usage=outcome.usage,
        error=outcome.error,
    )


@dataclass
class RunOptions:
    agent: str | None = None
    model: str | None = None
    session: str | None = None  # None = a new session; "continue" = the latest one; else a session id
    budgets: Mapping[str, int] = field(default_factory=dict[str, int])
    wait_for_session: bool = True
    trigger_type: TriggerType = "message"
    trigger_ref: str | None = None
    allowed_tools: tuple[str, ...] = ()
    """Permission rules pre-approved for this run only (a custom command's `allowed-tools`)."""
    wait_approvals: bool = False
    """When nobody is attached to answer an `ask`: leave the run `waiting` (ApprovalRequested) for someone to answer
    later (`bearagent approvals answer`) instead of denying the call at once."""
    run_id: RunId | None = None
    """The id the run gets (new by default): known up front, a live subscriber can follow the run from its start."""
    initiator_ref: str | None = None
    """Who started the run (the HTTP caller's subject), recorded on it; None: the local user (`local_initiator`)."""
    auth_context: Mapping[str, JsonValue] | None = None
    """A snapshot of the caller context the run was started with (never a token), recorded on it."""
    metadata: Mapping[str, JsonValue] | None = None
    """The client's own fields for the run (seed 002's `Run.metadata`), recorded on it; bounded (`run_metadata`)."""
    caller: str = "local"
    """Who runs it: a new session is this caller's, `continue` takes this caller's latest one, and an answer given
    by an attached asker is recorded as this caller's. The caller travels with the run, so one workspace service
    serves every caller."""
    expansion: CommandExpansion | None = None
    """The slash command the prompt was expanded from (`/name args`): UserPromptExpansion hooks see it."""
    user_shell: str | None = None
    """`!cmd` in the interactive session: the run's only tool call is `Bash{command: user_shell}`, made by a
    stand-in model (`service/user_shell.py`) through the gate, the hooks, the sandbox and the log."""
    choices: RunChoices = field(default_factory=RunChoices)
    """The caller's own choices for the run's top-level agent (`run --disallowed-tools`, `--system-prompt`,
    `--append-system-prompt`, `--add-dir`), recorded in its sealed request."""


def local_initiator() -> str:
    """The `initiator_ref` of a run started on this machine (CLI, Python API): `local:<uid>` of the process's user
    (`local:<name>` where there are no uids)."""
    import os

    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        return f"local:{getuid()}"
    import getpass

    return f"local:{getpass.getuser()}"


def local_user_name() -> str:
    """The name of this process's user, for what a person reads (an answer's `cli:NAME`, a cancel's reason):
    `getpass.getuser()` (the LOGNAME/USER variables, then the password database), else `uid N` where neither
    knows it (a container's uid without an entry), never an error."""
    import getpass
    import os

    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):  # 3.11 raises KeyError, 3.13 OSError; ImportError without pwd
        getuid = getattr(os, "getuid", None)
        return f"uid {getuid()}" if getuid is not None else "unknown user"


RESERVED_METADATA = frozenset({"model_ref", "depth", "prompt_hash", "prompt_version"})
"""Keys of a run record's `metadata` the runtime fills itself (`server/records.py`); a client may not set them."""


def run_metadata(value: Mapping[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    """A run's client metadata checked: scalar values, bounded and key-filtered as error details are
    (`domain.errors.bounded_details`), none of the runtime's own keys. `BearAgentError(invalid_request.metadata)`
    naming the problem otherwise."""
    if not value:
        return None
    from bearagent.domain.errors import BearAgentError, ErrorInfo, bounded_details

    taken = sorted(RESERVED_METADATA & set(value))
    try:
        if taken:
            raise ValueError(f"metadata key {taken[0]!r} is the runtime's own")
        return dict(bounded_details(value))
    except ValueError as exc:
        raise BearAgentError(
            ErrorInfo.of("invalid_request", "metadata", f"the run's metadata was refused: {exc}"),
            hint="send at most 32 keys of up to 64 characters with string, number, boolean or null values of up to "
            "1,024 characters, none naming a secret (token, password, ...) or one of "
            + ", ".join(sorted(RESERVED_METADATA)),
        ) from None

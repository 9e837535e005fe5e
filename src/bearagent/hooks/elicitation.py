"""Claude Code's Elicitation / ElicitationResult hook events around an MCP server's question (MCP elicitation).

`Elicitation` fires when a server asks during a tool call (matcher: the server's name; input `mcp_server_name`,
`message`, `mode`, `requested_schema` or `url`, `elicitation_id`). A handler answers with
`hookSpecificOutput: {hookEventName: "Elicitation", action: "accept"|"decline"|"cancel", content: {...}}`; exit 2
(or `decision: "block"`, `continue: false`) declines. Several answers: a decline or cancel wins over an accept, the
first accept in config order gives the content. No hook answer: the `ask_person` callback (the interactive session)
is asked, else BearAgent declines and the model reads the question.

`ElicitationResult` fires with the answer about to be sent (`action`, `content`): a handler may replace it with
the same `hookSpecificOutput` fields; exit 2 turns it into a decline. Both executions are `HookExecuted` facts of
the run, with each handler's output, so the log says who answered what.
"""

from __future__ import annotations

from typing import cast

from bearagent.domain._base import JsonValue
from bearagent.hooks.dispatcher import HookDispatcher, HookOutcome
from bearagent.mcp.elicitation import ElicitAction, ElicitationAnswer, ElicitationQuestion, Elicitor, PersonAsker
from bearagent.ports import ToolContext

_ACTIONS: frozenset[str] = frozenset({"accept", "decline", "cancel"})


def _answers(outcome: HookOutcome) -> list[tuple[ElicitAction, dict[str, JsonValue] | None]]:
    """Each handler's `hookSpecificOutput.action` / `content`, in config order."""
    out: list[tuple[ElicitAction, dict[str, JsonValue] | None]] = []
    for handler in outcome.handlers:
        raw = handler.reply.raw
        specific = raw.get("hookSpecificOutput") if raw is not None else None
        if not isinstance(specific, dict):
            continue
        action = specific.get("action")
        content = specific.get("content")
        if isinstance(action, str) and action in _ACTIONS:
            out.append((cast(ElicitAction, action), content if isinstance(content, dict) else None))
    return out


def _decided(outcome: HookOutcome, fallback: ElicitationAnswer | None) -> ElicitationAnswer | None:
    """The hooks' answer: a block declines, a decline or cancel beats an accept; `fallback` when none answered."""
    if outcome.blocked or not outcome.continue_:
        return ElicitationAnswer("decline", None, answered_by=fallback.answered_by if fallback is not None else "hook")
    answers = _answers(outcome)
    if not answers:
        return fallback
    refusal: ElicitAction | None = next((a for a, _ in answers if a != "accept"), None)
    if refusal is not None:
        return ElicitationAnswer(refusal, None, answered_by="hook")
    content = next((c for _, c in answers if c is not None), None)
    return ElicitationAnswer("accept", content if content is not None else {}, answered_by="hook")


def hook_elicitor(dispatcher: HookDispatcher | None, ask_person: PersonAsker | None = None) -> Elicitor:
    """The elicitor of a run's tool calls: the Elicitation hooks, then `ask_person`, then a decline; the
    ElicitationResult hooks see (and may change) the answer last."""

    async def ask(question: ElicitationQuestion, context: ToolContext) -> ElicitationAnswer:
        run_id = str(context.run_id) if context.run_id else None
        answer: ElicitationAnswer | None = None
        if dispatcher is not None and dispatcher.has_hooks("Elicitation"):
            payload: dict[str, JsonValue] = {
                "mcp_server_name": question.server,
                "message": question.message,
                "mode": question.mode,
                "url": question.url,
                "elicitation_id": question.elicitation_id,
                "requested_schema": question.requested_schema,
            }
            fired = await dispatcher.fire("Elicitation", payload, run_id=run_id, agent_name=context.agent_name)
            answer = _decided(fired, None)
        if answer is None and ask_person is not None:
            answer = await ask_person(question, context)
        if answer is None:
            answer = ElicitationAnswer("decline", None, answered_by="nobody")
        if dispatcher is not None and dispatcher.has_hooks("ElicitationResult"):
            result: dict[str, JsonValue] = {
                "mcp_server_name": question.server,
                "action": answer.action,
                "content": answer.content,
                "mode": question.mode,
                "elicitation_id": question.elicitation_id,
            }
            fired = await dispatcher.fire("ElicitationResult", result, run_id=run_id, agent_name=context.agent_name)
            answer = _decided(fired, answer) or answer
        return answer

    return ask


__all__ = ["hook_elicitor"]

"""Compaction: earlier turns of a conversation replaced by a summary a model writes, so a long session fits the
model's context window (Claude Code's auto-compact, Codex's compaction). Pure: which messages are replaced, the
request that asks for their summary, and the message the summary becomes. The model call itself is a step of
the run (`ModelCalls.compact`): `ModelCallRequested` v3 with purpose `compaction`, closed by `ContextCompacted`,
so budgets count it and the history rebuilt from the log (`runtime/history.py`) is the compacted one.

A *turn* here is one user message, or one assistant message with the tool results that answer it: the unit that
is kept or replaced whole, so a tool call is never split from its result. The `keep_recent_turns` most recent
turns stay verbatim; everything before them becomes the summary (a previous summary included).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.domain.models import ModelRequest
from bearagent.runtime.context_size import CHARS_PER_TOKEN
from bearagent.runtime.plan import CompactionPlan

DEFAULT_COMPACTION_THRESHOLD = 0.8
DEFAULT_KEEP_RECENT_TURNS = 2
DEFAULT_SUMMARY_WINDOW = 32_768
"""Tokens of transcript sent to a summary model whose window is unknown."""
MAX_TRANSCRIPT_HALVINGS = 3
"""How often a summary request the summary model's window could not hold is sent again with half the transcript."""
TOOL_RESULT_CHARS = 4_000
"""Characters of one tool result the summariser reads (head and tail): results are long, their gist is short."""

SUMMARY_OPENING = (
    "This session continues an earlier conversation that was compacted to fit the model's context window. "
    "Summary of the earlier part:"
)

SUMMARY_INSTRUCTIONS = """\
You write the summary that replaces the earlier part of a conversation between a user and an AI agent that uses \
tools, so that the agent can continue the work from the summary alone. Write it for the agent, in the language of \
the conversation. Keep:
- the user's requests and goals, with exact requirements, names, numbers, paths, identifiers and values verbatim;
- facts learnt on the way (what files contain, results of commands and tools, answers given) that may matter later;
- what was done and which files were changed;
- errors met and how they were resolved;
- what remains to be done and the step the work was at.
Leave out pleasantries and anything repeated. Output only the summary."""


def summary_message(summary: str) -> Message:
    """The user message a summary becomes in the working history (the loop and the history rebuild both use it)."""
    return Message.user(f"{SUMMARY_OPENING}\n\n{summary.strip()}")


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_OPENING)


def turn_starts(conversation: Sequence[Message]) -> list[int]:
    """Where each turn of `conversation` (the messages after the system prompt) begins: at every message that is
    not a tool result (a tool result belongs to the assistant message before it)."""
    return [i for i, message in enumerate(conversation) if message.role != "tool"]


def split_point(conversation: Sequence[Message], keep_recent_turns: int) -> int:
    """How many leading messages of `conversation` a compaction replaces: those before its `keep_recent_turns`
    most recent turns. 0 when there is nothing to summarise (too few turns, or only an earlier summary)."""
    starts = turn_starts(conversation)
    if len(starts) <= keep_recent_turns:
        return 0
    cut = starts[len(starts) - keep_recent_turns] if keep_recent_turns > 0 else len(conversation)
    if cut == 0 or (cut == 1 and is_summary(conversation[0])):
        return 0
    return cut


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters left out ...]\n{text[-half:]}"


def transcript(messages: Sequence[Message], max_chars: int) -> str:
    """`messages` as plain text for the summariser (no tool structures: any model can read it, with no tools
    offered), each tool result cut to `TOOL_RESULT_CHARS`; when the whole is longer than `max_chars`, its oldest
    part is left out and a line says so."""
    blocks: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text.strip():
                    blocks.append(f"[{message.role}]\n{part.text.strip()}")
            elif isinstance(part, ToolCallPart):
                arguments = json.dumps(thaw_json_mapping(part.arguments), ensure_ascii=False)
                blocks.append(f"[assistant calls {part.name}] {_bounded(arguments, TOOL_RESULT_CHARS)}")
            else:
                status = "error" if part.is_error else "result"
                blocks.append(f"[{status} of {part.name}]\n{_bounded(part.content, TOOL_RESULT_CHARS)}")
    text = "\n\n".join(blocks)
    if len(text) <= max_chars:
        return text
    kept = text[len(text) - max_chars :]
    return f"[... the first {len(text) - max_chars:,} characters of the conversation are left out ...]\n{kept}"


def summary_request(
    plan: CompactionPlan, replaced: Sequence[Message], focus: str | None, *, max_chars: int | None = None
) -> ModelRequest:
    """The request for the summary of `replaced`: instructions as the system prompt, the transcript (cut to
    `max_chars`, by default three quarters of the summary model's window) as one user message, no tools."""
    if max_chars is None:
        max_chars = int((plan.context_window or DEFAULT_SUMMARY_WINDOW) * 0.75 * CHARS_PER_TOKEN)
    ask = "Write the summary of the conversation above."
    if focus and focus.strip():
        ask += f" Focus it on: {focus.strip()}"
    body = f"<conversation>\n{transcript(replaced, max_chars)}\n</conversation>\n\n{ask}"
    return ModelRequest(
        model=plan.model_name,
        messages=(Message.system(SUMMARY_INSTRUCTIONS), Message.user(body)),
        max_output_tokens=plan.max_output_tokens,
        timeout_ms=plan.timeout_ms,
    )


def transcript_chars(request: ModelRequest) -> int:
    """How long the transcript in a summary request is."""
    return len(request.messages[-1].text)


def compacted(conversation: Sequence[Message], replaced: int, summary: str) -> list[Message]:
    """`conversation` with its first `replaced` messages replaced by the summary message."""
    return [summary_message(summary), *conversation[replaced:]]

"""How the parts of an answer the output limit cut are joined (`model_turns.max_output_continuations`).

The model is asked to continue exactly where it stopped, and the parts are joined as they are when it does (`scho` +
`ol`, `the end` + `. Next`). Models often do not: they repeat the last words, or start a new sentence. So:

- inside an open fenced code block the parts are joined as they are (code is never touched);
- a start that repeats the end of what came before (at least 12 characters, up to 400) is dropped once;
- when the part before ends in a letter, digit or sentence punctuation and the next starts with a capital letter
  (`...school` + `Once upon`), a space goes between them, so the final text does not read `schoolOnce upon`;
- otherwise (a word continued in lower case, whitespace or punctuation at the seam) they are joined as they are.
"""

from __future__ import annotations

MIN_OVERLAP = 12
MAX_OVERLAP = 400


def _in_code_fence(text: str) -> bool:
    fences = sum(1 for line in text.split("\n") if line.lstrip().startswith(("```", "~~~")))
    return fences % 2 == 1


def join_continuation(before: str, after: str) -> str:
    """`before` followed by `after`, the part that continued it (see the module docstring)."""
    if not before or not after or _in_code_fence(before):
        return before + after
    for size in range(min(len(after), len(before), MAX_OVERLAP), MIN_OVERLAP - 1, -1):
        if before.endswith(after[:size]):
            return before + after[size:]
    last, first = before[-1], after[0]
    if (last.isalnum() or last in ".!?:;,") and first.isupper():
        return before + " " + after
    return before + after


def join_parts(parts: list[str]) -> str:
    joined = ""
    for part in parts:
        joined = join_continuation(joined, part) if joined else part
    return joined

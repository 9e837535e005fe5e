"""Context overflow: how model APIs and servers say that a request does not fit in the model's context window, and
the one test the runtime asks (`is_context_overflow`), so the loop can react to it (compact, then retry) whatever
provider or server said it.

Each server has its own words, collected from their error bodies (the fixtures in
`tests/fixtures/providers/*/error_*context*.json` are real or reproduced bodies of each):

- OpenAI (Chat and Responses): code `context_length_exceeded`; "This model's maximum context length is 128000
  tokens...", "Your input exceeds the context window of this model...".
- Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"; "input length and `max_tokens` exceed context
  limit: 198000 + 8192 > 200000"; the stop reason `model_context_window_exceeded`.
- llama.cpp's llama-server (all three protocols): type `exceed_context_size_error`, "request (433 tokens) exceeds the
  available context size (256 tokens), try increasing it".
- llama-cpp-python: OpenAI's shape, code `context_length_exceeded`.
- vLLM: "This model's maximum context length is 4096 tokens. However, you requested ..." (type `BadRequestError`).
- Ollama: "the input length exceeds the context length"; newer releases pass llama-server's text through.
- LM Studio: "Trying to keep the first 14538 tokens when context the overflows...", "The number of tokens to keep
  from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096)...".
- Others that reuse OpenAI's wording (DeepSeek, Mistral, OpenRouter, Groq), Gemini's OpenAI endpoint ("The input
  token count (N) exceeds the maximum number of tokens allowed (M)"), Hugging Face TGI ("`inputs` tokens +
  `max_new_tokens` must be <= 4096").
"""

from __future__ import annotations

import re

from bearagent.domain.errors import ErrorInfo

OVERFLOW_CODES: frozenset[str] = frozenset({"context_length_exceeded", "exceed_context_size_error"})
"""Provider error codes and types that mean a context overflow, whatever the message says."""

OVERFLOW_TEXT = re.compile(
    "|".join(
        (
            r"prompt is too long",
            r"context[_ ]length[_ ]exceeded",
            r"exceed_context_size",
            r"maximum context length",
            r"exceeds? (?:the )?(?:available |maximum )?context (?:size|length|window|limit)",
            r"context the overflows|when context overflows",
            r"tokens to keep from the initial prompt is greater than the context length",
            r"input token count .{0,40}exceeds the maximum number of tokens",
            r"`inputs` tokens \+ `max_new_tokens` must be",
            r"model_context_window_exceeded",
        )
    ),
    re.IGNORECASE,
)
"""Wordings that only a context overflow uses: an error saying one of them is an overflow, whatever its status."""

LOOSE_OVERFLOW_TEXT = re.compile(
    r"context length|context window|too many tokens|input is too long|reduce the length", re.IGNORECASE
)
"""Wordings that mean an overflow when the server also says the request was invalid (HTTP 400/413,
`invalid_request_error`), and may mean something else otherwise."""

CONTEXT_OVERFLOW_FIX = (
    "Shorten the conversation: start a new session (omit `--continue`), ask for less at once, or have tools return "
    "less; or lower `max_output_tokens` (the answer needs room in the window too); or use a model, or start the "
    "local server, with a larger context window (llama-server `-c`, Ollama `num_ctx`)."
)
"""What a `context_overflow` error tells the user to do (the same for every provider)."""


def says_context_overflow(text: str) -> bool:
    """Whether an error text uses a wording only a context overflow uses (`OVERFLOW_TEXT`)."""
    return OVERFLOW_TEXT.search(text) is not None


def is_context_overflow(error: ErrorInfo) -> bool:
    """Whether a failed model call failed because the request does not fit in the model's context window: its
    category is `context_overflow` (every built-in adapter and the plugin kit classify it so), or a provider that
    classifies errors itself called it `invalid_request` with an overflow's wording. The loop asks this to decide on
    compacting the history and retrying once."""
    if error.category == "context_overflow":
        return True
    return error.category == "invalid_request" and says_context_overflow(error.message)

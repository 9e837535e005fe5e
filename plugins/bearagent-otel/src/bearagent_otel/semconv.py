"""Which revision of the OpenTelemetry GenAI semantic conventions the spans follow, and how each names things.

The conventions are still in development and renamed attributes between revisions; instrumentations pick the
revision with `OTEL_SEMCONV_STABILITY_OPT_IN` (a comma-separated list), and so does this plugin:

- default: **v1.36.0**, what most backends and dashboards read today: the provider in `gen_ai.system` (its
  well-known values of that revision: `az.ai.openai`, `xai`...), message content (when captured) as span events
  (`gen_ai.user.message`, `gen_ai.choice`, `gen_ai.tool.message`).
- `gen_ai_latest_experimental` in the list: the latest revision: the provider in `gen_ai.provider.name`
  (`azure.ai.openai`, `x_ai`...), content as the attributes `gen_ai.input.messages`, `gen_ai.output.messages`,
  `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.

Never both: a span carries one revision's names. The raw provider id of the model entry (`openai-compatible`, a
plugin's id) is in `bearagent.model.provider` either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

OPT_IN_VAR = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST_EXPERIMENTAL = "gen_ai_latest_experimental"

# BearAgent provider id (a built-in, or a plugin's id spelled after the service) -> (v1.36.0 `gen_ai.system`,
# latest `gen_ai.provider.name`). An OpenAI-compatible server speaks OpenAI's API: the conventions say the value is
# the instrumentation's best knowledge of the API, which is `openai`.
WELL_KNOWN: Mapping[str, tuple[str, str]] = {
    "openai": ("openai", "openai"),
    "openai-compatible": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "azure-openai": ("az.ai.openai", "azure.ai.openai"),
    "azure.ai.openai": ("az.ai.openai", "azure.ai.openai"),
    "azure-ai-inference": ("az.ai.inference", "azure.ai.inference"),
    "azure.ai.inference": ("az.ai.inference", "azure.ai.inference"),
    "bedrock": ("aws.bedrock", "aws.bedrock"),
    "aws-bedrock": ("aws.bedrock", "aws.bedrock"),
    "aws.bedrock": ("aws.bedrock", "aws.bedrock"),
    "gemini": ("gcp.gemini", "gcp.gemini"),
    "gcp.gemini": ("gcp.gemini", "gcp.gemini"),
    "vertex": ("gcp.vertex_ai", "gcp.vertex_ai"),
    "vertex-ai": ("gcp.vertex_ai", "gcp.vertex_ai"),
    "gcp.vertex_ai": ("gcp.vertex_ai", "gcp.vertex_ai"),
    "cohere": ("cohere", "cohere"),
    "deepseek": ("deepseek", "deepseek"),
    "groq": ("groq", "groq"),
    "mistral": ("mistral_ai", "mistral_ai"),
    "mistral_ai": ("mistral_ai", "mistral_ai"),
    "perplexity": ("perplexity", "perplexity"),
    "xai": ("xai", "x_ai"),
    "x_ai": ("xai", "x_ai"),
    "watsonx": ("ibm.watsonx.ai", "ibm.watsonx.ai"),
    "ibm.watsonx.ai": ("ibm.watsonx.ai", "ibm.watsonx.ai"),
}


@dataclass(frozen=True, slots=True)
class Semconv:
    """The names of one revision of the conventions."""

    latest: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Semconv:
        values = {part.strip().lower() for part in env.get(OPT_IN_VAR, "").split(",")}
        return cls(latest=LATEST_EXPERIMENTAL in values)

    @property
    def provider_key(self) -> str:
        """The attribute that names the provider."""
        return "gen_ai.provider.name" if self.latest else "gen_ai.system"

    def provider_value(self, provider_id: str) -> str:
        """The provider's well-known value in this revision; an id the conventions do not know goes as it is (they
        allow custom values: a plugin's provider, `scripted`)."""
        known = WELL_KNOWN.get(provider_id)
        if known is None:
            return provider_id
        return known[1] if self.latest else known[0]

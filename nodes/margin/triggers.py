"""The margin estimator, registered: the gated graph's estimate of the margin gate, and the
trigger "margin" of the look-ahead graphs (a FLARE run with trigger "margin")."""

from __future__ import annotations

from activerag.errors import NoLogprobs
from activerag.nodes.estimators import register_estimator
from activerag.nodes.margin import logic
from activerag.nodes.margin.context import MarginContext
from activerag.nodes.triggers import Tokens
from activerag.state import FlareState

THRESHOLD = 1.0
"""Retrieve when the mean margin (nats) is below this: the best alternative less than e times
as likely as the second, on average over the prefix. Fixed before any run, not tuned on
any question (docs/margin.md)."""


@register_estimator("margin", THRESHOLD, top_logprobs=2, above=False)
def mean_margin(tokens: Tokens, state: FlareState, ctx: object = None) -> float | None:
    """The mean top-1/top-2 margin of the answer's first margin_prefix tokens."""
    if not tokens:
        return None
    tops = list(state.get("step", {}).get("tops") or [])
    if not any(tops):
        raise NoLogprobs("the margin estimator reads each token's two best alternatives and "
                         "the answer came without them; serve the model with vLLM or "
                         "llama-server, whose completions return top logprobs")
    prefix = int(getattr(ctx, "margin_prefix", MarginContext.margin_prefix))
    return logic.mean_margin(tops, prefix)

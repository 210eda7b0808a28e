"""Uncertainty estimators (Moskvoretskii et al. 2025): a value of a whole answer, which the
gated graph (graphs/gated.py) compares with the estimator's threshold, and which, over a draft's
tokens, is also a trigger of the look-ahead graphs (registered with nodes/triggers.py's
`register` under the estimator's name). The shipped ones are the families' own
(nodes/gated/triggers.py: the entropies, perplexity, Lex-Similarity; nodes/margin/triggers.py:
the margin), registered with `register_estimator` when graphs/base.py imports them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from activerag import trigger_names
from activerag.context import FlareContext
from activerag.nodes.triggers import Tokens, measures, register, registered
from activerag.state import FlareState

Estimate = Callable[[Tokens, FlareState, Any], float | None]
"""An estimate of an answer from its tokens, the state and the run's context (None: no value)."""


@dataclass(frozen=True)
class Estimator:
    """An uncertainty estimate of an answer (None: it has no tokens to be sure of)."""

    value: Estimate
    threshold: float
    """Its own threshold, fixed before any run (docs/gates.md says where it comes from)."""
    above: bool = True
    """Retrieve when the value is above the threshold (Lex-Similarity: below)."""
    samples: bool = False
    """It compares answers sampled for the question (step["samples"]): the gated graph draws
    them, and it is no trigger of the look-ahead graphs, whose drafts have none."""
    top_logprobs: int = 1
    """Top logprobs per token it reads."""

    def fires(self, value: float | None, threshold: float) -> bool:
        """Whether VALUE calls for retrieval: above THRESHOLD (`above`) or below it; an answer
        with no tokens (VALUE None) has nothing to be sure of, so it always does."""
        if value is None:
            return True
        return value > threshold if self.above else value < threshold


ESTIMATORS: dict[str, Estimator] = {}


def register_estimator(name: str, threshold: float, *, top_logprobs: int = 1,
                       above: bool = True, samples: bool = False) -> Callable[[Estimate],
                                                                                Estimate]:
    """Name an estimator, so that GateContext(estimator=NAME) gates with it; one that reads
    the answer's own tokens is also registered as the trigger NAME (its threshold the run's
    gate_threshold when that names it, else THRESHOLD)."""

    def add(fn: Estimate) -> Estimate:
        estimator = ESTIMATORS[name] = Estimator(fn, threshold, above, samples, top_logprobs)
        trigger_names.declare_estimator(name, top_logprobs, trigger=not samples)
        if not samples:
            def fire(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
                return estimator.fires(fn(tokens, state, ctx), estimator_threshold(ctx, name))

            fire.__name__ = fire.__qualname__ = f"{name}_trigger"
            register(name, top_logprobs)(fire)

            @measures(fire)
            def estimate(tokens: Tokens, state: FlareState, ctx: FlareContext
                         ) -> dict[str, Any]:
                value, threshold = fn(tokens, state, ctx), estimator_threshold(ctx, name)
                return {"measure": f"the {name} estimate (fires "
                                   f"{'above' if above else 'below'} the threshold)",
                        "value": value, "threshold": threshold,
                        "fire": estimator.fires(value, threshold)}
        return fn

    return add


def estimator_named(name: str) -> Estimator:
    """The registered estimator NAME, or an error listing the known ones."""
    trigger_names.check_estimator(name)
    return registered(ESTIMATORS, name, "estimator",
                      "activerag.nodes.estimators.register_estimator")


def estimator_threshold(ctx: object, name: str) -> float:
    """Estimator NAME's threshold in run CTX: the run's gate_threshold when its estimator is
    NAME and it sets one, else the estimator's own."""
    given = getattr(ctx, "gate_threshold", None)
    if given is not None and getattr(ctx, "estimator", None) == name:
        return float(given)
    return estimator_named(name).threshold

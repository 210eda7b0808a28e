"""Alternative retrieval triggers that drop into any look-ahead graph as its gate node."""

from __future__ import annotations

import math

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.nodes.common import Update
from activerag.state import FlareState


def mean_surprisal_gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Fire when the draft's mean surprisal exceeds -ln θ (its geometric-mean p is below θ).

    Where FLARE's gate reacts to the single least likely token, this one weighs every token.
    """
    probs = [p for _, p, _ in state.get("step", {}).get("tokens", [])]
    theta = runtime.context.theta
    if not probs or theta <= 0.0:
        return {"step": {"fire": False}}
    surprisal = sum(-math.log(max(p, 1e-12)) for p in probs) / len(probs)
    return {"step": {"fire": theta >= 1.0 or surprisal > -math.log(theta)}}

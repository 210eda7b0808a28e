"""Retrieval triggers: when a look-ahead graph retrieves for the sentence it drafted.

A trigger is a function of the draft's tokens (text, probability, offset), the state and the
run's context that says whether to retrieve; `register` names it, the context's `trigger`
field (CLI `--trigger`, a Studio settings field) picks one by name, and `trigger_gate` is the
gate node that asks it. An empty draft never retrieves, whatever the trigger.

    min_prob        FLARE (§3.2.1): any token below θ (the default)
    mean_surprisal  the draft's geometric-mean probability below θ: every token weighs
    entropy         some token's entropy over its top-20 alternatives (the client asks for
                    them only for this trigger), normalised, above 1 - θ
    never, always   the no-retrieval and every-sentence references
    every_n         every trigger_n answer tokens: a fixed schedule, blind to the draft
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.runtime import Runtime

from activerag.context import FlareContext
from activerag.errors import NoLogprobs, UnknownTrigger
from activerag.nodes.base import Update
from activerag.nodes.flare_logic import should_retrieve
from activerag.state import FlareState

Tokens = Sequence[tuple[str, float, int]]
Trigger = Callable[[Tokens, FlareState, FlareContext], bool]
TRIGGERS: dict[str, Trigger] = {}
TOP_LOGPROBS: dict[str, int] = {}
"""How many top logprobs per position each trigger needs the LM to return (1 if absent)."""


def register(name: str, top_logprobs: int = 1) -> Callable[[Trigger], Trigger]:
    """Name a trigger, so that `trigger=NAME` (or `--trigger NAME`) chooses it; TOP_LOGPROBS
    above 1 makes the LM client return that many alternatives per token (`step["tops"]`)."""

    def add(fn: Trigger) -> Trigger:
        TRIGGERS[name] = fn
        TOP_LOGPROBS[name] = top_logprobs
        return fn

    return add


def top_logprobs_for(ctx: object) -> int:
    """The top logprobs per token that CTX's trigger needs (1: the token's own)."""
    return TOP_LOGPROBS.get(getattr(ctx, "trigger", ""), 1)


def entropy(top: Sequence[float]) -> float:
    """A position's entropy in nats from its top alternatives' log-probabilities, the mass
    they leave out counted as one more outcome (so it is never above ln(len(top) + 1))."""
    probs = [math.exp(v) for v in top]
    probs.append(max(0.0, 1.0 - sum(probs)))
    return -sum(p * math.log(p) for p in probs if p > 0)


def trigger_named(name: str) -> Trigger:
    """The registered trigger NAME, or an error listing the known ones."""
    if name not in TRIGGERS:
        raise UnknownTrigger(f"unknown trigger {name!r}; known: {', '.join(sorted(TRIGGERS))} "
                         "(register one with activerag.nodes.triggers.register)")
    return TRIGGERS[name]


def _fire(trigger: Trigger, state: FlareState, ctx: FlareContext) -> Update:
    step: dict[str, Any] = dict(state.get("step", {}))
    if not step.get("draft", "").strip():
        return {"step": {"fire": False}}
    return {"step": {"fire": bool(trigger(step.get("tokens", []), state, ctx))}}


def trigger_gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
    """Node: fire retrieval when the context's trigger says so for a non-empty draft."""
    return _fire(trigger_named(runtime.context.trigger), state, runtime.context)


def fixed_gate(trigger: Trigger, name: str) -> Callable[..., Update]:
    """A gate node that asks TRIGGER whatever the context names (`build_flare_graph(gate=...)`)."""

    def gate(state: FlareState, runtime: Runtime[FlareContext]) -> Update:
        return _fire(trigger, state, runtime.context)

    gate.__name__ = name
    gate.__doc__ = f"Node: the {name.removesuffix('_gate')} trigger as a fixed gate."
    return gate


@register("min_prob")
def min_prob(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    return should_retrieve([p for _, p, _ in tokens], ctx.theta)


@register("mean_surprisal")
def mean_surprisal(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """Fire when the mean surprisal exceeds -ln θ (the geometric-mean p is below θ)."""
    probs = [p for _, p, _ in tokens]
    if not probs or ctx.theta <= 0.0:
        return False
    surprisal = sum(-math.log(max(p, 1e-12)) for p in probs) / len(probs)
    return ctx.theta >= 1.0 or surprisal > -math.log(ctx.theta)


@register("entropy", top_logprobs=20)
def token_entropy(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """Fire when some token's entropy over its top-20 alternatives, over its largest possible
    value ln 21, exceeds 1 - θ (θ = 0 never fires, θ = 1 fires on any doubt)."""
    tops = state.get("step", {}).get("tops") or []
    if tokens and not tops:
        raise NoLogprobs("the entropy trigger needs each token's top-20 logprobs and the draft "
                         "came without them; it needs the vLLM client, which asks for them")
    return any(entropy(top) / math.log(len(top) + 1) > 1.0 - ctx.theta for top in tops if top)


@register("never")
def never(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    return False


@register("always")
def always(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    return True


@register("every_n")
def every_n(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """Fire when this draft crosses a multiple of trigger_n answer tokens."""
    before = state.get("answer_tokens", 0)
    return (before + len(tokens)) // ctx.trigger_n > before // ctx.trigger_n


mean_surprisal_gate = fixed_gate(mean_surprisal, "mean_surprisal_gate")
always_fire = fixed_gate(always, "always_fire")
"""Retrieve for every sentence (Table 3's setting, the "next sentence" graph's gate)."""

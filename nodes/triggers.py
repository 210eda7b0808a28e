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

from activerag import trigger_names
from activerag.context import FlareContext
from activerag.errors import NoLogprobs, UnknownTrigger
from activerag.nodes.base import Update, node_name
from activerag.nodes.loop_logic import should_retrieve
from activerag.state import FlareState

Tokens = Sequence[tuple[str, float, int]]
Trigger = Callable[[Tokens, FlareState, FlareContext], bool]


def register(name: str, top_logprobs: int | None = None) -> Callable[[Trigger], Trigger]:
    """Name a trigger in the one registry (activerag.trigger_names.TRIGGERS), so that
    `trigger=NAME` (or `--trigger NAME`) chooses it; TOP_LOGPROBS above 1 makes the LM client
    return that many alternatives per token (`step["tops"]`). A shipped trigger's need is
    declared once, in activerag.trigger_names.TOP_LOGPROBS; a new one says its own here (1 if
    not)."""

    def add(fn: Trigger) -> Trigger:
        trigger_names.TRIGGERS[name] = fn
        if top_logprobs is not None:
            trigger_names.TOP_LOGPROBS[name] = top_logprobs
        trigger_names.TOP_LOGPROBS.setdefault(name, 1)
        return fn

    return add


def top_logprobs_for(ctx: object) -> int:
    """The top logprobs per token that CTX's trigger needs (1: the token's own), or that CTX's
    own gate reads when it says more (`reads_alternatives`: ETC's, DRAGIN-lite's)."""
    return max(trigger_names.TOP_LOGPROBS.get(getattr(ctx, "trigger", ""), 1),
               getattr(ctx, "reads_alternatives", 1))


def entropy(top: Sequence[float]) -> float:
    """A position's entropy in nats from its top alternatives' log-probabilities, the mass
    they leave out counted as one more outcome (so it is never above ln(len(top) + 1))."""
    probs = [math.exp(v) for v in top]
    probs.append(max(0.0, 1.0 - sum(probs)))
    return -sum(p * math.log(p) for p in probs if p > 0)


def registered(table: dict[str, Any], name: str, what: str, how: str) -> Any:
    """TABLE's entry NAME (a name the contexts accept); when it has none yet, the family
    folders' triggers.py that no import brought in are looked for first (a folder a user added);
    then an error naming WHAT it is and HOW to register one."""
    if table.get(name) is None:
        from activerag.nodes.families import folder_triggers

        folder_triggers()
    if table.get(name) is None:
        raise UnknownTrigger(f"the {what} {name!r} is known by name but no module registered "
                             f"it; import the module that registers it ({how})")
    return table[name]


def trigger_named(name: str) -> Trigger:
    """The registered trigger NAME, or an error listing the known ones."""
    trigger_names.check_trigger(name)
    return registered(trigger_names.TRIGGERS, name, "trigger",
                      "activerag.nodes.triggers.register")


def _fire(trigger: Trigger, state: FlareState, ctx: FlareContext) -> Update:
    step: dict[str, Any] = dict(state.get("step", {}))
    name = next((n for n, fn in trigger_names.TRIGGERS.items() if fn is trigger),
                trigger.__name__)
    if not step.get("draft", "").strip():
        shown: dict[str, Any] = {"measure": "the draft is empty (never retrieves)",
                                 "value": None, "threshold": None}
        fire = False
    else:
        measure = MEASURES.get(trigger)
        shown = (dict(measure(step.get("tokens", []), state, ctx)) if measure else
                 {"measure": f"the {name} trigger's own", "value": None, "threshold": None})
        # A measure that walked the draft to its decision says it ("fire"): not asked twice.
        fire = (bool(shown.pop("fire")) if "fire" in shown else
                bool(trigger(step.get("tokens", []), state, ctx)))
    decision = {"node": node_name() or "confidence_gate", "trigger": name, "fire": fire,
                **shown}
    return {"step": {"fire": fire}, "decision": decision}


Measure = Callable[[Tokens, FlareState, FlareContext], dict[str, Any]]
MEASURES: dict[Trigger, Measure] = {}
"""What a trigger compared, for the gate's decision (Studio): {"measure": what it is, "value":
the draft's, "threshold": what it was compared with, and optionally "fire": the trigger's own
decision, where working out the value decided it}; a trigger without one shows None."""


def measures(trigger: Trigger) -> Callable[[Measure], Measure]:
    """Make the decorated function TRIGGER's measure (MEASURES)."""

    def add(fn: Measure) -> Measure:
        MEASURES[trigger] = fn
        return fn

    return add


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


def _surprisal(tokens: Tokens) -> float | None:
    """The draft's mean surprisal, -ln of its geometric-mean token probability (None: empty)."""
    if not tokens:
        return None
    return sum(-math.log(max(p, 1e-12)) for _, p, _ in tokens) / len(tokens)


def _entropies(tops: list[Any]) -> list[float]:
    """Each token's entropy over its top alternatives, over its largest possible value."""
    return [entropy(top) / math.log(len(top) + 1) for top in tops if top]


@register("mean_surprisal")
def mean_surprisal(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """Fire when the mean surprisal exceeds -ln θ (the geometric-mean p is below θ)."""
    surprisal = _surprisal(tokens)
    if surprisal is None or ctx.theta <= 0.0:
        return False
    return ctx.theta >= 1.0 or surprisal > -math.log(ctx.theta)


@register("entropy")
def token_entropy(tokens: Tokens, state: FlareState, ctx: FlareContext) -> bool:
    """Fire when some token's entropy over its top-20 alternatives, over its largest possible
    value ln 21, exceeds 1 - θ (θ = 0 never fires, θ = 1 fires on any doubt)."""
    tops = state.get("step", {}).get("tops") or []
    if tokens and not tops:
        raise NoLogprobs("the entropy trigger needs each token's top-20 logprobs and the draft "
                         "came without them; it needs the vLLM client, which asks for them")
    return any(value > 1.0 - ctx.theta for value in _entropies(tops))


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


@measures(min_prob)
def _lowest(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return {"measure": "lowest token probability (fires below the threshold)",
            "value": min((p for _, p, _ in tokens), default=None), "threshold": ctx.theta}


@measures(mean_surprisal)
def _geometric_mean(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    surprisal = _surprisal(tokens)
    value = None if surprisal is None else math.exp(-surprisal)
    return {"measure": "geometric-mean token probability (fires below the threshold)",
            "value": value, "threshold": ctx.theta}


@measures(token_entropy)
def _highest_entropy(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    values = _entropies(state.get("step", {}).get("tops") or [])
    return {"measure": "highest normalised token entropy (fires above the threshold)",
            "value": max(values, default=None), "threshold": 1.0 - ctx.theta}


@measures(every_n)
def _answer_tokens(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return {"measure": "answer tokens with the draft (fires on crossing a multiple of the "
                       "threshold)",
            "value": state.get("answer_tokens", 0) + len(tokens), "threshold": ctx.trigger_n}


@measures(never)
def _nothing(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return {"measure": "none (never fires)", "value": None, "threshold": None}


@measures(always)
def _anything(tokens: Tokens, state: FlareState, ctx: FlareContext) -> dict[str, Any]:
    return {"measure": "none (always fires)", "value": None, "threshold": None}


mean_surprisal_gate = fixed_gate(mean_surprisal, "mean_surprisal_gate")
always_fire = fixed_gate(always, "always_fire")
"""Retrieve for every sentence (Table 3's setting, the "next sentence" graph's gate)."""

"""Every registered trigger's Studio measure is the one it decides by (issue #38), generated
from nodes/triggers.py's registry: a gate's decision shows the measure's value and threshold,
and for every trigger that says it fires below (above) its threshold, it fires exactly when
the value shown is below (above) the threshold shown, on literal drafts. FLARE's ends of θ
hold for the probability triggers (θ = 0 never, θ = 1 always, even at p = 1), and a trigger
that needs each token's alternatives says so on a draft that came without them."""

from __future__ import annotations

import math
from typing import Any

import pytest

import activerag.graphs.base  # noqa: F401  (every shipped trigger, statically)
from activerag import trigger_names
from activerag.context import FlareContext
from activerag.errors import NoLogprobs
from activerag.nodes import triggers as t

SURE = (0.0,) + (-30.0,) * 19
HALF = (math.log(0.5), math.log(0.3), math.log(0.2)) + (-30.0,) * 17
FLAT = (math.log(1 / 21),) * 20
DRAFTS: dict[str, tuple[list[tuple[str, float, int]], list[tuple[float, ...]]]] = {
    "sure": ([("Paris", 1.0, 0), (" is", 0.99, 5)], [SURE, SURE]),
    "one unsure word": ([("Paris", 0.95, 0), (" is", 0.2, 5), (" big", 0.9, 8)],
                        [SURE, HALF, SURE]),
    "all unsure": ([("Paris", 0.4, 0), (" is", 0.45, 5)], [HALF, FLAT]),
    "middling": ([("Paris", 0.6, 0), (" is", 0.7, 5), (" big", 0.65, 8)], [HALF, HALF, SURE]),
}
"""Drafts (tokens, each token's top-20 logprobs), their words one token each."""
THETAS = (0.1, 0.3, 0.5, 0.62, 0.8, 0.95)
"""Thresholds strictly between FLARE's ends, where every trigger compares its measure."""


def decided(name: str, draft: str, theta: float) -> dict[str, Any]:
    tokens, tops = DRAFTS[draft]
    state: Any = {"step": {"draft": "".join(x for x, _, _ in tokens), "tokens": tokens,
                           "tops": tops}, "answer_tokens": 0}
    return t._fire(trigger_names.TRIGGERS[name], state, FlareContext(theta=theta))["decision"]


def compared() -> list[str]:
    """The registered triggers whose measure says which side of its threshold fires."""
    out = []
    for name, trigger in trigger_names.TRIGGERS.items():
        measure = t.MEASURES.get(trigger)
        if measure is not None and "the threshold)" in measure(*_probe())["measure"]:
            out.append(name)
    return out


def _probe() -> tuple[Any, Any, Any]:
    tokens, tops = DRAFTS["middling"]
    return tokens, {"step": {"tops": tops}}, FlareContext()


def test_the_measured_triggers_include_flare_s_and_the_estimators():
    assert {"min_prob", "mean_surprisal", "entropy", "entropy_mean", "perplexity"} <= set(
        compared())
    # every shipped trigger has a measure; one a user registers (the README's example, which
    # tests/test_triggers.py runs in this process) may show its own
    shipped = [fn for fn in trigger_names.TRIGGERS.values()
               if fn is not None and (fn.__module__ or "").startswith("activerag.")]
    assert shipped and all(t.MEASURES.get(fn) for fn in shipped)


@pytest.mark.parametrize("name", compared())
def test_a_trigger_fires_exactly_when_its_shown_value_passes_its_shown_threshold(name):
    fired = set()
    for draft in DRAFTS:
        for theta in THETAS:
            d = decided(name, draft, theta)
            if d["value"] is None or d["threshold"] is None:
                continue
            if "fires below" in d["measure"]:
                expect = d["value"] < d["threshold"]
            elif "fires above" in d["measure"]:
                expect = d["value"] > d["threshold"]
            else:  # "on crossing a multiple of the threshold"
                expect = d["value"] // d["threshold"] > 0
            assert d["fire"] is expect, (name, draft, theta, d)
            fired.add(d["fire"])
    if name not in ("entropy_mean", "entropy_max", "perplexity", "every_n"):
        assert fired == {True, False}, f"{name}: the drafts never moved it under θ"


@pytest.mark.parametrize("name", ["min_prob", "mean_surprisal"])
def test_the_probability_triggers_keep_flare_s_ends_of_theta(name):
    certain = ([("Paris", 1.0, 0), (" is", 1.0, 5)], [SURE, SURE])
    unsure = ([("Paris", 0.01, 0), (" is", 0.02, 5)], [FLAT, FLAT])
    trigger = trigger_names.TRIGGERS[name]
    assert trigger(certain[0], {}, FlareContext(theta=1.0)) is True
    assert trigger(unsure[0], {}, FlareContext(theta=0.0)) is False
    assert trigger(unsure[0], {}, FlareContext(theta=0.5)) is True


@pytest.mark.parametrize("name", [n for n in trigger_names.TRIGGERS
                                  if trigger_names.TOP_LOGPROBS.get(n, 1) > 1])
def test_a_gate_whose_trigger_needs_alternatives_says_so_on_a_draft_without_them(name):
    tokens, _ = DRAFTS["middling"]
    state: Any = {"step": {"draft": "Paris is big", "tokens": tokens}}
    with pytest.raises(NoLogprobs, match="top"):
        t._fire(trigger_names.TRIGGERS[name], state, FlareContext(theta=0.5))

"""The margin gate (nodes/margin/, graphs/margin.py): its arithmetic on literal values and as a
property, its registry row and flags, and the gated graph's decisions with scripted LMs whose
top two alternatives the tests choose."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_gated import QUESTION, SURE, WRONG, TopsLM, retriever

from activerag.context import FlareContext
from activerag.errors import NoLogprobs, SettingError
from activerag.graphs.margin import build_margin_graph
from activerag.graphs.registry import METHODS, method
from activerag.nodes import estimators, triggers
from activerag.nodes.gated.steps import estimating
from activerag.nodes.margin import logic
from activerag.nodes.margin.context import MarginContext
from activerag.sentences import SentenceSplitter
from activerag.testing import ScriptedLM, ends

CLOSE = (math.log(0.5), math.log(0.4))
"""A position torn between two tokens: margin ln(5/4) = 0.22 nats."""
CLEAR = (math.log(0.9), math.log(0.01))
"""A position sure of its token: margin ln 90 = 4.5 nats."""


# --- the arithmetic, pure ----------------------------------------------------------------


def test_the_margin_is_the_gap_between_the_two_best_in_any_order():
    assert logic.margin(CLOSE) == pytest.approx(math.log(0.5 / 0.4))
    assert logic.margin((math.log(0.1), math.log(0.7), math.log(0.2))) == pytest.approx(
        math.log(0.7 / 0.2))
    assert logic.margin(()) is None


def test_one_alternative_is_set_against_the_mass_it_leaves_out():
    assert logic.margin((math.log(0.75),)) == pytest.approx(math.log(0.75 / 0.25))
    assert logic.margin((0.0,)) == pytest.approx(-math.log(logic.FLOOR))
    assert logic.margin((math.log(0.3),)) == 0.0  # the rest, 0.7, may be one token as likely


def test_the_mean_reads_the_prefix_and_skips_positions_without_alternatives():
    tops = [CLOSE, (), CLEAR, CLEAR]
    assert logic.mean_margin(tops, 1) == pytest.approx(logic.margin(CLOSE))
    assert logic.mean_margin(tops, 3) == pytest.approx(
        (logic.margin(CLOSE) + logic.margin(CLEAR)) / 2)
    assert logic.mean_margin(tops, 0) == pytest.approx(
        (logic.margin(CLOSE) + 2 * logic.margin(CLEAR)) / 3)
    assert logic.mean_margin(tops, 10) == logic.mean_margin(tops, 0)
    assert logic.mean_margin([(), ()], 0) is None and logic.mean_margin([], 2) is None


probs = st.floats(min_value=1e-6, max_value=1.0)


@given(st.lists(st.lists(probs, min_size=1, max_size=5), min_size=1, max_size=8),
       st.integers(min_value=0, max_value=10))
def test_every_margin_is_at_least_zero_and_the_mean_lies_between_them(rows, prefix):
    tops = [tuple(math.log(p) for p in row) for row in rows]
    gaps = [logic.margin(t) for t in (tops[:prefix] if prefix else tops)]
    assert all(g is not None and g >= 0 for g in gaps)
    mean = logic.mean_margin(tops, prefix)
    assert min(gaps) - 1e-9 <= mean <= max(gaps) + 1e-9  # type: ignore[operator]


# --- the row, the context and the flags ---------------------------------------------------


def test_the_row_is_pinned_and_its_context_reads_two_alternatives():
    row = METHODS["gate_margin"]
    assert (row.context, row.overrides, row.family) == (MarginContext, {}, "uncertainty gates")
    assert "top_logprobs_2" in row.needs  # type: ignore[operator]
    _, ctx = method("gate_margin", FlareContext(k=4, theta=0.3))
    assert type(ctx) is MarginContext and ctx.k == 4 and ctx.estimator == "margin"
    assert triggers.top_logprobs_for(estimating(ctx)) == 2
    assert estimators.estimator_named("margin").above is False


def test_studio_s_settings_form_shows_the_margin_s_own_field():
    form = METHODS["gate_margin"].graph.get_context_jsonschema()["properties"]
    assert form["margin_prefix"]["default"] == 16 and form["estimator"]["default"] == "margin"
    assert "how many of the answer's first tokens" in form["margin_prefix"]["description"].lower()


def test_the_context_refuses_a_negative_prefix():
    with pytest.raises(SettingError, match="margin_prefix must be at least 0"):
        MarginContext(margin_prefix=-1)


def test_the_cli_has_the_family_s_own_flag_group():
    from activerag.cli import RUN_GROUPS
    from activerag.cli.flags import FAMILY_CONTEXTS, FLAGS, GROUPS

    assert "margin gate" in RUN_GROUPS and GROUPS["margin gate"].startswith("MarginContext")
    prefix = next(f for f in FLAGS if f.option == "--margin-prefix")
    assert (prefix.group, prefix.contexts) == ("margin gate", (MarginContext,))
    threshold = next(f for f in FLAGS if f.option == "--gate-threshold")
    assert MarginContext in threshold.contexts  # the gates' flags set it too
    assert all(MarginContext in FAMILY_CONTEXTS[g] for g in ("LM, store and prompts", "FLARE"))


# --- the graph -----------------------------------------------------------------------------


async def run(lm, ctx: MarginContext):  # type: ignore[no-untyped-def]
    graph = build_margin_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    return await graph.ainvoke({"question": QUESTION}, context=ctx)


async def test_a_clear_margin_keeps_the_answer_without_retrieval():
    lm = TopsLM(ScriptedLM([ends(SURE)]), [[CLEAR]])
    out = await run(lm, MarginContext())
    assert out["answer"] == SURE and out["retrievals"] == 0
    why = out["trace"][0]["why"]
    assert (why["estimator"], why["fired"], why["retrieves_when"]) == ("margin", False, "below")
    assert why["value"] == pytest.approx(math.log(90))


async def test_a_close_margin_retrieves_and_answers_again():
    lm = TopsLM(ScriptedLM([ends(WRONG), ends(SURE)]), [[CLOSE], [()]])
    out = await run(lm, MarginContext())
    assert out["answer"] == SURE and out["retrievals"] == 1
    assert out["trace"][0]["why"]["fired"] is True
    assert "Alpha Beta founded Kelmor Works in 1950." in lm.lm.prompts[1]


async def test_the_prefix_and_the_threshold_decide():
    # the first token torn, every later one clear: the prefix decides
    for prefix, fired in ((1, True), (0, False)):
        script = [ends(WRONG), ends(SURE)] if fired else [ends(WRONG)]
        lm = TopsLM(ScriptedLM(script), [[CLOSE, CLEAR], [()]])
        out = await run(lm, MarginContext(margin_prefix=prefix))
        assert out["trace"][0]["why"]["fired"] is fired, prefix
    lm = TopsLM(ScriptedLM([ends(SURE), ends(SURE)]), [[CLEAR], [()]])
    out = await run(lm, MarginContext(gate_threshold=5.0))  # above ln 90: retrieve
    assert out["trace"][0]["why"]["fired"] is True and out["retrievals"] == 1


async def test_an_answer_without_alternatives_is_refused_by_name():
    with pytest.raises(NoLogprobs, match="margin estimator reads each token's two best"):
        await run(ScriptedLM([ends(SURE)]), MarginContext())


def test_the_margin_is_a_trigger_of_the_look_ahead_graphs_too():
    fire = triggers.trigger_named("margin")
    tokens = [("Alpha", 0.5, 0)]
    assert fire(tokens, {"step": {"tops": [CLOSE]}}, FlareContext()) is True  # type: ignore[typeddict-item]
    assert fire(tokens, {"step": {"tops": [CLEAR]}}, FlareContext()) is False  # type: ignore[typeddict-item]

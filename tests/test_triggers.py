import dataclasses
import math

import pytest

from activerag.context import FlareContext
from activerag.graphs.flare import build_flare_graph
from activerag.nodes.triggers import mean_surprisal_gate
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.scripted import ScriptedLM, ends, sentence


def graph(lm):
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta")])
    return build_flare_graph(lm=lm, retriever=StoreRetriever(store=store, k=1),
                             splitter=SentenceSplitter(), gate=mean_surprisal_gate)


async def test_one_unlikely_token_among_likely_ones_does_not_fire_the_mean_gate():
    # min p = 0.3 would fire FLARE's gate at θ=0.5; the geometric mean is 0.3**(1/6)*... > 0.5
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99, low={"Kelmor.": 0.3})])
    out = await graph(lm).ainvoke({"question": "Where?"}, context=FlareContext(theta=0.5))
    geo = math.exp((5 * math.log(0.99) + math.log(0.3)) / 6)
    assert geo > 0.5
    assert out["trace"][0]["retrieved"] is False


async def test_a_uniformly_unsure_draft_fires_the_mean_gate():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", prob=0.4),
                     ends("Alpha Beta was born in Kelmor.")])
    out = await graph(lm).ainvoke({"question": "Where?"}, context=FlareContext(theta=0.5))
    assert out["trace"][0]["retrieved"] is True
    assert out["answer"] == "Alpha Beta was born in Kelmor."


TOKENS = [("Alpha", 0.9, 0), (" was", 0.4, 5), (" born", 0.95, 9)]


def test_the_registry_names_each_trigger_and_refuses_an_unknown_one():
    from activerag.errors import UnknownTrigger
    from activerag.nodes.triggers import trigger_named
    from activerag.trigger_names import TRIGGERS

    assert {"min_prob", "mean_surprisal", "never", "always", "every_n"} <= set(TRIGGERS)
    # every registered trigger, sorted (issue #21 registers more between these)
    with pytest.raises(UnknownTrigger, match="'nope'; known: always, (.+, )?entropy, (.+, )?"
                                             "every_n, (.+, )?min_prob"):
        trigger_named("nope")
    with pytest.raises(UnknownTrigger, match="min_prob"):
        FlareContext(trigger="nope")


def test_the_shipped_triggers_on_literal_tokens():
    from activerag.nodes import triggers as t

    ctx = FlareContext(theta=0.5, trigger_n=16)
    assert t.min_prob(TOKENS, {}, ctx) is True
    assert t.min_prob(TOKENS, {}, FlareContext(theta=0.4)) is False
    assert t.mean_surprisal(TOKENS, {}, ctx) is False  # the mean forgives one unsure token
    assert t.never(TOKENS, {}, ctx) is False and t.always(TOKENS, {}, ctx) is True
    assert t.every_n(TOKENS, {"answer_tokens": 13}, ctx) is True  # 13 + 3 reaches 16
    assert t.every_n(TOKENS, {"answer_tokens": 12}, ctx) is False  # 15
    assert t.every_n(TOKENS, {"answer_tokens": 16}, ctx) is False  # 19: next at 32
    assert t.every_n(TOKENS, {}, FlareContext(trigger_n=3)) is True
    assert t.every_n(TOKENS, {}, FlareContext(trigger_n=4)) is False  # a first draft: 0 + 3


def schedule_graph(lm):
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta")])
    return build_flare_graph(lm=lm, retriever=StoreRetriever(store=store, k=1),
                             splitter=SentenceSplitter())


@pytest.mark.parametrize(("trigger", "retrieved"), [
    ("never", [False, False]), ("always", [True, True]), ("min_prob", [True, False]),
    ("every_n", [False, True])])
async def test_the_context_chooses_the_graphs_trigger(trigger, retrieved):
    unsure = sentence("Alpha Beta was born in Gepu. So", prob=0.95, low={"Gepu.": 0.2})
    sure = ends(" So the answer is Kelmor.", prob=0.95)
    script = []
    for fired, reply in zip(retrieved, (unsure, sure), strict=True):
        script += [reply, reply] if fired else [reply]
    ctx = FlareContext(theta=0.5, trigger=trigger, trigger_n=8, max_sentences=2,
                       exemplar_retrieval=False)
    out = await schedule_graph(ScriptedLM(script)).ainvoke({"question": "Where?"}, context=ctx)
    assert [s["retrieved"] for s in out["trace"]] == retrieved


def test_the_readmes_trigger_runs_as_written():
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("### Write your own trigger"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    scope: dict = {}
    exec(code, scope)
    ctx, fire = scope["ctx"], scope["unsure_long_word"]
    assert fire([("Kelmorstadt", 0.3, 0)], {}, ctx) is True
    assert fire([("Gepu", 0.3, 0), ("Kelmorstadt", 0.9, 4)], {}, ctx) is False
    assert scope["graph"].get_graph().nodes  # a graph, ready for ainvoke


def test_entropy_counts_the_mass_the_top_leaves_out_and_is_bounded():
    from activerag.nodes.triggers import entropy

    assert entropy([0.0]) == pytest.approx(0.0)  # one sure token
    half = math.log(0.5)
    assert entropy([half, half]) == pytest.approx(math.log(2))
    assert entropy([half]) == pytest.approx(math.log(2))  # the other half left out
    flat = [math.log(1 / 21)] * 20
    assert entropy(flat) == pytest.approx(math.log(21))  # the largest value, ln(20 + 1)


def test_the_entropy_trigger_reads_the_drafts_top_logprobs():
    from activerag.errors import NoLogprobs
    from activerag.nodes import triggers as t

    sure = (0.0,) + (-30.0,) * 19
    unsure = (math.log(0.4), math.log(0.35), math.log(0.25)) + (-30.0,) * 17
    state = {"step": {"tops": [sure, unsure]}}
    tops = t.trigger_names.TOP_LOGPROBS
    assert tops["entropy"] == 20 and tops["min_prob"] == 1
    assert t.token_entropy(TOKENS[:2], state, FlareContext(theta=0.8)) is True
    assert t.token_entropy(TOKENS[:2], state, FlareContext(theta=0.5)) is False  # 0.36 < 0.5
    assert t.token_entropy(TOKENS[:2], {"step": {"tops": [sure]}},
                           FlareContext(theta=0.99)) is False
    assert t.token_entropy(TOKENS[:2], state, FlareContext(theta=0.0)) is False
    with pytest.raises(NoLogprobs, match="top-20"):
        t.token_entropy(TOKENS[:2], {"step": {}}, FlareContext())


def test_only_a_trigger_that_needs_them_makes_the_client_ask_for_top_logprobs():
    from activerag.nodes.triggers import top_logprobs_for

    assert top_logprobs_for(FlareContext(trigger="entropy")) == 20
    assert top_logprobs_for(FlareContext()) == 1
    assert top_logprobs_for(object()) == 1  # a context without triggers (REPLUG's, FB-RAG's)


def test_the_lm_client_keeps_each_tokens_alternatives_when_asked_and_says_when_short():
    from activerag.errors import NoLogprobs
    from activerag.serving.generation import _tokens_of, check_alternatives

    info = {"logprobs": {"tokens": ["A", "b"], "token_logprobs": [-0.1, -0.2],
                         "text_offset": [0, 1],
                         "top_logprobs": [{"A": -0.1, "B": -2.5}, {"b": -0.2, "c": -1.8}]}}
    got = _tokens_of("Ab", info, 0, "u", want=2)
    assert [t.top for t in got] == [(-0.1, -2.5), (-0.2, -1.8)]
    assert [t.top for t in _tokens_of("Ab", info, 0, "u")] == [(), ()]
    with pytest.raises(NoLogprobs, match="returned 2 top logprobs where 20 were asked .*start "
                                         "vLLM with --max-logprobs 20"):
        check_alternatives(got, 20, "u")
    check_alternatives(got, 2, "u")
    check_alternatives([], 20, "u")  # nothing generated, nothing to check
    check_alternatives(_tokens_of("Ab", info, 0, "u"), 1, "u")  # only the token's own asked
    # two alternatives that decode to the same text share one key, so a position may show one
    # fewer (seen with vLLM at 20): no server limit while another position shows them all
    merged = {"logprobs": {**info["logprobs"],
                           "top_logprobs": [{"A": -0.1, "B": -2.5}, {"b": -0.2}]}}
    short = _tokens_of("Ab", merged, 0, "u", want=2)
    assert [t.top for t in short] == [(-0.1, -2.5), (-0.2,)]
    check_alternatives(short, 2, "u")
    with pytest.raises(NoLogprobs, match="returned 1 top logprobs where 2 were asked"):
        check_alternatives(short[1:], 2, "u")
    # a generation of one token whose twenty alternatives lost one to a merge (llama-server in
    # an ETC run) is kept; a server that cut to 17 is not
    for shown in (19, 18):  # a tenth of 20 may merge
        check_alternatives(
            [dataclasses.replace(got[0], top=tuple(-0.1 * i for i in range(shown)))], 20, "u")
    cut = [dataclasses.replace(got[0], top=tuple(-0.1 * i for i in range(17)))]
    with pytest.raises(NoLogprobs, match="returned 17 top logprobs where 20 were asked"):
        check_alternatives(cut, 20, "u")


def test_the_gate_never_fires_on_an_empty_draft_and_reads_no_tokens_as_none_below_theta():
    from langgraph.runtime import Runtime

    from activerag.nodes.triggers import always_fire, trigger_gate

    always = Runtime(context=FlareContext(trigger="always"))
    unsure = [("x", 0.1, 0)]
    for state in ({"step": {"draft": "  ", "tokens": unsure}}, {"step": {"tokens": unsure}},
                  {"step": {}}, {}):
        assert trigger_gate(state, always)["step"] == {"fire": False}
        assert always_fire(state, always)["step"] == {"fire": False}
    assert trigger_gate({"step": {"draft": "Hi."}}, always)["step"] == {"fire": True}
    min_prob = Runtime(context=FlareContext(theta=0.5))
    assert trigger_gate({"step": {"draft": "Hi."}}, min_prob)["step"] == {"fire": False}
    assert trigger_gate({"step": {"draft": "Hi.", "tokens": unsure}}, min_prob)["step"] == {
        "fire": True}


def test_the_names_a_context_accepts_are_those_the_nodes_register():
    """activerag/trigger_names.py knows the shipped names before any node is imported (a
    context checks them when made); it must name exactly what the trigger modules register."""
    import activerag.graphs.base  # noqa: F401  (every shipped trigger module, statically)
    from activerag import trigger_names
    from activerag.nodes import estimators
    from activerag.nodes import triggers as t

    shipped = {"min_prob", "mean_surprisal", "entropy", "never", "always", "every_n", "etc",
               "dragin_lite", "entropy_mean", "entropy_max", "perplexity", "margin"}
    assert shipped <= set(trigger_names.TRIGGERS)
    assert {name: getattr(trigger_names.TRIGGERS[name], "__module__", None)
            for name in shipped} == {name: t.__name__ for name in (
                "min_prob", "mean_surprisal", "entropy", "never", "always", "every_n")} | {
        "etc": "activerag.nodes.gated.triggers", "dragin_lite": "activerag.nodes.gated.triggers",
        **{name: estimators.__name__ for name in ("entropy_mean", "entropy_max", "perplexity",
                                                  "margin")}}
    assert set(estimators.ESTIMATORS) == trigger_names.ESTIMATORS


def test_an_unknown_trigger_or_estimator_says_how_to_add_one():
    from activerag.errors import UnknownTrigger
    from activerag.trigger_names import check_estimator, check_trigger

    with pytest.raises(UnknownTrigger, match=r"known: .*min_prob.* \(register one with "
                                             r"activerag\.nodes\.triggers\.register\)$"):
        check_trigger("nope")
    with pytest.raises(UnknownTrigger, match=r"known: .*lexsim.* \(register one with "
                                             r"activerag\.nodes\.estimators\.register_estimator\)$"):
        check_estimator("nope")


def test_a_declared_estimator_is_accepted_and_a_trigger_unless_it_samples(monkeypatch):
    from activerag import trigger_names as names

    estimators, known, tops = set(), {}, {"wide": 5}
    monkeypatch.setattr(names, "ESTIMATORS", estimators)
    monkeypatch.setattr(names, "TRIGGERS", known)
    monkeypatch.setattr(names, "TOP_LOGPROBS", tops)
    names.declare_estimator("gap", top_logprobs=3)
    names.declare_estimator("plain")
    names.declare_estimator("wide", top_logprobs=2)  # a smaller need keeps the larger
    names.declare_estimator("sampled", top_logprobs=4, trigger=False)
    assert estimators == {"gap", "plain", "wide", "sampled"}
    assert known == dict.fromkeys(("gap", "plain", "wide"))
    assert tops == {"wide": 5, "gap": 3, "plain": 1}

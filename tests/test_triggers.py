import math

import pytest
from scripted import ScriptedLM, ends, sentence

from activerag.context import FlareContext
from activerag.graphs.flare import build_flare_graph
from activerag.nodes.triggers import mean_surprisal_gate
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document


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
    from activerag.nodes.triggers import TRIGGERS, trigger_named

    assert {"min_prob", "mean_surprisal", "never", "always", "every_n"} <= set(TRIGGERS)
    with pytest.raises(UnknownTrigger, match="unknown trigger 'nope'; known: always, every_n"):
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

import math

from scripted import ScriptedLM, ends

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

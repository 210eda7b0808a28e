"""The adaptive QA app with scripted LMs: a long context goes to FB-RAG, a sure single-time
answer stands, an unsure one is answered again by FLARE, and the costs add up."""

import pytest
from test_fb_rag_graph import CONTEXT, QUESTION, RATIONALE
from test_fb_rag_graph import context as fb_context

from activerag.errors import EmptyQuestion
from activerag.graphs.app import build_app_graph
from activerag.graphs.fb_rag import build_fb_rag_graph
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.single import build_single_graph
from activerag.nodes.app.context import AppContext
from activerag.nodes.app.steps import answer_confidence
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.scripted import ScriptedLM, ScriptedSampler, WordTokens, ends

Q = "Where was Alpha Beta born?"


def retriever() -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta"),
               make_document("Gamma lives in Orvale.", "Gamma")])
    return StoreRetriever(store=store, k=1)


def app(single_lm: ScriptedLM, flare_lm: ScriptedLM, strong: ScriptedLM | None = None):
    split = SentenceSplitter()
    return build_app_graph(
        single=build_single_graph(lm=single_lm, retriever=retriever(), splitter=split),
        flare=build_flare_graph(lm=flare_lm, retriever=retriever(), splitter=split),
        fb_rag=build_fb_rag_graph(lm=strong or ScriptedLM([]), token_lm=WordTokens(),
                                  light_lm=ScriptedSampler([RATIONALE])))


def test_confidence_is_the_geometric_mean_over_every_sentence():
    trace = [{"draft_tokens": [("a", 0.5), ("b", 0.125)]}, {"draft_tokens": [("c", 0.25)]}]
    assert answer_confidence(trace) == pytest.approx(0.25)
    assert answer_confidence([{"draft_tokens": []}]) is None
    assert answer_confidence([{"sentence": "a step without tokens"}, *trace]) == \
        pytest.approx(0.25)
    assert answer_confidence([{"draft_tokens": [("z", 0.0)]}]) == pytest.approx(1e-12)


async def test_a_sure_single_answer_stands_and_flare_never_runs():
    flare_lm = ScriptedLM([])
    out = await app(ScriptedLM([ends("He was born in Kelmor.", prob=0.9)]), flare_lm).ainvoke(
        {"question": Q}, context=AppContext(min_confidence=0.8))
    assert out["route"] == "single" and out["answer"] == "He was born in Kelmor."
    assert out["confidence"] == pytest.approx(0.9)
    assert list(out["runs"]) == ["single"] and not flare_lm.prompts
    assert out["lm_calls"] == 1 and out["retrieval_steps"] == 1


async def test_an_unsure_single_answer_goes_to_flare_and_both_costs_count():
    single_lm = ScriptedLM([ends("He was born in Orvale.", prob=0.6)])
    flare_lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99)])
    out = await app(single_lm, flare_lm).ainvoke({"question": Q},
                                                 context=AppContext(min_confidence=0.7))
    assert out["route"] == "flare" and out["answer"] == "Alpha Beta was born in Kelmor."
    assert out["confidence"] == pytest.approx(0.6)
    assert list(out["runs"]) == ["single", "flare"]
    assert out["runs"]["single"]["answer"] == "He was born in Orvale."
    assert out["lm_calls"] == out["runs"]["single"]["lm_calls"] + out["runs"]["flare"]["lm_calls"]
    assert out["lm_calls"] == 2
    assert out["retrieval_steps"] == 2  # the question's retrieval in each
    assert out["trace"] == out["runs"]["flare"]["trace"]
    assert out["retrieved_titles"] == ["Alpha Beta", "Alpha Beta"]


async def test_the_threshold_is_inclusive():
    out = await app(ScriptedLM([ends("He was born in Kelmor.", prob=0.5)]), ScriptedLM([])
                    ).ainvoke({"question": Q}, context=AppContext(min_confidence=0.5))
    assert out["route"] == "single"


async def test_a_question_with_a_long_context_goes_to_fb_rag_only():
    single_lm, strong = ScriptedLM([]), ScriptedLM([ends("Bergen")])
    graph = app(single_lm, ScriptedLM([]), strong)
    out = await graph.ainvoke({"question": QUESTION, "context": CONTEXT},
                              context=AppContext(fb=fb_context()))
    assert out["route"] == "fb_rag" and out["answer"] == "Bergen"
    assert list(out["runs"]) == ["fb_rag"] and out["runs"]["fb_rag"]["selected"] == [0, 2]
    assert out["lm_calls"] == 2 and not single_lm.prompts
    assert out.get("confidence") is None


async def test_fb_settings_given_as_json_are_read():
    ctx = AppContext(fb={**vars(fb_context())})  # what the dev server builds from JSON
    out = await app(ScriptedLM([]), ScriptedLM([]), ScriptedLM([ends("Bergen")])).ainvoke(
        {"question": QUESTION, "context": CONTEXT}, context=ctx)
    assert out["runs"]["fb_rag"]["selected"] == [0, 2]


async def test_a_second_run_on_a_thread_starts_clean():
    from langgraph.checkpoint.memory import InMemorySaver

    split = SentenceSplitter()
    graph = build_app_graph(
        single=build_single_graph(lm=ScriptedLM([ends("In Orvale.", prob=0.6), ends("In Kelmor.",
                                  prob=0.9)]),
                           retriever=retriever(), splitter=split),
        flare=build_flare_graph(lm=ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.99)]),
                          retriever=retriever(), splitter=split),
        checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = await graph.ainvoke({"question": Q}, config, context=AppContext(min_confidence=0.7))
    second = await graph.ainvoke({"question": Q}, config, context=AppContext(min_confidence=0.7))
    assert first["route"] == "flare" and first["lm_calls"] == 2
    assert second["route"] == "single" and second["lm_calls"] == 1
    assert list(second["runs"]) == ["single"]


async def test_an_empty_question_is_refused():
    with pytest.raises(EmptyQuestion, match="question is empty"):
        await app(ScriptedLM([]), ScriptedLM([])).ainvoke({"question": "  "},
                                                          context=AppContext())


def test_the_method_graphs_draw_inside_the_app():
    nodes = set(app(ScriptedLM([]), ScriptedLM([])).get_graph(xray=1).nodes)
    assert {"single:generate", "flare:confidence_gate", "fb_rag:rerank", "start"} <= nodes


def test_min_confidence_must_not_be_negative():
    with pytest.raises(ValueError, match="min_confidence"):
        AppContext(min_confidence=-0.1)


async def test_the_app_without_a_store_names_the_command_that_makes_one(tmp_path):
    from activerag.errors import ActiveRagError
    from activerag.graphs.app import graph

    with pytest.raises(ActiveRagError, match=r"activerag ingest"):
        await graph.ainvoke({"question": Q}, context=AppContext(store_dir=str(tmp_path / "none"),
                                                              base_url="http://127.0.0.1:9/v1"))

"""Routing of the FLARE graph with a scripted LM whose token probabilities the tests choose."""

import pytest
from scripted import ScriptedLM, sentence

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.graphs.flare import build_flare_graph
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document

QUESTION = "Where was Alpha Beta born?"


def retriever(k: int = 2) -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta"),
               make_document("Kelmor lies on the Vedria River.", "Kelmor"),
               make_document("Gepu is a small town.", "Gepu")])
    return StoreRetriever(store=store, k=k)


async def run(lm: ScriptedLM, **ctx):
    graph = build_flare_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    return await graph.ainvoke({"question": QUESTION}, context=FlareContext(**ctx))


async def test_low_confidence_token_fires_retrieval_with_masked_query():
    lm = ScriptedLM([sentence("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                     sentence("Alpha Beta was born in Kelmor.")])
    out = await run(lm, theta=0.5, beta=0.4)
    [step] = out["trace"]
    assert step["retrieved"] is True
    assert step["min_prob"] == pytest.approx(0.3)
    assert step["queries"] == ["Alpha Beta was born in"]
    assert step["sentence"] == "Alpha Beta was born in Kelmor."
    assert out["answer"] == "Alpha Beta was born in Kelmor."
    assert len(lm.prompts) == 2
    # the first draft is conditioned on documents retrieved with the question (Appendix A)
    assert "Search results:" in lm.prompts[0] and "Alpha Beta was born in Kelmor." in lm.prompts[0]
    # the regeneration sees this step's documents, retrieved with the masked query
    assert step["doc_titles"][0] == "Alpha Beta"


async def test_confident_draft_is_accepted_without_retrieval():
    lm = ScriptedLM([sentence("Alpha Beta was born in Kelmor.", prob=0.9)])
    out = await run(lm, theta=0.5)
    assert [s["retrieved"] for s in out["trace"]] == [False]
    assert len(lm.prompts) == 1


async def test_theta_zero_never_retrieves_and_one_always_does():
    lm = ScriptedLM([sentence("Alpha was born in Gepu.", prob=0.01)])
    out = await run(lm, theta=0.0)
    assert out["trace"][0]["retrieved"] is False
    lm = ScriptedLM([sentence("Alpha was born in Kelmor.", prob=1.0),
                     sentence("Alpha was born in Kelmor.", prob=1.0)])
    out = await run(lm, theta=1.0)
    assert out["trace"][0]["retrieved"] is True


async def test_later_drafts_see_no_documents_and_continue_the_answer():
    lm = ScriptedLM([
        sentence("Alpha was born in Kelmor. It"),
        sentence(" Kelmor lies on a river. So"),
        sentence(" So the answer is Kelmor."),
    ])
    out = await run(lm, theta=0.5)
    assert [s["sentence"] for s in out["trace"]] == [
        "Alpha was born in Kelmor.", "Kelmor lies on a river.", "So the answer is Kelmor."]
    assert out["answer"] == ("Alpha was born in Kelmor. Kelmor lies on a river. "
                             "So the answer is Kelmor.")
    assert "Search results:" in lm.prompts[0]
    assert "Search results:" not in lm.prompts[1]
    assert lm.prompts[1].endswith("Alpha was born in Kelmor.")
    assert lm.prompts[2].endswith("Alpha was born in Kelmor. Kelmor lies on a river.")


async def test_each_regeneration_uses_only_its_own_step_documents():
    lm = ScriptedLM([
        sentence("Alpha Beta was born in Kelmor. It"),
        sentence(" Gepu is on a river. So", low={"river.": 0.1}),
        sentence(" Gepu is a small town."),
    ])
    out = await run(lm, theta=0.5, beta=0.4)
    regen_prompt = lm.prompts[2]
    assert out["trace"][1]["queries"] == ["Gepu is on a"]
    assert out["trace"][1]["doc_titles"][0] == "Gepu"
    # the question's documents of step 1 are gone from step 2's regeneration (FLARE §2.3)
    assert regen_prompt.count("[1]") == 1 and "[1] Gepu:" in regen_prompt


async def test_sentence_limit_stops_generation():
    lm = ScriptedLM([sentence(f"Fact {i} holds. Next") for i in range(5)])
    out = await run(lm, theta=0.5, max_sentences=2)
    assert len(out["trace"]) == 2
    assert len(lm.prompts) == 2


async def test_explicit_queries_ask_one_question_per_uncertain_span():
    lm = ScriptedLM([
        sentence("Alpha Beta was born in Gepu on Monday.", low={"Gepu": 0.2, "Monday.": 0.1}),
        sentence("Where was Alpha Beta born?"),
        sentence("When was Alpha Beta born?"),
        sentence("Alpha Beta was born in Kelmor."),
    ])
    out = await run(lm, theta=0.5, beta=0.4, query_formulation="explicit")
    assert out["trace"][0]["queries"] == ["Where was Alpha Beta born?", "When was Alpha Beta born?"]
    assert 'the term/entity/phrase "Gepu"' in lm.prompts[1]
    assert 'the term/entity/phrase "Monday"' in lm.prompts[2]
    assert out["lm_calls"] == 4


async def test_a_swapped_gate_changes_only_the_trigger():
    def always(state, runtime):
        return {"step": {"fire": True}}

    lm = ScriptedLM([sentence("Alpha was born in Kelmor.", prob=0.99),
                     sentence("Alpha Beta was born in Kelmor.")])
    graph = build_flare_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter(),
                              gate=always)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext(theta=0.0))
    assert out["trace"][0]["retrieved"] is True


async def test_without_initial_retrieval_the_first_draft_has_no_documents():
    lm = ScriptedLM([sentence("Alpha was born in Kelmor.")])
    await run(lm, theta=0.5, initial_retrieval=False)
    assert "Search results:" not in lm.prompts[0]


async def test_empty_question_is_refused():
    graph = build_flare_graph(lm=ScriptedLM([]), retriever=retriever(),
                              splitter=SentenceSplitter())
    with pytest.raises(EmptyQuestion, match="empty"):
        await graph.ainvoke({"question": "  "}, context=FlareContext())


def test_context_rejects_out_of_range_thresholds():
    with pytest.raises(ValueError, match="theta"):
        FlareContext(theta=1.5)
    with pytest.raises(ValueError, match="k must"):
        FlareContext(k=0)

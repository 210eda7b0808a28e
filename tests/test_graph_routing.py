"""Routing of the FLARE graph with a scripted LM whose token probabilities the tests choose."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from activerag.context import FlareContext
from activerag.errors import EmptyQuestion
from activerag.graphs.flare import build_flare_graph
from activerag.nodes.prompts import Exemplar, Task
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.scripted import EOS, ScriptedLM, ends, last_turn, sentence

QUESTION = "Where was Alpha Beta born?"


def retriever(k: int = 2) -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta"),
               make_document("Kelmor lies on the Vedria River.", "Kelmor"),
               make_document("Gepu is a small town.", "Gepu")])
    return StoreRetriever(store=store, k=k)


def graph(lm: ScriptedLM, **kwargs):
    return build_flare_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter(), **kwargs)


async def run(lm: ScriptedLM, **ctx):
    return await graph(lm).ainvoke({"question": QUESTION}, context=FlareContext(**ctx))


async def test_low_confidence_token_fires_retrieval_with_masked_query():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                     ends("Alpha Beta was born in Kelmor.")])
    out = await run(lm, theta=0.5, beta=0.4, initial_retrieval=False)
    [step] = out["trace"]
    assert step["retrieved"] is True and step["fallback"] is False
    assert step["min_prob"] == pytest.approx(0.3)
    assert step["queries"] == ["Alpha Beta was born in"]
    assert step["sentence"] == "Alpha Beta was born in Kelmor."
    assert out["answer"] == "Alpha Beta was born in Kelmor." and "redrafted" not in step
    assert len(lm.prompts) == 2
    # the regeneration sees this step's documents, retrieved with the masked query
    assert "Alpha Beta was born in Kelmor." not in lm.prompts[0]
    assert "Alpha Beta was born in Kelmor." in lm.prompts[1]
    assert step["doc_titles"][0] == "Alpha Beta"
    assert out["retrieval_steps"] == 1 and out["retrievals"] == 1


async def test_a_retrieval_that_brings_back_the_draft_s_own_documents_keeps_the_draft():
    # the draft saw D_x; the masked query finds the same two documents, so the regeneration's
    # prompt would be the draft's own, which a greedy LM answers with the draft again
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                     ends("Alpha Beta was born in Kelmor.")])
    out = await run(lm, theta=0.5, beta=0.4)
    [step] = out["trace"]
    assert step["retrieved"] is True and step["queries"] == ["Alpha Beta was born in"]
    # the first draft is conditioned on documents retrieved with the question (Appendix A)
    assert "Search results:" in lm.prompts[0] and "Alpha Beta was born in Kelmor." in lm.prompts[0]
    assert len(lm.prompts) == 1 and len(lm.replies) == 1  # the regeneration was not asked
    assert step["sentence"] == out["answer"] == "Alpha Beta was born in Gepu."
    assert step["doc_titles"] == ["Alpha Beta"] and step["redrafted"] is True
    assert out["lm_calls"] == 1 and out["generated_tokens"] == 6
    assert out["retrieval_steps"] == 2 and out["retrievals"] == 2


async def test_a_kept_draft_says_why_in_the_regenerate_decision():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3})])
    decisions = [chunk["decision"] async for chunk in graph(lm).astream(
        {"question": QUESTION}, context=FlareContext(theta=0.5, beta=0.4),
        stream_mode="updates") for node, chunk in [next(iter(chunk.items()))]
        if node == "regenerate"]
    [decision] = decisions
    assert decision["text"] == "Alpha Beta was born in Gepu."
    # the kept draft streams once as the regeneration's text, as a cached generation does
    pieces = [chunk for mode, chunk in [c async for c in graph(ScriptedLM(
        [ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3})])).astream(
        {"question": QUESTION}, context=FlareContext(theta=0.5, beta=0.4),
        stream_mode=["custom"])] if chunk.get("kind") == "token"]
    assert [p["text"] for p in pieces if p["node"] == "regenerate"] == [
        "Alpha Beta was born in Gepu."]
    assert decision["min_prob"] == pytest.approx(0.3)
    assert "draft's own documents" in decision["redrafted"]


async def test_confident_draft_is_accepted_without_retrieval():
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.9)])
    out = await run(lm, theta=0.5)
    assert [s["retrieved"] for s in out["trace"]] == [False]
    assert len(lm.prompts) == 1
    assert out["retrieval_steps"] == 1  # only D_x


async def test_theta_zero_never_retrieves_and_one_always_does():
    lm = ScriptedLM([ends("Alpha was born in Gepu.", prob=0.01)])
    out = await run(lm, theta=0.0)
    assert out["trace"][0]["retrieved"] is False
    lm = ScriptedLM([ends("Alpha was born in Kelmor.", prob=1.0),
                     ends("Alpha was born in Kelmor.", prob=1.0)])
    out = await run(lm, theta=1.0)
    assert out["trace"][0]["retrieved"] is True


async def test_a_draft_at_exactly_theta_does_not_fire():
    lm = ScriptedLM([ends("Alpha was born in Kelmor.", prob=0.5)])
    out = await run(lm, theta=0.5)
    assert out["trace"][0]["retrieved"] is False


async def test_later_drafts_continue_the_answer_with_the_kept_documents():
    lm = ScriptedLM([
        sentence("Alpha was born in Kelmor. It"),
        sentence(" Kelmor lies on a river. So"),
        ends(" So the answer is Kelmor."),
    ])
    out = await run(lm, theta=0.5)
    assert [s["sentence"] for s in out["trace"]] == [
        "Alpha was born in Kelmor.", "Kelmor lies on a river.", "So the answer is Kelmor."]
    assert out["answer"] == ("Alpha was born in Kelmor. Kelmor lies on a river. "
                             "So the answer is Kelmor.")
    # D_x stays in every prompt until a retrieval replaces it (§2.3, the authors' code)
    assert all("[1] Alpha Beta: Alpha Beta was born in Kelmor." in p for p in lm.prompts)
    assert lm.prompts[1].endswith("Alpha was born in Kelmor.")
    assert lm.prompts[2].endswith("Alpha was born in Kelmor. Kelmor lies on a river.")
    assert out["trace"][2]["doc_titles"] == out["trace"][0]["doc_titles"]


async def test_without_keep_documents_later_drafts_see_none():
    lm = ScriptedLM([sentence("Alpha was born in Kelmor. It"), ends(" It is big.")])
    out = await run(lm, theta=0.5, keep_documents=False)
    assert "Search results:" in lm.prompts[0]
    assert "Search results:" not in last_turn(lm.prompts[1])
    assert out["trace"][1]["doc_ids"] == []


async def test_a_retrieval_replaces_the_kept_documents_for_later_drafts():
    lm = ScriptedLM([
        sentence("Alpha Beta was born in Kelmor. It"),
        sentence(" Gepu is on a river. So", low={"river.": 0.1}),
        sentence(" Gepu is a small town. It"),
        ends(" It is quiet."),
    ])
    out = await run(lm, theta=0.5, beta=0.4)
    regen, after = lm.prompts[2], lm.prompts[3]
    assert out["trace"][1]["queries"] == ["Gepu is on a"]
    assert out["trace"][1]["doc_titles"][0] == "Gepu"
    # the question's documents of step 1 are gone from step 2's regeneration (FLARE §2.3)
    assert last_turn(regen).count("[1]") == 1 and "[1] Gepu:" in regen
    # and the next draft keeps step 2's documents, not D_x
    assert "[1] Gepu:" in after and "Alpha Beta was born in Kelmor." not in after.split(
        "Question:")[0]
    assert out["trace"][2]["doc_titles"] == out["trace"][1]["doc_titles"]


async def test_sentence_limit_stops_generation():
    lm = ScriptedLM([sentence(f"Fact {i} holds. Next") for i in range(5)])
    out = await run(lm, theta=0.5, max_sentences=2)
    assert len(out["trace"]) == 2
    assert len(lm.prompts) == 2


async def test_answer_token_cap_stops_generation():
    lm = ScriptedLM([sentence(f"Fact {i} holds. Next") for i in range(5)])
    out = await run(lm, theta=0.5, max_answer_tokens=5)
    # the first sentence keeps 3 tokens, so the second may generate only the 2 left
    assert [s["sentence"] for s in out["trace"]] == ["Fact 0 holds.", "Fact 1"]
    assert out["answer_tokens"] == 5 and lm.calls[1]["max_tokens"] == 2
    assert len(lm.prompts) == 2


async def test_the_answer_ends_with_the_sentence_that_gives_it():
    lm = ScriptedLM([sentence("Alpha was born in Kelmor. So"),
                     sentence(" So the answer is Kelmor. Question"),
                     ends(" Gepu is a town.")])
    out = await run(lm, theta=0.5)
    assert out["answer"] == "Alpha was born in Kelmor. So the answer is Kelmor."
    assert len(lm.prompts) == 2  # nothing is generated after the answer sentence


@pytest.mark.parametrize("stop", ["\n\n", "\nQuestion:"])
async def test_a_blank_line_or_a_new_question_ends_the_answer(stop):
    lm = ScriptedLM([sentence("Alpha was born in Kelmor.") + [(stop, 0.9), (" Where", 0.9)],
                     ends(" More text.")])
    out = await run(lm, theta=0.5)
    assert out["answer"] == "Alpha was born in Kelmor."
    assert len(lm.prompts) == 1
    assert all(set(c["stop"]) >= {"\n\n", "\nQuestion:"} for c in lm.calls)


async def test_a_query_that_matches_nothing_falls_back_to_the_question():
    lm = ScriptedLM([ends("It is in Mor.", low={"Mor.": 0.1}), ends("It is in Kelmor.")])
    out = await run(lm, theta=0.5, beta=0.4)
    [step] = out["trace"]
    assert step["queries"] == ["It is in"]  # only stopwords: BM25 finds nothing
    assert step["fallback"] is True
    assert step["doc_titles"][0] == "Alpha Beta"  # what the question finds
    assert out["retrievals"] == 3  # x, the masked query, x again


async def test_an_all_masked_draft_searches_the_question_and_says_so():
    lm = ScriptedLM([ends("Gepu Gepu.", prob=0.1), ends("Alpha was born in Kelmor.")])
    out = await run(lm, theta=0.5, beta=0.4)
    assert out["trace"][0]["queries"] == [QUESTION]
    assert out["trace"][0]["fallback"] is True


async def test_word_masking_and_question_words_shape_the_query():
    draft = [("Alpha", 0.9), (" Be", 0.2), ("ta", 0.9), (" was", 0.9), (" born", 0.9),
             (" in", 0.9), (" Kel", 0.9), ("mor", 0.1), (".", 0.9), EOS]
    cases = {("token", False): "Alpha ta was born in Kel .",
             ("word", False): "Alpha was born in",
             ("word", True): "Alpha Beta was born in"}
    for (unit, keep), query in cases.items():
        lm = ScriptedLM([draft, ends("Alpha Beta was born in Kelmor.")])
        out = await run(lm, theta=0.5, beta=0.4, mask_unit=unit, keep_question_words=keep)
        assert out["trace"][0]["queries"] == [query], (unit, keep)


async def test_explicit_queries_ask_one_question_per_uncertain_span():
    lm = ScriptedLM([
        ends("Alpha Beta was born in Gepu on a Monday.", low={"Gepu": 0.2, "Monday.": 0.1}),
        sentence("Where was Alpha Beta born?") + [("\n", 0.9)],
        sentence("When was Alpha Beta born?") + [("\n", 0.9)],
        ends("Alpha Beta was born in Kelmor."),
    ])
    out = await run(lm, theta=0.5, beta=0.4, query_formulation="explicit", span_merge_gap=1,
                    initial_retrieval=False)
    assert out["trace"][0]["queries"] == ["Where was Alpha Beta born?", "When was Alpha Beta born?"]
    assert 'the term/entity/phrase "Gepu"' in lm.prompts[1]
    assert 'the term/entity/phrase "Monday"' in lm.prompts[2]
    assert lm.calls[1]["max_tokens"] == 32 and "\n" in lm.calls[1]["stop"]
    assert out["lm_calls"] == 4


async def test_explicit_spans_a_few_tokens_apart_become_one_question():
    lm = ScriptedLM([
        ends("Alpha Beta went to the University of Pennsylvania.",
             low={"University": 0.3, "Pennsylvania.": 0.2}),
        sentence("Which university did Alpha Beta attend?") + [("\n", 0.9)],
        ends("Alpha Beta went to Kelmor College."),
    ])
    out = await run(lm, theta=0.5, beta=0.4, query_formulation="explicit")
    assert 'the term/entity/phrase "University of Pennsylvania"' in lm.prompts[1]
    assert out["trace"][0]["queries"] == ["Which university did Alpha Beta attend?"]


async def test_a_swapped_gate_changes_only_the_trigger():
    def always(state, runtime):
        return {"step": {"fire": True}}

    lm = ScriptedLM([ends("Alpha was born in Kelmor.", prob=0.99),
                     ends("Alpha Beta was born in Kelmor.")])
    out = await graph(lm, gate=always).ainvoke({"question": QUESTION},
                                               context=FlareContext(theta=0.0))
    assert out["trace"][0]["retrieved"] is True


async def test_without_initial_retrieval_the_first_draft_has_no_documents():
    lm = ScriptedLM([ends("Alpha was born in Kelmor.")])
    out = await run(lm, theta=0.5, initial_retrieval=False)
    assert "Search results:" not in last_turn(lm.prompts[0])
    assert out["retrieval_steps"] == 0


async def test_exemplars_carry_documents_retrieved_with_their_own_questions(monkeypatch):
    task = Task("Answer.", (Exemplar("Which river flows through Kelmor?", "The Vedria."),))
    monkeypatch.setattr("activerag.nodes.exemplars.task_for", lambda ctx, kind="cot": task)
    lm = ScriptedLM([ends("Alpha was born in Kelmor.")])
    await run(lm, theta=0.5, exemplar_retrieval=True)
    shot, test_case = lm.prompts[0].split("Question: Which river")[0], lm.prompts[0]
    assert "[1] Kelmor: Kelmor lies on the Vedria River." in shot
    assert test_case.count("Search results:") == 2
    lm = ScriptedLM([ends("Alpha was born in Kelmor.")])
    await run(lm, theta=0.5, exemplar_retrieval=False)
    assert lm.prompts[0].count("Search results:") == 1


async def test_two_runs_on_one_thread_start_clean():
    checkpointed = build_flare_graph(lm=ScriptedLM([sentence("Alpha was born in Kelmor. It"),
                                                    ends(" It is big."),
                                                    sentence("Alpha was born in Kelmor. It"),
                                                    ends(" It is big.")]),
                                     retriever=retriever(), splitter=SentenceSplitter(),
                                     checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "one"}}
    ctx = FlareContext(theta=0.5, max_sentences=2)
    first = await checkpointed.ainvoke({"question": QUESTION}, config, context=ctx)
    second = await checkpointed.ainvoke({"question": QUESTION}, config, context=ctx)
    assert len(second["trace"]) == 2 == len(first["trace"])
    for key in ("lm_calls", "generated_tokens", "retrievals", "retrieval_steps",
                "retrieved_titles", "answer"):
        assert second[key] == first[key], key


async def test_empty_question_is_refused():
    with pytest.raises(EmptyQuestion, match="empty"):
        await graph(ScriptedLM([])).ainvoke({"question": "  "}, context=FlareContext())


def test_context_rejects_out_of_range_settings():
    with pytest.raises(ValueError, match="theta"):
        FlareContext(theta=1.5)
    with pytest.raises(ValueError, match="beta"):
        FlareContext(beta=-0.1)
    with pytest.raises(ValueError, match="k must"):
        FlareContext(k=0)
    with pytest.raises(ValueError, match="max_sentences"):
        FlareContext(max_sentences=0)
    with pytest.raises(ValueError, match="span_merge_gap"):
        FlareContext(span_merge_gap=-1)
    assert FlareContext(prompt_set="paper").exemplars_retrieve is True
    assert FlareContext().exemplars_retrieve is False
    assert FlareContext(prompt_set="paper", exemplar_retrieval=False).exemplars_retrieve is False


async def test_a_sentence_cut_short_by_its_budget_is_continued():
    lm = ScriptedLM([sentence("So the answer is Edward L. Cahn."),
                     [(" Cahn.", 0.95), EOS]])
    out = await run(lm, theta=0.5, max_sentence_tokens=6)
    # six tokens end in the middle of the answer sentence: the next draft completes it
    assert out["answer"] == "So the answer is Edward L. Cahn."
    assert len(lm.prompts) == 2


def test_documents_are_the_same_only_if_id_title_and_text_all_are():
    from activerag.nodes.loop import same_documents

    a = make_document("Alpha Beta was born in Kelmor.", "Alpha Beta")
    assert same_documents([a], [make_document("Alpha Beta was born in Kelmor.", "Alpha Beta")])
    retitled = a.model_copy(update={"metadata": {**a.metadata, "title": "Alpha"}})
    untitled = a.model_copy(update={"metadata": {}})
    assert not same_documents([a], [retitled]) and not same_documents([a], [untitled])
    assert same_documents([untitled], [a.model_copy(update={"metadata": {"title": ""}})])
    assert not same_documents([a], [a.model_copy(update={"id": "other"})])
    assert not same_documents([a], [a, a]) and same_documents([], [])

"""Each method's retrieval schedule with a scripted LM: which steps retrieve, with which query."""

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.graphs.flare import build_flare_graph, build_next_sentence_graph
from activerag.graphs.flare_instruct import build_instruct_graph
from activerag.graphs.previous import build_previous_graph
from activerag.graphs.self_ask import build_self_ask_graph
from activerag.graphs.single import build_single_graph
from activerag.nodes.prompts import SEARCH_CLOSE
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing import memory_retriever
from activerag.testing.scripted import EOS, ScriptedLM, ends, last_turn, sentence

QUESTION = "Where was Alpha Beta born?"
SPLIT = SentenceSplitter()


def retriever(*extra: Document) -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Kelmor.", "Alpha Beta"),
               make_document("Kelmor lies on the Vedria River.", "Kelmor"),
               make_document("Gepu is a small town.", "Gepu"), *extra])
    return StoreRetriever(store=store, k=2)


def window(start: int, n: int = 16) -> list[tuple[str, float]]:
    return [(f" w{i}", 0.9) for i in range(start, start + n)]


def words(script) -> str:
    return " ".join("".join(t for t, _ in script).split())


def windows_graph(lm):
    return build_previous_graph(lm=lm, retriever=retriever(), splitter=SPLIT, unit="window")


async def test_previous_window_retrieves_every_16_tokens_with_the_previous_16():
    w0, w1, w2 = window(0), window(16), [*window(32, 5), EOS]
    lm = ScriptedLM([w0 + window(99, 3), w1 + window(99, 3), w2])
    out = await windows_graph(lm).ainvoke({"question": QUESTION}, context=FlareContext())
    trace = out["trace"]
    assert [c["max_tokens"] for c in lm.calls] == [16, 16, 16]
    assert [s["retrieved"] for s in trace] == [False, True, True]
    assert trace[0]["queries"] == [QUESTION]
    assert trace[1]["queries"] == [words(w0)]
    assert trace[2]["queries"] == [words(w1)]
    assert out["retrieval_steps"] == 3
    # the windows' words match no passage, so each of their queries also searched x
    assert [s["fallback"] for s in trace] == [False, True, True] and out["retrievals"] == 5
    assert "Search results:" in lm.prompts[0]


@pytest.mark.parametrize(("query_tokens", "expected"), [
    (-1, lambda a, b: words(a + b)),
    (8, lambda a, b: words(b[-8:])),
])
async def test_previous_window_query_length_varies_as_in_table_4(query_tokens, expected):
    w0, w1, w2 = window(0), window(16), [*window(32, 5), EOS]
    lm = ScriptedLM([w0, w1, w2])
    out = await windows_graph(lm).ainvoke({"question": QUESTION},
                                          context=FlareContext(query_tokens=query_tokens))
    assert out["trace"][2]["queries"] == [expected(w0, w1)]


async def test_a_window_answer_ends_once_its_sentence_is_complete():
    first = sentence("Alpha Beta was born in the city of Kelmor in Gepu. So the answer is Edward")
    assert len(first) == 16
    lm = ScriptedLM([first, sentence(" L. Cahn. Question") + window(0), window(50)])
    out = await windows_graph(lm).ainvoke({"question": QUESTION}, context=FlareContext())
    # the first window ends mid-answer; the second completes it and the answer ends there
    assert out["answer"] == ("Alpha Beta was born in the city of Kelmor in Gepu. "
                             "So the answer is Edward L. Cahn.")
    assert out["answer_tokens"] == 18
    assert len(lm.prompts) == 2


async def test_previous_sentence_retrieves_every_sentence_with_the_last_one():
    lm = ScriptedLM([sentence("Alpha Beta was born in Kelmor. It"),
                     sentence(" Kelmor lies on the Vedria River. So"),
                     ends(" So the answer is Kelmor.")])
    graph = build_previous_graph(lm=lm, retriever=retriever(), splitter=SPLIT)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    trace = out["trace"]
    assert [s["queries"] for s in trace] == [
        [QUESTION], ["Alpha Beta was born in Kelmor."], ["Kelmor lies on the Vedria River."]]
    assert [s["retrieved"] for s in trace] == [False, True, True]
    assert len(lm.prompts) == 3 and all("Search results:" in p for p in lm.prompts)


async def test_next_sentence_retrieves_every_sentence_with_the_whole_draft():
    lm = ScriptedLM([sentence("Alpha was born in Gepu. It", prob=0.99),
                     sentence("Alpha Beta was born in Kelmor. So"),
                     ends(" So the answer is Kelmor.", prob=0.99),
                     ends(" So the answer is Kelmor.")])
    graph = build_next_sentence_graph(lm=lm, retriever=retriever(), splitter=SPLIT)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert [s["queries"] for s in out["trace"]] == [["Alpha was born in Gepu."],
                                                    ["So the answer is Kelmor."]]
    assert all(s["retrieved"] for s in out["trace"])
    assert out["lm_calls"] == 4


async def test_combined_retrieval_keeps_the_question_documents_in_every_prompt():
    lm = ScriptedLM([ends("Gepu is small.", low={"small.": 0.1}),
                     sentence("Gepu is a small town. It"),
                     ends(" It is quiet.", prob=0.99)])
    graph = build_flare_graph(lm=lm, retriever=retriever(), splitter=SPLIT)
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(theta=0.5, combine_retrieval=True))
    # D_q (the masked draft "Gepu is" finds only Gepu) followed by D_x
    assert out["trace"][0]["doc_titles"] == ["Gepu", "Alpha Beta"]
    regen = lm.prompts[1]
    assert "Gepu: Gepu is a small town." in regen  # D_q, retrieved with the masked draft
    assert "Alpha Beta: Alpha Beta was born in Kelmor." in regen  # D_x, kept (Table 9)
    # the next (confident) draft sees both too
    assert "Alpha Beta: Alpha Beta was born in Kelmor." in lm.prompts[2]
    assert out["trace"][1]["doc_titles"] == ["Gepu", "Alpha Beta"]


async def test_single_time_retrieval_ends_with_the_answer_sentence():
    lm = ScriptedLM([sentence("Alpha was born in Kelmor. So the answer is Kelmor. Gepu is")
                     + [EOS]])
    graph = build_single_graph(lm=lm, retriever=retriever(), splitter=SPLIT)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert out["answer"] == "Alpha was born in Kelmor. So the answer is Kelmor."
    assert [s["sentence"] for s in out["trace"]] == ["Alpha was born in Kelmor.",
                                                     "So the answer is Kelmor."]
    assert out["answer_tokens"] == 10
    assert out["generated_tokens"] == 11  # the stream closed one word into the next sentence
    assert lm.calls[0]["max_tokens"] == 256 and "\n\n" in lm.calls[0]["stop"]


async def test_single_time_retrieval_stops_at_a_blank_line():
    lm = ScriptedLM([sentence("Alpha was born in Kelmor.") + [("\n\n", 0.9), ("Question", 0.9)]])
    graph = build_single_graph(lm=lm, retriever=retriever(), splitter=SPLIT, retrieval=False)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert out["answer"] == "Alpha was born in Kelmor."
    assert out["retrieval_steps"] == 0 and "Search results:" not in last_turn(lm.prompts[0])


async def test_self_ask_retrieves_for_each_follow_up():
    lm = ScriptedLM([
        sentence(" Yes.\nFollow up: Who is Alpha Beta?\nIntermediate answer: more"),
        sentence(" A person.\nFollow up: Which river flows through Kelmor?\nIntermediate answer:"),
        sentence(" The Vedria River.\nSo the final answer is: Kelmor.\nQuestion"),
    ])
    graph = build_self_ask_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    trace = out["trace"]
    assert [s["queries"] for s in trace] == [
        [QUESTION], ["Who is Alpha Beta?"], ["Which river flows through Kelmor?"]]
    assert [s["retrieved"] for s in trace] == [False, True, True]
    assert trace[2]["doc_titles"][0] == "Kelmor"
    assert all("Intermediate answer:" in c["stop"] for c in lm.calls)
    assert out["answer"].count("Intermediate answer:") == 2
    assert out["answer"].endswith("So the final answer is: Kelmor.")


async def test_self_ask_retrieves_for_a_follow_up_the_model_ended_on():
    """A chat model often ends its turn after the follow-up instead of writing "Intermediate
    answer:": that is the same pause (the self-ask authors' loop goes on while the last line
    is a follow-up)."""
    lm = ScriptedLM([
        ends(" Yes.\nFollow up: Where was Alpha Beta born?"),
        sentence(" Kelmor.\nSo the final answer is: Kelmor.\nQuestion"),
    ])
    out = await build_self_ask_graph(lm=lm, retriever=retriever()).ainvoke(
        {"question": QUESTION}, context=FlareContext())
    trace = out["trace"]
    assert [s["queries"] for s in trace] == [[QUESTION], ["Where was Alpha Beta born?"]]
    assert trace[1]["retrieved"] and trace[1]["doc_titles"][0] == "Alpha Beta"
    assert "follow-up" in trace[0]["why"]
    assert lm.prompts[1].endswith("Follow up: Where was Alpha Beta born?\nIntermediate answer:")
    assert out["answer"].endswith("So the final answer is: Kelmor.")


async def test_self_ask_asks_for_the_final_answer_once_when_the_model_ends_without_it():
    lm = ScriptedLM([
        sentence(" Yes.\nFollow up: Where was Alpha Beta born?\nIntermediate answer: more"),
        ends(" Kelmor."),
        ends(" Kelmor."),
    ])
    out = await build_self_ask_graph(lm=lm, retriever=retriever()).ainvoke(
        {"question": QUESTION}, context=FlareContext())
    assert lm.prompts[2].endswith("Intermediate answer: Kelmor.\nSo the final answer is:")
    assert out["answer"].endswith("So the final answer is: Kelmor.")
    assert "without a final answer" in out["trace"][1]["why"]
    assert len(lm.prompts) == 3


async def test_self_ask_appends_the_final_answer_line_only_once():
    lm = ScriptedLM([ends(" No."), [EOS], ends(" never asked")])
    out = await build_self_ask_graph(lm=lm, retriever=retriever()).ainvoke(
        {"question": QUESTION}, context=FlareContext())
    assert len(lm.prompts) == 2 and out["answer"].endswith("No.\nSo the final answer is:")


def test_self_ask_has_no_exemplars_for_other_paper_sets():
    from activerag.nodes.exemplars import task_for

    for prompt_set in ("paper-strategyqa", "paper-asqa"):
        with pytest.raises(ActiveRagError, match="self-ask has exemplars for 2WikiMultihopQA"):
            task_for(FlareContext(prompt_set=prompt_set), "self_ask")


async def test_flare_instruct_searches_removes_the_call_and_bans_brackets():
    lm = ScriptedLM([
        sentence("Alpha was born in [Search(Alpha Beta (person) birthplace)] x"),
        [(" Kelmor.", 0.9)] + [(" So", 0.9)] * 7,
        ends(" the answer is Kelmor."),
    ])
    graph = build_instruct_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    bracket = 1000 + ord("[")
    assert SEARCH_CLOSE in lm.calls[0]["stop"]
    assert lm.calls[0]["logit_bias"] == {bracket: 2.0}
    assert lm.calls[1]["logit_bias"] == {bracket: -100.0}
    assert lm.calls[1]["max_tokens"] == 8
    assert lm.calls[2]["logit_bias"] == {bracket: 2.0}
    assert "[Search" not in out["answer"]
    # the removed search leaves one space, not two
    assert out["answer"] == "Alpha was born in Kelmor. So So So So So So So the answer is Kelmor."
    trace = out["trace"]
    # parentheses inside the query survive the closing ")]"
    assert trace[1]["queries"] == ["Alpha Beta (person) birthplace"] and trace[1]["retrieved"]
    assert trace[1]["doc_titles"][0] == "Alpha Beta"
    # documents stay until the next search
    assert trace[2]["doc_ids"] == trace[1]["doc_ids"] and not trace[2]["retrieved"]
    assert "Search results:" in lm.prompts[2]


async def test_an_empty_search_is_removed_and_retrieves_nothing():
    lm = ScriptedLM([
        sentence("Alpha was born in [Search()] x"),
        [(" Kelmor.", 0.9), EOS],
    ])
    graph = build_instruct_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert out["answer"] == "Alpha was born in Kelmor."
    assert ")]" not in out["answer"]
    assert out["retrievals"] == 1  # only D_x
    assert lm.calls[1]["logit_bias"] == {1000 + ord("["): -100.0}


async def test_search_syntax_inside_documents_never_triggers_a_search():
    trap = make_document("Alpha Beta [Search(secret plans)] was born in Gepu.", "Trap")
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.")])
    graph = build_instruct_graph(lm=lm, retriever=retriever(trap))
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert "[Search(secret plans)]" in lm.prompts[0]
    assert out["retrievals"] == 1 and len(out["trace"]) == 1


async def test_a_model_that_only_ever_searches_is_stopped():
    # the scripted LM ignores the ban, so every unit asks again and keeps nothing
    lm = ScriptedLM([[("[Search(again)]", 0.9)] * 8 for _ in range(400)])
    graph = build_instruct_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(max_answer_tokens=16),
                              config={"recursion_limit": 10_000})
    assert out["generated_tokens"] >= 8 * 16
    assert len(lm.prompts) < 400


async def test_self_ask_goes_on_past_an_intermediate_answer_is():
    lm = ScriptedLM([
        sentence(" Yes.\nFollow up: Who is Alpha Beta?\nIntermediate answer: more"),
        sentence(" The answer is a person.\nFollow up: Where was Alpha Beta born?\n"
                 "Intermediate answer:"),
        sentence(" Kelmor.\nSo the final answer is: Kelmor.\nQuestion"),
    ])
    graph = build_self_ask_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert [s["queries"] for s in out["trace"]][1:] == [["Who is Alpha Beta?"],
                                                        ["Where was Alpha Beta born?"]]
    assert out["answer"].endswith("So the final answer is: Kelmor.")
    assert len(lm.prompts) == 3


async def test_a_search_right_after_answer_is_still_searches():
    lm = ScriptedLM([
        sentence("Alpha was born in Kelmor. So the answer is [Search(Alpha Beta birthplace)] x"),
        [(" Kelmor.", 0.9), EOS],
    ])
    graph = build_instruct_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    assert out["retrievals"] == 2
    assert out["answer"] == "Alpha was born in Kelmor. So the answer is Kelmor."


async def test_combined_retrieval_keeps_documents_without_ids():
    class NoIds(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager):
            found = retriever().invoke(query)
            return [Document(page_content=d.page_content, metadata=d.metadata) for d in found]

    lm = ScriptedLM([ends("Gepu is small.", low={"small.": 0.1}),
                     ends("Gepu is a small town.")])
    graph = build_flare_graph(lm=lm, retriever=NoIds(), splitter=SPLIT)
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(theta=0.5, combine_retrieval=True))
    assert out["trace"][0]["doc_titles"] == ["Gepu", "Alpha Beta"]


async def test_exemplar_documents_follow_an_ingest(monkeypatch):
    from activerag.nodes.prompts import Exemplar, Task

    task = Task("Answer.", (Exemplar("Which river flows through Vesk?", "The Ora."),))
    monkeypatch.setattr("activerag.nodes.exemplars.task_for", lambda ctx, kind="cot": task)
    found = retriever()
    lm = ScriptedLM([ends("Alpha was born in Kelmor."), ends("Alpha was born in Kelmor.")])
    graph = build_flare_graph(lm=lm, retriever=found, splitter=SPLIT)
    ctx = FlareContext(theta=0.5, exemplar_retrieval=True)
    await graph.ainvoke({"question": QUESTION}, context=ctx)
    found.store.add([make_document("The Ora flows through Vesk.", "Vesk")])
    await graph.ainvoke({"question": QUESTION}, context=ctx)
    assert "[1] Vesk: The Ora flows through Vesk." not in lm.prompts[0]
    assert "[1] Vesk: The Ora flows through Vesk." in lm.prompts[1]


async def test_the_window_after_a_search_may_end_inside_the_answer():
    lm = ScriptedLM([
        sentence("Alpha was born in [Search(Alpha Beta birthplace)] x"),
        [(" Kelmor.", 0.9), (" So", 0.9), (" the", 0.9), (" answer", 0.9), (" is", 0.9),
         (" Edward", 0.9), (" L.", 0.9), (" Ca", 0.9), ("hn.", 0.9)],
        [("hn.", 0.9), EOS],
    ])
    graph = build_instruct_graph(lm=lm, retriever=retriever())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext())
    # the 8-token ban window ran out in the middle of the name; the answer goes on after it
    assert out["answer"] == "Alpha was born in Kelmor. So the answer is Edward L. Cahn."
    assert len(lm.prompts) == 3


async def test_prompt_set_none_sends_the_instruction_without_exemplars():
    """Zero-shot (issue #37's comparison with FlareChain, which sends no exemplars): the
    prompt holds the library's instruction and the question, none of its exemplars."""
    from activerag.nodes.prompts import COT_EXEMPLARS

    lm = ScriptedLM([ends("So the answer is Gepu.")])
    graph = build_single_graph(lm=lm, retriever=memory_retriever({"A": "Alpha was born in Gepu."}),
                               splitter=SentenceSplitter())
    await graph.ainvoke({"question": "Where was Alpha born?"},
                        context=FlareContext(prompt_set="none"))
    assert "Where was Alpha born?" in lm.prompts[0]
    assert all(e.question not in lm.prompts[0] for e in COT_EXEMPLARS)
    lm = ScriptedLM([ends("So the answer is Gepu.")])
    graph = build_single_graph(lm=lm, retriever=memory_retriever({"A": "Alpha was born in Gepu."}),
                               splitter=SentenceSplitter())
    await graph.ainvoke({"question": "Where was Alpha born?"}, context=FlareContext())
    assert any(e.question in lm.prompts[0] for e in COT_EXEMPLARS)

"""What each node's update shows (Studio, the run page), the sources an output cites, and the
tokens streamed while a method drafts and writes; with scripted LMs."""

from typing import Any

import pytest
from langchain_core.documents import Document
from langgraph.checkpoint.memory import InMemorySaver

from activerag.context import FlareContext
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import score
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.replug import build_replug_graph
from activerag.graphs.seakr import build_flare_seakr_graph
from activerag.nodes.loop_logic import mask_flags, masked_query
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.seakr.context import SeakrContext
from activerag.nodes.studio_logic import add_sources, marked_draft, source_of
from activerag.sentences import SentenceSplitter
from activerag.serving.cache import CachedLM
from activerag.serving.lm import VLLMClient, text_sink
from activerag.testing import (
    ScriptedLM,
    ScriptedTokenLM,
    ends,
    memory_retriever,
    says,
    sentence,
)
from tests.fakeserver import FakeServer

QUESTION = "Where was Alpha Beta born?"
PASSAGES = {"Alpha Beta": "Alpha Beta was born in Kelmor.",
            "Kelmor": "Kelmor lies on the Vedria River, where Alpha Beta was born.",
            "Gepu": "Gepu is a small town."}


def toks(*pairs: tuple[str, float]) -> list[tuple[str, float, int]]:
    out, at = [], 0
    for text, p in pairs:
        out.append((text, p, at))
        at += len(text)
    return out


def doc(text: str, title: str, id_: str | None) -> Document:
    return Document(page_content=text, metadata={"title": title}, id=id_)


# --- pure logic --------------------------------------------------------------------------------

def test_sources_keep_each_document_once_in_the_order_first_retrieved():
    a, b, c = doc("A.", "Ta", "a"), doc("B.", "Tb", "b"), doc("C.", "Tc", "c")
    first = add_sources([], [b, a])
    assert first == [{"id": "b", "title": "Tb", "text": "B."},
                     {"id": "a", "title": "Ta", "text": "A."}]
    assert [s["id"] for s in add_sources(first, [a, c, b, c])] == ["b", "a", "c"]
    # a document without an id is known by its text
    bare = [doc("X.", "Tx", None), doc("X.", "Tx2", None), doc("Y.", "Ty", None)]
    assert [s["text"] for s in add_sources([], bare)] == ["X.", "Y."]
    assert source_of(Document(page_content="Z.", metadata={"id": "m", "title": "Tz"})) == {
        "id": "m", "title": "Tz", "text": "Z."}


def test_the_marked_draft_strikes_the_masked_runs_and_leaves_their_spaces_outside():
    tokens = toks(("Alpha", 0.9), (" was", 0.9), (" born", 0.9), (" in", 0.9), (" Ge", 0.2),
                  ("pu.", 0.3))
    assert marked_draft(tokens, [False] * 4 + [True, True]) == "Alpha was born in ~~Gepu.~~"
    assert marked_draft(tokens, [True, False, True, True, False, False]) == (
        "~~Alpha~~ was ~~born in~~ Gepu.")
    assert marked_draft(tokens, [False] * 6) == "Alpha was born in Gepu."


def test_mask_flags_are_what_masked_query_removes():
    tokens = toks(("Alpha", 0.9), (" Ge", 0.2), ("pu", 0.9), (" born", 0.3), (" in", 0.9))
    assert mask_flags(tokens, 0.4) == [False, True, False, True, False]
    assert mask_flags(tokens, 0.4, "word") == [False, True, True, True, False]
    assert mask_flags(tokens, 0.4, "word", frozenset({"born"})) == [False, True, True, False,
                                                                    False]
    assert masked_query(tokens, 0.4) == "Alpha pu in"
    assert masked_query(tokens, 0.4, "word") == "Alpha in"


# --- node updates ------------------------------------------------------------------------------

def unsure_then_sure() -> ScriptedLM:
    """A draft unsure of its last word (FLARE retrieves), then the regenerated sentence."""
    return ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                       ends("Alpha Beta was born in Kelmor.")])


def flare(lm: ScriptedLM, **kwargs: Any):
    return build_flare_graph(lm=lm, retriever=memory_retriever(PASSAGES, k=2),
                             splitter=SentenceSplitter(), **kwargs)


async def updates(graph, **ctx: Any) -> list[tuple[str, dict]]:
    """Each node's update as the dev server streams it: only the output's keys."""
    return [(node, update) async for chunk in graph.astream(
        {"question": QUESTION}, context=FlareContext(**ctx), stream_mode="updates",
        output_keys=graph.output_channels) for node, update in chunk.items()]


async def test_every_node_update_shows_what_the_node_decided_through_the_output_keys():
    seen = await updates(flare(unsure_then_sure()), theta=0.5, beta=0.4)
    assert [n for n, _ in seen] == ["begin", "retrieve_input", "draft", "confidence_gate",
                                    "formulate_query", "retrieve", "regenerate", "accept"]
    assert all(u and u["decision"]["node"] == n for n, u in seen)
    shown = {n: u["decision"] for n, u in seen}
    assert shown["begin"] == {"node": "begin", "question": QUESTION, "retrieve_first": True,
                              "reset": ["answer", "trace", "retrieved_titles", "sources",
                                        "lm_calls", "generated_tokens", "prompt_tokens",
                                        "retrievals", "retrieval_steps"]}
    assert shown["retrieve_input"]["queries"] == [QUESTION]
    first = shown["retrieve_input"]["documents"]
    assert {d["title"] for d in first} == {"Alpha Beta", "Kelmor"}
    assert all(set(d) == {"id", "title", "text"} and d["id"] and d["text"] == PASSAGES[d["title"]]
               for d in first)
    assert shown["draft"] == {"node": "draft", "text": "Alpha Beta was born in Gepu.",
                              "min_prob": pytest.approx(0.3)}
    gate = shown["confidence_gate"]
    assert (gate["trigger"], gate["fire"], gate["threshold"]) == ("min_prob", True, 0.5)
    assert gate["value"] == pytest.approx(0.3) and "lowest token probability" in gate["measure"]
    query = shown["formulate_query"]
    assert query["marked"] == "Alpha Beta was born in ~~Gepu.~~"
    assert query["masked"] == [[" Gepu.", pytest.approx(0.3)]]
    assert (query["formulation"], query["beta"], query["queries"], query["fallback"]) == (
        "implicit", 0.4, ["Alpha Beta was born in"], False)
    found = shown["retrieve"]
    assert found["queries"] == ["Alpha Beta was born in"] and not found["fallback"]
    assert [d["title"] for d in found["documents"]] == ["Alpha Beta", "Kelmor"]
    assert all(d["id"] and d["text"] == PASSAGES[d["title"]] for d in found["documents"])
    assert shown["regenerate"]["text"] == "Alpha Beta was born in Kelmor."
    assert shown["accept"] == {"node": "accept", "index": 0,
                               "sentence": "Alpha Beta was born in Kelmor.", "done": True,
                               "ended": "model ended"}


async def test_a_confident_draft_shows_the_gate_holding_back():
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.9)])
    seen = dict(await updates(flare(lm), theta=0.5, initial_retrieval=False))
    assert seen["begin"]["decision"]["retrieve_first"] is False
    gate = seen["confidence_gate"]["decision"]
    assert gate["fire"] is False and gate["value"] == pytest.approx(0.9)
    assert "formulate_query" not in seen


async def test_the_gate_shows_each_triggers_own_measure():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.25}), ends("Kelmor.")])
    gate = dict(await updates(flare(lm), theta=0.5, trigger="mean_surprisal"))[
        "confidence_gate"]["decision"]
    assert gate["trigger"] == "mean_surprisal" and gate["fire"] is False
    assert gate["value"] == pytest.approx((0.95 ** 5 * 0.25) ** (1 / 6))


async def test_explicit_queries_show_the_spans_and_the_questions_asked():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                     ends("Where was Alpha Beta born?"), ends("Alpha Beta was born in Kelmor.")])
    query = dict(await updates(flare(lm), theta=0.5, beta=0.4, query_formulation="explicit"))[
        "formulate_query"]["decision"]
    assert query["formulation"] == "explicit" and query["spans"] == ["Gepu"]
    assert query["queries"] == ["Where was Alpha Beta born?"]
    assert query["marked"] == "Alpha Beta was born in ~~Gepu.~~"


async def test_the_next_sentence_graph_shows_its_whole_draft_query():
    from activerag.graphs.flare import build_next_sentence_graph

    graph = build_next_sentence_graph(lm=unsure_then_sure(), retriever=memory_retriever(PASSAGES,
                                      k=2),
                                      splitter=SentenceSplitter())
    seen = dict(await updates(graph))
    assert seen["formulate_query"]["decision"] == {
        "node": "formulate_query", "formulation": "whole",
        "queries": ["Alpha Beta was born in Gepu."], "fallback": False}
    assert seen["confidence_gate"]["decision"]["trigger"] == "always"


# --- sources -----------------------------------------------------------------------------------

async def test_sources_list_each_document_once_while_retrieved_titles_count_every_retrieval():
    lm = ScriptedLM([sentence("Alpha Beta was born in Gepu. It", low={"Gepu.": 0.3}),
                     sentence("Alpha Beta was born in Kelmor. It"),
                     ends("So Gepu is wrong.", low={"wrong.": 0.3}),
                     ends("So the answer is Kelmor.")])
    out = await flare(lm).ainvoke({"question": QUESTION},
                                  context=FlareContext(theta=0.5, beta=0.4))
    # three retrievals, documents retrieved more than once: titles repeat, sources do not
    assert out["retrieval_steps"] == 3 and len(out["retrieved_titles"]) == 5
    ids = [s["id"] for s in out["sources"]]
    assert len(ids) == len(set(ids)) == len(set(out["retrieved_titles"]))
    assert [s["title"] for s in out["sources"]] == list(dict.fromkeys(out["retrieved_titles"]))
    assert all(s["text"] == PASSAGES[s["title"]] for s in out["sources"])
    traced = [i for step in out["trace"] for i in step["doc_ids"]]
    assert set(traced) <= set(ids)
    # gold-title recall reads the titles as a set: the same with the sources' titles
    example = Example("q", QUESTION, ["Kelmor"], gold_titles=["Kelmor", "Orla"])
    assert score(example, out["answer"], out["retrieved_titles"])["gold_title_recall"] == (
        score(example, out["answer"], [s["title"] for s in out["sources"]])[
            "gold_title_recall"]) == 0.5


async def test_a_second_run_on_a_thread_starts_with_no_sources():
    lm = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
                     ends("Alpha Beta was born in Kelmor."),
                     ends("Gepu is small.", prob=0.9)])
    graph = flare(lm, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"question": QUESTION}, config, context=FlareContext(theta=0.5))
    out = await graph.ainvoke({"question": "Is Gepu small?"}, config,
                              context=FlareContext(theta=0.5, initial_retrieval=False))
    assert out["sources"] == [] and out["retrieved_titles"] == []


async def test_seakr_cites_the_documents_it_kept():
    tokens = ScriptedTokenLM({m: says(f"Alpha Beta was born in {m}.", p)
                              for m, p in {"Kelmor": 0.99, "Vedria": 0.3, "Gepu": 0.2}.items()})
    graph = build_flare_seakr_graph(lm=unsure_then_sure(), token_lm=tokens,
                                    retriever=memory_retriever(PASSAGES, k=3),
                                    splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION}, context=SeakrContext(
        theta=0.5, k=1, rerank_pool=3, initial_retrieval=False))
    [step] = out["trace"]
    assert [s["id"] for s in out["sources"]] == step["doc_ids"]


async def test_replug_cites_the_ensembled_documents():
    lm = ScriptedTokenLM({"Kelmor": says("So the answer is Kelmor."),
                          "Vedria": says("So the answer is Kelmor.")})
    graph = build_replug_graph(token_lm=lm, retriever=memory_retriever(PASSAGES, k=2),
                               splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=2))
    assert [s["title"] for s in out["sources"]] == out["retrieved_titles"]
    assert [s["id"] for s in out["sources"]] == out["trace"][0]["doc_ids"]


# --- token events ------------------------------------------------------------------------------

async def test_tokens_stream_before_their_sentence_and_make_the_kept_text():
    lm = ScriptedLM([sentence("Alpha Beta was born in Gepu. It", low={"Gepu.": 0.3}),
                     sentence("Alpha Beta was born in Kelmor. It"),
                     ends("So the answer is Kelmor.", prob=0.9)])
    events = [(mode, chunk) async for mode, chunk in flare(lm).astream(
        {"question": QUESTION}, context=FlareContext(theta=0.5), stream_mode=["custom",
                                                                              "updates"])]
    custom = [c for m, c in events if m == "custom"]
    tokens = [c for c in custom if c.get("kind") == "token"]
    assert all(set(t) == {"kind", "node", "text"} for t in tokens)
    # per node run, in order: the pieces make exactly the kept text (never the next sentence's
    # first word, which the sentence cut had to see)
    runs: list[tuple[str, str]] = []
    for t in tokens:
        if runs and runs[-1][0] == t["node"]:
            runs[-1] = (t["node"], runs[-1][1] + t["text"])
        else:
            runs.append((t["node"], t["text"]))
    assert runs == [("draft", "Alpha Beta was born in Gepu."),
                    ("regenerate", "Alpha Beta was born in Kelmor."),
                    ("draft", "So the answer is Kelmor.")]
    # the sentence events are kept, and each comes after its tokens
    order = [("sentence" if "sentence" in c else c["node"]) for c in custom]
    assert order.index("sentence") > order.index("regenerate")
    assert [c["sentence"]["sentence"] for c in custom if "sentence" in c] == [
        "Alpha Beta was born in Kelmor.", "So the answer is Kelmor."]


async def test_no_token_events_outside_custom_streaming_or_a_graph_run():
    lm = ScriptedLM([ends("Kelmor.", prob=0.9)])
    modes = [m async for m, _ in flare(lm).astream(
        {"question": QUESTION}, context=FlareContext(initial_retrieval=False),
        stream_mode=["updates", "values"])]
    assert "custom" not in modes
    lm = ScriptedLM([ends("Kelmor.")])
    gen = await lm.generate("p", max_tokens=5)  # no sink set: nothing to send to
    assert gen.text == "Kelmor." and text_sink.get() is None


async def test_a_cache_hit_streams_its_whole_text_once(tmp_path):
    cached = CachedLM(ScriptedLM([ends("Alpha Beta was born in Kelmor.")]), tmp_path / "c.db")
    pieces: list[str] = []
    token = text_sink.set(pieces.append)
    try:
        await cached.generate("p", max_tokens=20)
        missed = list(pieces)
        pieces.clear()
        await cached.generate("p", max_tokens=20)
    finally:
        text_sink.reset(token)
    assert len(missed) == 6 and "".join(missed) == "Alpha Beta was born in Kelmor."
    assert pieces == ["Alpha Beta was born in Kelmor."] and cached.hits == 1


async def test_the_vllm_client_streams_the_kept_text_not_the_look_ahead():
    pieces: list[str] = []
    token = text_sink.set(pieces.append)
    try:
        with FakeServer(["Alpha was born in Kelmor. It is far.", "Alpha was born."]) as server:
            client = VLLMClient(server.url, "fake-model")
            gen = await client.generate("p", max_tokens=20,
                                        cut=SentenceSplitter().first_sentence_end)
            assert gen.text == "Alpha was born in Kelmor."
            assert "".join(pieces) == gen.text and len(pieces) == 5
            pieces.clear()
            whole = await client.generate("p", max_tokens=20)
            assert "".join(pieces) == whole.text == "Alpha was born."
    finally:
        text_sink.reset(token)


async def test_an_estimator_trigger_shows_its_estimate_and_threshold():
    import math

    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.9)])
    gate = dict(await updates(flare(lm), trigger="perplexity"))["confidence_gate"]["decision"]
    assert gate["trigger"] == "perplexity" and gate["threshold"] == 0.217
    assert gate["value"] == pytest.approx(-math.log(0.9)) and gate["fire"] is False
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor.", prob=0.9)])
    gate = dict(await updates(flare(lm), trigger="every_n", trigger_n=50))[
        "confidence_gate"]["decision"]
    assert (gate["value"], gate["threshold"], gate["fire"]) == (6, 50, False)

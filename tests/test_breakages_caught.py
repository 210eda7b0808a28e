"""One test per hand-made breakage that survived the suites (issue #19): each passes on
today's code and fails with its breakage applied (benchmarks/robustness/breakages.py measures
that)."""

import re
from collections.abc import Sequence

import pytest
from fakeserver import FakeServer
from langchain_core.documents import Document
from test_replug_graph import QUESTION, retriever

from activerag.context import FlareContext
from activerag.errors import ActiveRagError, NoLogprobs
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import VLLMClient
from activerag.serving.lm_errors import LMServerError
from activerag.serving.token_lm import VLLMTokens
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.fake_lm import QuietHandler, serving
from activerag.testing.scripted import ScriptedLM, ScriptedSampler, WordTokens, ends, sentence
from activerag.testing.scripted_tokens import ScriptedTokenLM, says


def test_replug_keeps_its_own_k_whatever_flares():
    from activerag.graphs.registry import method

    _, ctx = method("replug", FlareContext(k=2))
    assert ctx.k == 10
    _, flare = method("flare", FlareContext(k=3))
    assert flare.k == 3


async def test_fit_documents_leaves_the_answers_reserve():
    from activerag.nodes.replug.tokens import fit_documents

    lm = ScriptedTokenLM({}, window=20)
    doc = Document(page_content=" ".join(f"w{i}" for i in range(10)), id="d")
    docs, prompts, notes = await fit_documents(lm, [doc], lambda d: f"Q {d.page_content} A", 10)
    # a 12-token prompt in a 20-token window with 10 reserved: the document is cut to 8 words
    assert [len(p) for p in prompts] == [10]
    assert docs[0].page_content == " ".join(f"w{i}" for i in range(8))
    assert notes == ["document d cut from 10 to 8 tokens to fit the 20-token context with 10 "
                     "tokens left for the answer"]


async def test_flare_replug_regenerates_only_the_answer_tokens_left():
    from activerag.graphs.replug import build_flare_replug_graph

    # the first sentence (5 tokens) is kept; 3 of max_answer_tokens=8 are left for the next
    draft = ScriptedLM([sentence("Alpha Beta is a person. Alpha"),
                        sentence(" Alpha Beta was born in Gepu.", low={"Alpha": 0.2})])
    token_lm = ScriptedTokenLM({"Vesk": says("Alpha Beta was born in Vesk."),
                                "Ulm": says("Alpha Beta was born in Ulm.")})
    graph = build_flare_replug_graph(lm=draft, token_lm=token_lm, retriever=retriever(),
                                     splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext(
        theta=0.5, initial_retrieval=False, max_answer_tokens=8))
    assert draft.calls[1]["max_tokens"] == 3
    asked = [c["max_tokens"] for c in token_lm.calls if c["kind"] == "steps"]
    assert asked and max(asked) <= 3
    assert out["answer_tokens"] <= 8


async def test_a_cached_generation_keeps_its_alternatives(tmp_path):
    from activerag.serving.cache import CachedLM
    from activerag.serving.generation import Generation, Token

    class Alternatives:
        model = "m"
        top_logprobs = 3

        async def generate(self, prompt, **kwargs):
            top = (-0.1, -2.0, -3.0)
            return Generation("a", [Token("a", -0.1, 0, top)], True, 1, prompt=prompt)

    lm = CachedLM(Alternatives(), tmp_path / "cache.sqlite", served=[])
    fresh = await lm.generate("p", max_tokens=4)
    again = await lm.generate("p", max_tokens=4)
    assert lm.hits == 1
    assert again.tokens == fresh.tokens
    assert again.tokens[0].top == (-0.1, -2.0, -3.0)


class _Fails(QuietHandler):
    """Answers every request with HTTP 500, as vLLM does on an engine error."""

    def do_POST(self):
        self._body()
        self._json(500, {"error": "engine dead"})


async def test_a_500_from_the_token_server_is_a_retried_server_error():
    from activerag.graphs.base import LM_RETRY

    with serving(_Fails) as url:
        with pytest.raises(LMServerError, match="500") as err:
            await VLLMTokens(url, "m").steps([1, 2], 1, 1)
    assert LM_RETRY.retry_on and isinstance(err.value, LM_RETRY.retry_on)


@pytest.mark.parametrize(("reason", "ended"), [("stop", True), ("length", False)])
async def test_the_token_servers_finish_reason_says_whether_the_model_ended(reason, ended):
    class Finishes(QuietHandler):
        def do_POST(self):
            self._body()
            self._json(200, {"choices": [{"text": "a", "finish_reason": reason, "logprobs": {
                "tokens": ["token_id:7"], "token_logprobs": [-0.5],
                "top_logprobs": [{"token_id:7": -0.5}]}}], "usage": {"prompt_tokens": 2}})

    with serving(Finishes) as url:
        steps = await VLLMTokens(url, "m").steps([1, 2], 1, 1)
    assert steps.ended is ended
    assert [p.token for p in steps.positions] == [7]


def test_flare_combined_lists_a_document_in_both_d_q_and_d_x_once():
    from activerag.nodes.loop import prompt_documents

    a, b = make_document("Alpha.", "A"), make_document("Beta.", "B")
    state = {"step": {"documents": [a]}, "input_documents": [a, b]}
    docs = prompt_documents(state, FlareContext(combine_retrieval=True))
    assert [d.id for d in docs] == [a.id, b.id]


async def test_single_stops_at_max_sentences_and_counts_only_the_kept_tokens():
    from activerag.graphs.single import build_single_graph

    lm = ScriptedLM([ends("Alpha is big. Beta is small. Gamma is far.")])
    graph = build_single_graph(lm=lm, splitter=SentenceSplitter(), retrieval=False)
    out = await graph.ainvoke({"question": QUESTION}, context=FlareContext(max_sentences=1))
    assert out["answer"] == "Alpha is big."
    assert out["answer_tokens"] == 3
    assert len(out["trace"]) == 1


async def test_previous_sentence_stops_at_max_sentences():
    from activerag.graphs.previous import build_previous_graph

    lm = ScriptedLM([sentence("Alpha was born in Vesk. It"), ends(" It is big.")])
    graph = build_previous_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(max_sentences=1, initial_retrieval=False))
    assert out["answer"] == "Alpha was born in Vesk."
    assert len(lm.prompts) == 1


class _GrowingWords(WordTokens):
    """Words as tokens, except that a cut text tokenizes one token longer than its ids."""

    async def detokenize(self, ids: Sequence[int]) -> str:
        return await super().detokenize(ids) + " +"


async def test_fb_rag_fit_shrinks_a_cut_that_tokenizes_longer():
    from activerag.nodes.fb_rag.steps import SPECIAL_TOKENS, fit

    lm = _GrowingWords(window=30)
    prompt = " ".join(f"w{i}" for i in range(40))
    text, dropped = await fit(lm, prompt, 6, "reader")
    assert len(await lm.tokenize(text)) <= 30 - 6 - SPECIAL_TOKENS
    assert dropped > 0


async def test_fb_rag_refuses_read_words_equal_to_the_contexts_words():
    from activerag.graphs.fb_rag import build_fb_rag_graph

    context = "Passage 1:\nAda\nAda Marlow was born in Bergen.\n\nPassage 2:\nRiver\nIt floods."
    graph = build_fb_rag_graph(lm=ScriptedLM([]), token_lm=WordTokens(),
                               light_lm=ScriptedSampler(["Answer: x"]))

    def ctx(read_words: int) -> FBRagContext:
        return FBRagContext(chunking="paragraphs", recall_words=3, read_words=read_words,
                            samples=1, prompt_format="plain", light_prompt_format="plain",
                            light_base_url="http://127.0.0.1:8765/v1")

    given = {"question": "Where was Ada born?", "context": context}
    with pytest.raises(ActiveRagError, match="is not below") as err:
        await graph.ainvoke(given, context=ctx(10_000))
    words = int(re.search(r"context's (\d+) words", str(err.value)).group(1))
    with pytest.raises(ActiveRagError, match=rf"read_words \(Y = {words}\) is not below"):
        await graph.ainvoke(given, context=ctx(words))


def test_adding_to_an_indexed_store_searches_the_new_passages(tmp_path):
    store = BM25Store(tmp_path / "bm25")
    store.add([make_document("Alpha Beta was born in Vesk.", "Alpha"),
               make_document("Gepu is a small town.", "Gepu")])
    store.build_index()
    assert store.indexed
    store.add([make_document("Zorblat lives in Quenth.", "Zorblat")])
    assert not store.indexed
    assert [d.metadata["title"] for d, _ in store.search("Zorblat Quenth", 1)] == ["Zorblat"]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    """A real local Chroma store with the shipped MiniLM (offline), holding two passages."""
    from activerag.stores.chroma import ChromaStore

    store = ChromaStore(tmp_path_factory.mktemp("chroma"))
    assert store.add([make_document("The harbour lighthouse was built in 1881.", "Lighthouse"),
                      make_document("Bergen is a city on the west coast of Norway.", "Bergen")]
                     ) == 2
    return store


def test_chroma_scores_are_cosine_similarities(chroma):
    [(top, score), (other, rest)] = chroma.search("Bergen is a city on the west coast of Norway.",
                                                  2)
    assert top.metadata["title"] == "Bergen" and other.metadata["title"] == "Lighthouse"
    assert score == pytest.approx(1.0, abs=1e-3)
    assert score > rest


def test_chroma_adds_only_ids_it_does_not_hold(chroma):
    known = make_document("Bergen is a city on the west coast of Norway.", "Bergen")
    new = make_document("The river floods each spring.", "River")
    assert chroma.add([known, new, new]) == 1
    assert chroma.add([known]) == 0
    assert len(chroma) == 3


async def test_the_client_asks_for_the_alternatives_its_trigger_needs():
    with FakeServer(["Paris is big."]) as server:
        lm = VLLMClient(server.url, top_logprobs=20)
        with pytest.raises(NoLogprobs):  # the fake server sends one alternative per token
            await lm.generate("Q", max_tokens=4)
    assert server.completions[0]["logprobs"] == 20


def test_a_rows_file_of_only_damaged_lines_is_warned(tmp_path):
    from activerag.evaluation.evaluate import Run

    run = Run(tmp_path)
    run.start({"dataset": "t", "ids": ["q0"], "methods": ["single"], "contexts": {}})
    run.rows_file.write_text('{"method": "single", "id": "q0", "ans\n')
    result = run.write_summary({"dataset": "t"})
    assert (result["finished"], result["damaged_lines"]) == (0, 1)
    assert "1 line of examples.jsonl could not be read" in (tmp_path / "summary.md").read_text()


def test_the_retrieved_flag_is_the_steps_decision_not_its_queries():
    from activerag.evaluation.report import format_step

    step = {"index": 0, "min_prob": 0.9, "retrieved": False, "draft": "A.",
            "queries": ["the question"], "doc_titles": [], "doc_ids": [], "sentence": "A."}
    assert "kept" in format_step(step).splitlines()[0]
    assert "RETRIEVED" not in format_step(step)
    assert "RETRIEVED" in format_step({**step, "retrieved": True, "queries": []})


def test_an_unfinished_run_never_reaches_end_and_a_started_one_leaves_start():
    from activerag.drawing import END, START, Edge, Shape
    from activerag.page.record import RunRecord, taken_edges, visits

    unfinished = RunRecord("Q?", path=["draft"])
    assert visits(unfinished)[END] == 0 and visits(unfinished)[START] == 1
    assert visits(RunRecord("Q?", path=["draft"], complete=True))[END] == 1
    edges = {(START, "draft"), ("draft", END)}
    shape = Shape((START, "draft", END), tuple(Edge(s, t) for s, t in sorted(edges)))
    assert taken_edges(unfinished, shape) == {(START, "draft")}
    finished = RunRecord("Q?", path=["draft"], complete=True)
    assert taken_edges(finished, shape) == edges

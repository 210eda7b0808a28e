"""The REPLUG graph with a scripted token LM: branches, the ensemble, stops and counters."""

import math

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from activerag.context import FlareContext
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.replug.steps import weights_of
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.fake_lm import QuietHandler, serving
from activerag.testing.scripted import ScriptedLM, ends
from activerag.testing.scripted_tokens import EOS, ScriptedTokenLM, says

QUESTION = "Where was Alpha Beta born?"


def retriever(k: int = 2) -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Vesk.", "Alpha Beta"),
               make_document("Alpha Beta moved to Ulm.", "Alpha Move"),
               make_document("Gepu is a small town.", "Gepu")])
    return StoreRetriever(store=store, k=k)


async def run(lm, **ctx):
    graph = build_replug_graph(token_lm=lm, retriever=retriever(ctx.pop("k", 2)),
                               splitter=SentenceSplitter())
    return await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=2, **ctx))


def weights(retriever_kind: str = "bm25", tau: float | None = None):
    return weights_of(retriever().invoke(QUESTION), retriever_kind, tau)


def test_bm25_scores_are_scaled_by_the_top_one_unless_tau_is_set():
    docs = retriever().invoke(QUESTION)
    s1, s2 = (d.metadata["score"] for d in docs)
    assert s1 > s2 > 0
    expected = [1 / (1 + math.exp(s2 / s1 - 1)), 1 / (1 + math.exp(1 - s2 / s1))]
    assert weights() == pytest.approx(expected)
    assert weights(tau=1.0) == pytest.approx(
        [1 / (1 + math.exp(s2 - s1)), 1 / (1 + math.exp(s1 - s2))])
    # Chroma's cosine goes in as it is (Eq. 2)
    assert weights("chroma") == pytest.approx(weights(tau=1.0))


async def test_the_better_scored_document_wins_where_the_documents_disagree():
    lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk."),
                          "Ulm": says("So the answer is Ulm.")})
    out = await run(lm, ensemble="token")
    assert out["answer"] == "So the answer is Vesk."
    [entry] = out["trace"]
    assert entry["doc_titles"] == ["Alpha Beta", "Alpha Move"]
    assert entry["weights"][0] > entry["weights"][1]
    assert [t for t, _ in entry["tokens"]] == ["So", " the", " answer", " is", " Vesk."]
    # token mode: one request per document and position, the end of sequence included
    assert out["lm_calls"] == 2 * 6 and all(c["max_tokens"] == 1 for c in lm.calls)
    assert out["retrieval_steps"] == 1 and out["answer_tokens"] == 5


async def test_agree_gives_the_same_tokens_in_fewer_requests():
    beliefs = {"Vesk": says("So the answer is Vesk."), "Ulm": says("So the answer is Ulm.")}
    token = await run(ScriptedTokenLM(beliefs), ensemble="token")
    lm = ScriptedTokenLM(beliefs)
    agree = await run(lm, ensemble="agree", lookahead=8)
    assert agree["answer"] == token["answer"]
    assert agree["trace"][0]["tokens"] == token["trace"][0]["tokens"]
    # round 1: both agree on "So the answer is", differ at the 5th: 5 tokens decided;
    # round 2: "" (the end) from both
    assert agree["lm_calls"] == 4 < token["lm_calls"]
    assert [c["max_tokens"] for c in lm.calls] == [8, 8, 8, 8]


async def test_every_token_is_certified_when_the_documents_are_sure():
    lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk.", prob=0.99),
                          "Ulm": says("So the answer is Vesk.", prob=0.99)})
    out = await run(lm)
    assert out["certified"] == 1.0 and out["trace"][0]["certified"] == 1.0
    assert all(low == pytest.approx(0.99) for _, low in out["trace"][0]["tokens"])


async def test_a_blank_line_ends_the_answer():
    def belief(answer):
        words = ["It", " is", " Vesk.", "\n\nQuestion:", " more"]
        return {words[len(answer)] if len(answer) < len(words) else EOS: 0.9}

    out = await run(ScriptedTokenLM({"Vesk": belief, "Ulm": belief}))
    assert out["answer"] == "It is Vesk."


async def test_the_answer_ends_with_its_answer_sentence_and_each_sentence_is_traced():
    lm = ScriptedTokenLM({m: says("Alpha was born in Vesk. So the answer is Vesk. Gepu is big.")
                          for m in ("Vesk", "Ulm")})
    out = await run(lm, lookahead=3)
    assert out["answer"] == "Alpha was born in Vesk. So the answer is Vesk."
    assert [e["sentence"] for e in out["trace"]] == ["Alpha was born in Vesk.",
                                                     "So the answer is Vesk."]
    assert [e["index"] for e in out["trace"]] == [0, 1]


async def test_the_answer_token_cap_holds():
    lm = ScriptedTokenLM({m: says("w " * 40) for m in ("Vesk", "Ulm")})
    out = await run(lm, max_answer_tokens=6, lookahead=4)
    assert out["answer_tokens"] == 6
    # the second round only asks for the 2 tokens left
    assert [c["max_tokens"] for c in lm.calls] == [4, 4, 2, 2]


async def test_two_runs_on_one_thread_start_clean():
    beliefs = {"Vesk": says("So the answer is Vesk."), "Ulm": says("So the answer is Ulm.")}
    graph = build_replug_graph(token_lm=ScriptedTokenLM(beliefs), retriever=retriever(),
                               splitter=SentenceSplitter(), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = await graph.ainvoke({"question": QUESTION}, config, context=ReplugContext(k=2))
    second = await graph.ainvoke({"question": QUESTION}, config, context=ReplugContext(k=2))
    for key in ("answer", "trace", "lm_calls", "retrievals", "answer_tokens"):
        assert second[key] == first[key], key


async def test_bad_settings_and_input_are_refused():
    with pytest.raises(ValueError, match="tau"):
        ReplugContext(tau=0.0)
    with pytest.raises(ValueError, match="lookahead"):
        ReplugContext(lookahead=0)
    from activerag.errors import ActiveRagError, EmptyQuestion

    lm = ScriptedTokenLM({"Vesk": says("x")})
    with pytest.raises(EmptyQuestion):
        await build_replug_graph(token_lm=lm, retriever=retriever()).ainvoke(
            {"question": " "}, context=ReplugContext())
    with pytest.raises(ActiveRagError, match="no passage of the corpus matches"):
        await build_replug_graph(token_lm=lm, retriever=retriever()).ainvoke(
            {"question": "zzz qqq?"}, context=ReplugContext(k=2))


class ByDocument:
    """A text LM that answers from the scripted reply of the document its prompt holds."""

    model = "scripted"

    def __init__(self, replies):
        self.replies = {marker: ScriptedLM([reply]) for marker, reply in replies.items()}

    async def generate(self, prompt, **kwargs):
        marker = next(m for m in self.replies if m in prompt)
        return await self.replies[marker].generate(prompt, **kwargs)

    async def token_ids(self, text):
        return [1]


def answer_graph(token_lm=None, **replies):
    # the token LM tokenizes the prompts to check they fit the context; vote sends text
    return build_replug_graph(token_lm=token_lm or ScriptedTokenLM({}), lm=ByDocument(replies),
                              retriever=retriever(),
                              splitter=SentenceSplitter())


async def test_vote_weighs_each_answer_by_its_document_and_its_confidence():
    w_a, w_b = weights()
    graph = answer_graph(Vesk=ends("So the answer is Vesk.", prob=0.5),
                         Ulm=ends("So the answer is Ulm.", prob=0.9))
    out = await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=2, ensemble="vote"))
    expected = "Ulm" if w_b * 0.9 > w_a * 0.5 else "Vesk"
    assert out["answer"] == f"So the answer is {expected}."
    [entry] = out["trace"]
    assert dict(entry["candidates"]) == pytest.approx({"Vesk": w_a * 0.5, "Ulm": w_b * 0.9})
    assert out["lm_calls"] == 2 and out["answer_tokens"] == 5


async def test_vote_adds_up_documents_that_agree():
    graph = answer_graph(Vesk=ends("So the answer is Ulm.", prob=0.6),
                         Ulm=ends("So the answer is ulm", prob=0.6))
    out = await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=2, ensemble="vote"))
    assert out["answer"] == "So the answer is Ulm."
    assert dict(out["trace"][0]["candidates"]) == pytest.approx({"Ulm": 0.6})


async def test_rescore_mixes_every_candidate_under_every_document():
    token_lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk."),
                                "Ulm": says("So the answer is Ulm.")})
    graph = answer_graph(token_lm, Vesk=ends("So the answer is Vesk.", prob=0.5),
                         Ulm=ends("So the answer is Ulm.", prob=0.9))
    out = await graph.ainvoke({"question": QUESTION},
                              context=ReplugContext(k=2, ensemble="rescore"))
    # under Eq. 2 each candidate's last word has λ_d · 0.9 from its own document only, so the
    # better-weighted document's answer wins whatever the vote would say
    assert out["answer"] == "So the answer is Vesk."
    scores = dict(out["trace"][0]["candidates"])
    w_a, w_b = weights()
    assert scores["Vesk"] == pytest.approx((4 * math.log(0.9) + math.log(w_a * 0.9 + w_b * 1e-9))
                                           / 5)
    assert [c["kind"] for c in token_lm.calls] == ["score"] * 4
    assert out["lm_calls"] == 2 + 4


async def test_the_trace_prints_certainty_documents_and_weights():
    from activerag.evaluation.report import format_trace

    lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk.", prob=0.99),
                          "Ulm": says("So the answer is Vesk.", prob=0.99)})
    out = await run(lm)
    w_a, w_b = out["trace"][0]["weights"]
    assert format_trace(out["trace"]) == (
        "[0] certified 100% of its tokens\n"
        f"    docs (λ): Alpha Beta ({w_a:.2f}), Alpha Move ({w_b:.2f})\n"
        "    => So the answer is Vesk.")


async def flare_replug_run() -> tuple[dict, ScriptedLM, ScriptedTokenLM]:
    """flare_replug on one draft sentence below θ that retrieves: its output, the draft LM and
    the documents' token LM (one document says Vesk, the other Ulm)."""
    from activerag.context import FlareContext
    from activerag.graphs.replug import build_flare_replug_graph

    draft = ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2})])
    token_lm = ScriptedTokenLM({"Vesk": says("Alpha Beta was born in Vesk."),
                                "Ulm": says("Alpha Beta was born in Ulm.")})
    graph = build_flare_replug_graph(lm=draft, token_lm=token_lm, retriever=retriever(),
                                     splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=FlareContext(theta=0.5, initial_retrieval=False))
    return out, draft, token_lm


async def test_flare_replug_lets_the_retrieved_documents_vote_on_the_regenerated_sentence():
    out, _, _ = await flare_replug_run()
    [step] = out["trace"]
    assert step["retrieved"] and step["queries"] == ["Alpha Beta was born in"]
    assert step["doc_titles"] == ["Alpha Beta", "Alpha Move"]
    # the better-scored document's belief wins the ensemble
    assert out["answer"] == "Alpha Beta was born in Vesk."
    # one draft, then agree rounds: both documents once (they part at the last word), then
    # the end of sequence from both
    assert out["lm_calls"] == 1 + 4


async def test_k_larger_than_the_corpus_is_refused():
    from activerag.errors import ActiveRagError

    lm = ScriptedTokenLM({"Vesk": says("x")})
    with pytest.raises(ActiveRagError, match="k=10 documents to ensemble, but the corpus "
                                             "holds only 3 passages"):
        await build_replug_graph(token_lm=lm, retriever=retriever(10)).ainvoke(
            {"question": QUESTION}, context=ReplugContext(k=10))


async def test_a_server_with_too_few_top_logprobs_is_refused():
    from activerag.errors import NoLogprobs
    from activerag.serving.token_lm import VLLMTokens

    class FiveTops(QuietHandler):
        def do_POST(self):
            self._body()
            tops = {f"token_id:{i}": -1.0 - i for i in range(5)}
            self._json(200, {"choices": [{"text": "a", "finish_reason": "length", "logprobs": {
                "tokens": ["token_id:0"], "token_logprobs": [-1.0], "top_logprobs": [tops]}}],
                "usage": {"prompt_tokens": 3}})

    with serving(FiveTops) as url:
        lm = VLLMTokens(url, "m")
        with pytest.raises(NoLogprobs, match="returned 5 top logprobs where 20 were asked"):
            await lm.steps([1, 2, 3], 1, 20)
        assert len((await lm.steps([1, 2, 3], 1, 5)).positions) == 1


LONG = "Alpha Beta was born in Vesk. " + "Vesk lies on a long river. " * 30


def long_retriever() -> StoreRetriever:
    store = BM25Store()
    store.add([make_document(LONG, "Alpha Beta"), make_document("Alpha Beta moved to Ulm.",
                                                                "Alpha Move")])
    return StoreRetriever(store=store, k=2)


async def long_run(window):
    lm = ScriptedTokenLM({"Vesk": says("So the answer is Vesk."),
                          "Ulm": says("So the answer is Ulm.")}, window=window)
    graph = build_replug_graph(token_lm=lm, retriever=long_retriever(), splitter=SentenceSplitter())
    out = await graph.ainvoke({"question": QUESTION},
                              context=ReplugContext(k=2, ensemble="token", max_answer_tokens=10))
    return out, lm


async def test_a_document_longer_than_the_context_is_cut_to_fit_and_the_run_says_so():
    whole, _ = await long_run(None)
    assert whole.get("cut_documents") == []
    out, lm = await long_run(260)
    [note] = out["cut_documents"]
    assert "cut from 187 to" in note and "260-token context" in note
    # every request fits: prompt and answer within the window
    assert max(len(c["prompt"]) for c in lm.calls) + 1 <= 260
    assert max(len(c["prompt"]) + c["max_tokens"] for c in lm.calls) <= 260 + 10
    assert out["answer"] == whole["answer"] == "So the answer is Vesk."


async def test_a_prompt_too_long_without_its_document_is_refused():
    from activerag.errors import PromptTooLong

    with pytest.raises(PromptTooLong, match="even without its document"):
        await long_run(12)


@pytest.mark.parametrize("drops", [1, 3])
async def test_a_dropped_connection_is_retried_twice_then_reported(drops):
    from activerag.errors import LMServerUnreachable
    from activerag.serving.token_lm import VLLMTokens

    seen = []

    class Drops(QuietHandler):
        def do_POST(self):
            self._body()
            seen.append(self.path)
            if len(seen) <= drops:  # close the connection without an answer
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self._json(200, {"tokens": [7, 8]})

    with serving(Drops) as url:
        lm = VLLMTokens(url, "m")
        if drops <= 2:
            assert await lm.tokenize("a b") == [7, 8]
            assert len(seen) == drops + 1
        else:
            with pytest.raises(LMServerUnreachable, match="unreachable"):
                await lm.tokenize("a b")
            assert len(seen) == 3


async def test_flare_replug_counts_the_prompt_tokens_of_every_ensemble_request():
    out, draft, token_lm = await flare_replug_run()
    sent = sum(len(c["prompt"]) for c in token_lm.calls)
    assert len(token_lm.calls) == 4 and sent > 0
    # the draft's prompt (the scripted LM counts its words) and every ensemble request's
    assert out["prompt_tokens"] == len(draft.prompts[0].split()) + sent


def three_retriever() -> StoreRetriever:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Vesk.", "Alpha Beta"),
               make_document("Alpha Beta was seen in Gepu.", "Alpha Gepu"),
               make_document("Alpha moved to Ulm.", "Alpha Move")])
    return StoreRetriever(store=store, k=3)


def answerless_graph(token_lm=None, **replies):
    return build_replug_graph(token_lm=token_lm or ScriptedTokenLM({}), lm=ByDocument(replies),
                              retriever=three_retriever(), splitter=SentenceSplitter())


THREE = {"Vesk": "Alpha Beta was born in Vesk.", "Gepu": "Alpha Beta was seen in Gepu.",
         "Ulm": "So the answer is Ulm."}


async def test_vote_lets_no_answer_less_output_pool_weight():
    w = weights_of(three_retriever().invoke(QUESTION))
    assert [d.metadata["title"] for d in three_retriever().invoke(QUESTION)][2] == "Alpha Move"
    assert w[0] + w[1] > w[2]  # pooled, the two outputs with no answer would win
    graph = answerless_graph(**{m: ends(t, prob=0.9) for m, t in THREE.items()})
    out = await graph.ainvoke({"question": QUESTION}, context=ReplugContext(k=3, ensemble="vote"))
    assert out["answer"] == "So the answer is Ulm."
    assert dict(out["trace"][0]["candidates"]) == pytest.approx({"Ulm": w[2] * 0.9})


async def test_with_no_answer_at_all_the_top_weighted_document_s_output_is_returned():
    replies = {"Vesk": ends("Alpha Beta was born in Vesk.", prob=0.2),
               "Gepu": ends("Alpha Beta was seen in Gepu.", prob=0.9),
               "Ulm": ends("Alpha moved to Ulm.", prob=0.9)}
    for mode in ("vote", "rescore"):
        token_lm = ScriptedTokenLM({m: says(t) for m, t in THREE.items()})
        out = await answerless_graph(token_lm, **replies).ainvoke(
            {"question": QUESTION}, context=ReplugContext(k=3, ensemble=mode))
        assert out["answer"] == "Alpha Beta was born in Vesk.", mode
        assert out["trace"][0]["candidates"] == []
        assert token_lm.calls == [] and out["lm_calls"] == 3


async def test_rescore_scores_only_answers_and_each_under_every_document():
    w = weights_of(three_retriever().invoke(QUESTION))
    token_lm = ScriptedTokenLM({m: says(t) for m, t in THREE.items()})
    graph = answerless_graph(token_lm, **{m: ends(t, prob=0.9) for m, t in THREE.items()})
    out = await graph.ainvoke({"question": QUESTION},
                              context=ReplugContext(k=3, ensemble="rescore"))
    assert out["answer"] == "So the answer is Ulm."
    # one candidate, echoed under each of the three documents: only Ulm's gives it 0.9
    assert [c["kind"] for c in token_lm.calls] == ["score"] * 3
    assert dict(out["trace"][0]["candidates"]) == pytest.approx(
        {"Ulm": math.log(w[2] * 0.9 + (w[0] + w[1]) * 1e-9)})
    assert out["lm_calls"] == 3 + 3


REPLUG_ROWS = {
    "flare_replug": (FlareContext, {}), "single_k1": (FlareContext, {"k": 1}),
    "single_k10": (FlareContext, {"k": 10}), "replug": (ReplugContext, {}),
    "replug_token": (ReplugContext, {"ensemble": "token"}),
    "replug_vote": (ReplugContext, {"ensemble": "vote"}),
    "replug_rescore": (ReplugContext, {"ensemble": "rescore"}),
}
"""REPLUG's rows (nodes/replug/methods.py): each one's context class and fixed settings."""


def test_replug_s_rows_keep_their_context_class_and_settings():
    from activerag.graphs.registry import METHODS

    assert {n for n, m in METHODS.items() if m.family == "REPLUG"} == set(REPLUG_ROWS)
    for name, (cls, overrides) in REPLUG_ROWS.items():
        assert (METHODS[name].context, METHODS[name].overrides) == (cls, overrides), name


def test_a_replug_method_without_its_own_context_takes_the_run_s_endpoint_store_and_prompts():
    from activerag.graphs.registry import method

    run = FlareContext(k=3, base_url="http://127.0.0.1:9/v1", store_dir="/corpus",
                       prompt_set="none", max_answer_tokens=50)
    _, ctx = method("replug_vote", run)
    assert type(ctx) is ReplugContext and ctx.ensemble == "vote"
    assert (ctx.base_url, ctx.store_dir, ctx.prompt_set, ctx.max_answer_tokens) == (
        run.base_url, run.store_dir, run.prompt_set, run.max_answer_tokens)
    assert ctx.k == ReplugContext.k  # k is each family's own

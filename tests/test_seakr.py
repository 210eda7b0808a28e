"""SeaKR-lite: the retrieve node keeps the documents under which a short pseudo-generation is
least uncertain, from a pool retrieved with a larger k, and counts what that costs."""

import math

import pytest

from activerag.context import FlareContext
from activerag.errors import PromptTooLong, SettingError
from activerag.evaluation.report import format_step
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.registry import METHODS, method
from activerag.graphs.seakr import build_flare_seakr_graph, build_ircot_seakr_graph
from activerag.nodes.parts import Parts
from activerag.nodes.seakr.context import IRCoTSeakrContext, SeakrContext
from activerag.nodes.seakr.logic import mean_entropy, pool_size, rerank
from activerag.nodes.seakr.steps import make_seakr_retrieve, pseudo_generate
from activerag.nodes.triggers import entropy
from activerag.sentences import SentenceSplitter
from activerag.testing import ScriptedLM, ScriptedTokenLM, ends, memory_retriever, says
from activerag.testing.scripted import last_turn

QUESTION = {"question": "Where was Alpha Beta born?"}
# each document holds one marker word, so the scripted token LM knows which one a prompt holds
PASSAGES = {
    "Alpha Beta (Orvath)": "Alpha Beta was born in Orvath.",
    "Alpha Beta (Tesselby)": "Alpha Beta was born near Tesselby, they say.",
    "Alpha Beta (Quindle)": "Alpha Beta was born, some say, in Quindle.",
    "Alpha Beta (Marrowin)": "Alpha Beta visited Marrowin.",
}


def token_lm(**probs: float) -> ScriptedTokenLM:
    """Each marker's document writes its own sentence, every word at its probability."""
    return ScriptedTokenLM({m: says(f"Alpha Beta was born in {m}.", p) for m, p in probs.items()})


def scripted_lm(regenerated: str = "Alpha Beta was born in Tesselby.") -> ScriptedLM:
    """A draft unsure of its place (so FLARE retrieves), then the regenerated sentence."""
    return ScriptedLM([ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.2}),
                       ends(regenerated)])


def graph(lm: ScriptedLM, tokens: ScriptedTokenLM, k: int = 10):
    return build_flare_seakr_graph(lm=lm, token_lm=tokens, retriever=memory_retriever(
        PASSAGES, k=k), splitter=SentenceSplitter())


def steps_calls(tokens: ScriptedTokenLM) -> list[dict]:
    return [c for c in tokens.calls if c["kind"] == "steps"]


async def test_the_document_whose_pseudo_generation_is_most_certain_is_ranked_first():
    tokens = token_lm(Orvath=0.5, Tesselby=0.99, Quindle=0.8, Marrowin=0.3)
    lm = scripted_lm()
    out = await graph(lm, tokens).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=2, rerank_pool=4))
    [step] = out["trace"]
    assert step["retrieved"] is True
    assert step["doc_titles"] == ["Alpha Beta (Tesselby)", "Alpha Beta (Quindle)"]
    by_title = {e["title"]: e for e in step["rerank"]}
    assert set(by_title) == set(PASSAGES)
    assert [by_title[t]["kept"] for t in PASSAGES] == [None, 0, 1, None]
    h = {t: e["entropy"] for t, e in by_title.items()}
    assert (h["Alpha Beta (Tesselby)"] < h["Alpha Beta (Quindle)"] < h["Alpha Beta (Orvath)"]
            < h["Alpha Beta (Marrowin)"])
    assert [e["rank"] for e in step["rerank"]] == [0, 1, 2, 3]
    # the regenerated sentence is written with the kept documents, the most certain first
    regenerated = lm.prompts[1]
    assert regenerated.index("Tesselby, they say") < regenerated.index("in Quindle")
    assert "born in Orvath" not in regenerated and "Marrowin" not in regenerated


async def test_each_entropy_is_the_mean_of_the_pseudo_generations_token_entropies():
    tokens = token_lm(Orvath=0.9, Tesselby=0.6, Quindle=0.7, Marrowin=0.8)
    out = await graph(scripted_lm(), tokens).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=1, rerank_pool=4, rerank_tokens=3))
    # three words at p = 0.6, each with its rival at 0.2 and 0.2 left over
    one = entropy([math.log(0.6), math.log(0.2)])
    entry = next(e for e in out["trace"][0]["rerank"] if e["title"] == "Alpha Beta (Tesselby)")
    assert entry["tokens"] == 3 and entry["entropy"] == pytest.approx(one)
    assert all(c["max_tokens"] == 3 for c in steps_calls(tokens))
    assert out["trace"][0]["doc_titles"] == ["Alpha Beta (Orvath)"]


async def test_the_pool_is_retrieved_with_the_larger_k():
    tokens = token_lm(Orvath=0.9, Tesselby=0.6, Quindle=0.7, Marrowin=0.8)
    out = await graph(scripted_lm(), tokens).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=1))
    [step] = out["trace"]
    assert len(step["rerank"]) == 3 == len(steps_calls(tokens))  # 3·k by default
    assert len(step["doc_ids"]) == 1
    tokens = token_lm(Orvath=0.9, Tesselby=0.6, Quindle=0.7, Marrowin=0.8)
    out = await graph(scripted_lm(), tokens).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=1, rerank_pool=2))
    assert len(out["trace"][0]["rerank"]) == 2 == len(steps_calls(tokens))


async def test_the_pseudo_generations_are_counted_in_the_costs():
    tokens = token_lm(Orvath=0.9, Tesselby=0.6, Quindle=0.7, Marrowin=0.8)
    lm = scripted_lm()
    out = await graph(lm, tokens).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=1, rerank_pool=4, rerank_tokens=2))
    calls = steps_calls(tokens)
    # the rerank keeps the document the draft saw, so the draft is the sentence (no request)
    assert len(calls) == 4 and out["lm_calls"] == len(lm.prompts) + 4 == 5
    # the draft's 6 words, then 2 tokens per candidate
    assert out["generated_tokens"] == 6 + 4 * 2
    assert out["prompt_tokens"] == (sum(len(p.split()) for p in lm.prompts)
                                    + sum(len(c["prompt"]) for c in calls))
    assert out["retrieval_steps"] == 2  # D_x and the one reranked retrieval
    # only the kept document counts as retrieved, after the question's one
    assert out["retrieved_titles"][1:] == ["Alpha Beta (Orvath)"]


async def test_a_confident_draft_pseudo_generates_nothing():
    tokens = token_lm(Orvath=0.9)
    lm = ScriptedLM([ends("Alpha Beta was born in Orvath.", prob=0.95)])
    out = await graph(lm, tokens).ainvoke(QUESTION, context=SeakrContext(theta=0.5, k=1))
    assert tokens.calls == [] and out["lm_calls"] == 1
    assert "rerank" not in out["trace"][0]


async def test_the_question_documents_sit_beside_each_candidate_when_combined():
    # a prompt's belief is its first marker in this order: the candidate's, then D_x's
    tokens = token_lm(Tesselby=0.6, Quindle=0.7, Marrowin=0.8, Orvath=0.9)
    out = await graph(scripted_lm(), tokens, k=10).ainvoke(QUESTION, context=SeakrContext(
        theta=0.5, k=1, rerank_pool=3, combine_retrieval=True))
    prompts = [await tokens.detokenize(c["prompt"]) for c in steps_calls(tokens)]
    # D_x (k=1: the question's best document, Orvath's) in every pseudo-generation's prompt
    assert len(prompts) == 2
    assert all(last_turn(p).count("Search results:") == 1 for p in prompts)
    assert all("Alpha Beta was born in Orvath." in p for p in prompts)
    # pooled again, it is no candidate: it is in every prompt already
    [step] = out["trace"]
    assert [(e["title"], e["rank"]) for e in step["rerank"]] == [
        ("Alpha Beta (Tesselby)", 1), ("Alpha Beta (Quindle)", 2)]
    assert step["doc_titles"] == ["Alpha Beta (Quindle)", "Alpha Beta (Orvath)"]


async def test_flares_retrieve_node_can_be_swapped_and_is_flares_by_default():
    tokens = token_lm(Orvath=0.5, Tesselby=0.99, Quindle=0.8, Marrowin=0.3)
    retriever = memory_retriever(PASSAGES, k=10)
    parts = Parts(token_lm=tokens, retriever=retriever)
    swapped = build_flare_graph(lm=scripted_lm(), retriever=retriever, splitter=SentenceSplitter(),
                                retrieve=make_seakr_retrieve(parts))
    out = await swapped.ainvoke(QUESTION, context=FlareContext(theta=0.5, k=1))
    assert out["trace"][0]["doc_titles"] == ["Alpha Beta (Tesselby)"]
    plain = build_flare_graph(lm=scripted_lm(), retriever=retriever, splitter=SentenceSplitter())
    out = await plain.ainvoke(QUESTION, context=FlareContext(theta=0.5, k=1))
    assert out["trace"][0]["doc_titles"] == ["Alpha Beta (Orvath)"]
    assert "rerank" not in out["trace"][0]


def test_the_trace_line_shows_each_candidates_entropy_and_the_kept_order():
    step = {"index": 0, "min_prob": 0.2, "retrieved": True, "draft": "d", "queries": ["q"],
            "doc_titles": ["B"], "doc_ids": ["b"], "sentence": "s",
            "rerank": [{"doc_id": "a", "title": "A", "rank": 0, "entropy": 0.91, "tokens": 8,
                        "kept": None},
                       {"doc_id": "b", "title": "B", "rank": 1, "entropy": 0.12, "tokens": 8,
                        "kept": 0},
                       {"doc_id": "c", "title": "C", "rank": 2, "entropy": None, "tokens": 0,
                        "kept": None}]}
    assert "    reranked (mean entropy, nats): B 0.12 [kept 1], A 0.91, C -" in format_step(step)


def test_mean_entropy_is_the_mean_of_the_positions_entropies():
    certain, split = [0.0], [math.log(0.5), math.log(0.5)]
    assert mean_entropy([certain]) == 0.0
    assert mean_entropy([split]) == pytest.approx(math.log(2))
    assert mean_entropy([certain, split]) == pytest.approx(math.log(2) / 2)
    # the mass the top alternatives leave out is one more outcome
    assert mean_entropy([[math.log(0.5)]]) == pytest.approx(math.log(2))
    assert mean_entropy([]) is None


def test_rerank_keeps_the_k_lowest_lowest_first():
    assert rerank([0.9, 0.1, 0.5, 0.3], 2) == [1, 3]
    assert rerank([0.9, 0.1, 0.5], 5) == [1, 2, 0]
    assert rerank([0.4, 0.4, 0.2], 3) == [2, 0, 1]  # ties keep the retriever's order
    assert rerank([None, 0.8, 0.0], 3) == [2, 1, 0]  # an empty generation ranks last
    assert rerank([None, None], 1) == [0]
    assert rerank([], 2) == []


def test_the_pool_is_three_k_unless_set():
    assert pool_size(2, None) == 6
    assert pool_size(1, None) == 3
    assert pool_size(2, 4) == 4


def test_the_settings_are_checked():
    with pytest.raises(SettingError, match="rerank_pool must be at least k"):
        SeakrContext(k=3, rerank_pool=2)
    with pytest.raises(SettingError, match="rerank_tokens must be at least 1"):
        SeakrContext(rerank_tokens=0)
    assert SeakrContext(k=3, rerank_pool=3).rerank_pool == 3


def test_flare_seakr_is_registered_with_its_context_over_the_runs_flare_settings():
    record = METHODS["flare_seakr"]
    assert record.context is SeakrContext and record.family == "SeaKR-lite"
    _, ctx = method("flare_seakr", FlareContext(theta=0.3, k=4))
    assert type(ctx) is SeakrContext and (ctx.theta, ctx.k, ctx.rerank_pool) == (0.3, 4, None)
    assert record.graph.context_schema is SeakrContext
    other = METHODS["ircot_seakr"]
    assert other.context is IRCoTSeakrContext and other.family == "SeaKR-lite"
    assert other.overrides == record.overrides == {}


async def test_ircot_seakr_adds_the_most_certain_paragraph_beside_those_collected():
    # a prompt's belief is its first marker in this order: round 2's candidates before the
    # paragraph collected in round 1 (Tesselby), which is in each of their prompts
    tokens = token_lm(Quindle=0.8, Orvath=0.5, Marrowin=0.3, Tesselby=0.99)
    lm = ScriptedLM([ends("Alpha Beta was born near Tesselby."),
                     ends(" So the answer is: Tesselby.")])
    built = build_ircot_seakr_graph(lm=lm, token_lm=tokens, retriever=memory_retriever(
        PASSAGES, k=10), splitter=SentenceSplitter())
    out = await built.ainvoke(QUESTION, context=IRCoTSeakrContext(
        k=1, rerank_pool=3, rerank_tokens=3, ircot_reader="none"))
    first, second = (out["trace"][0]["rerank"], out["trace"][1]["rerank"])
    # the question's retrieval is reranked too: Tesselby's paragraph is the most certain
    assert [(e["title"], e["kept"]) for e in first] == [
        ("Alpha Beta (Orvath)", None), ("Alpha Beta (Tesselby)", 0), ("Alpha Beta (Quindle)", None)]
    # the sentence's pool holds Tesselby's again, collected already: no candidate
    assert [(e["title"], e["rank"], e["kept"]) for e in second] == [
        ("Alpha Beta (Orvath)", 1, None), ("Alpha Beta (Quindle)", 2, 0)]
    round2 = [await tokens.detokenize(c["prompt"]) for c in steps_calls(tokens)][3:]
    assert len(round2) == 2 and all("near Tesselby, they say." in p for p in round2)
    # IRCoT's own prompt: its exemplars and question line, the chain so far
    assert all("Q: Where was Alpha Beta born?" in p for p in round2)
    assert all(p.endswith("Alpha Beta was born near Tesselby.") for p in round2)
    # the second reason step reads both paragraphs collected, not the dropped ones
    assert "near Tesselby, they say." in lm.prompts[1] and "in Quindle." in lm.prompts[1]
    assert "born in Orvath." not in lm.prompts[1]
    assert out["lm_calls"] == 2 + 3 + 2
    assert out["retrieved_titles"] == ["Alpha Beta (Tesselby)", "Alpha Beta (Quindle)"]


class WindowedTokens(ScriptedTokenLM):
    """The scripted token LM behind a window of WINDOW tokens, refusing longer prompts."""

    async def steps(self, prompt, max_tokens, top):
        if len(prompt) > self.window:
            raise PromptTooLong(f"{len(prompt)} tokens do not fit {self.window}")
        return await super().steps(prompt, max_tokens, top)


async def test_a_pseudo_generation_falls_back_to_the_next_prompt_that_fits():
    tokens = WindowedTokens({"Orvath": says("Alpha Beta was born in Orvath.", 0.9)}, window=6)

    async def prompts(parts, state, ctx, docs):
        return ["six words before Orvath and more words", "Orvath: three words", "Orvath"]

    steps = await pseudo_generate(Parts(token_lm=tokens), {"question": "q"}, SeakrContext(),
                                  [], 2, prompts)
    assert [c["prompt"] for c in tokens.calls] == [await tokens.tokenize("Orvath: three words")]
    assert len(steps.positions) == 2

    async def too_long(parts, state, ctx, docs):
        return ["seven words that never fit this Orvath window"]

    with pytest.raises(PromptTooLong):
        await pseudo_generate(Parts(token_lm=tokens), {"question": "q"}, SeakrContext(), [], 2,
                              too_long)

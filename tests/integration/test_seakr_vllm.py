"""flare_seakr against the real vLLM server and BM25: every retrieval's pool is scored by the
server's own top-20 logprobs, and the documents kept are the lowest-entropy ones."""

import math

import pytest

from activerag.demo import load_demo_questions
from activerag.graphs.seakr import flare_seakr_graph
from activerag.nodes.prompts import COT_TASK, answer_prompt
from activerag.nodes.seakr.context import SeakrContext
from activerag.serving.running import server_models
from activerag.serving.templates import layout_of
from activerag.serving.token_lm import VLLMTokens
from activerag.stores.corpus import Corpus

pytestmark = pytest.mark.integration
QUESTION = load_demo_questions()[0]["question"]


def entropy_of(positions) -> float:
    """The mean over positions of -Σ p ln p over the top 20, the rest of the mass one more
    outcome: written out again here, not imported."""
    total = 0.0
    for position in positions:
        probs = [math.exp(v) for v in position.top.values()]
        probs.append(max(0.0, 1.0 - sum(probs)))
        total -= sum(p * math.log(p) for p in probs if p > 0)
    return total / len(positions)


async def test_flare_seakr_keeps_the_lowest_entropy_documents(vllm_url, demo_store):
    # theta = 1: every sentence retrieves, so every step is reranked
    ctx = SeakrContext(base_url=vllm_url, store_dir=str(demo_store), theta=1.0, k=2,
                       max_sentences=2, max_answer_tokens=64)
    out = await flare_seakr_graph.ainvoke({"question": QUESTION}, context=ctx)
    steps = out["trace"]
    assert steps and all(s["retrieved"] for s in steps)
    for step in steps:
        entries = step["rerank"]
        # a pool of 3k = 6 retrieved, each scored by its own pseudo-generation
        assert 2 < len(entries) <= 6
        assert all(e["entropy"] is not None and e["entropy"] >= 0 for e in entries)
        assert all(0 < e["tokens"] <= ctx.rerank_tokens for e in entries)
        kept = sorted((e for e in entries if e["kept"] is not None), key=lambda e: e["kept"])
        dropped = [e for e in entries if e["kept"] is None]
        assert [e["doc_id"] for e in kept] == step["doc_ids"]
        assert len(kept) == 2
        assert [e["entropy"] for e in kept] == sorted(e["entropy"] for e in kept)
        assert max(e["entropy"] for e in kept) <= min(e["entropy"] for e in dropped)
    # drafts and regenerated sentences, then one pseudo-generation per pooled document
    assert out["lm_calls"] == 2 * len(steps) + sum(len(s["rerank"]) for s in steps)

    # the first step's entropies, recomputed from the server for two of its documents
    first = steps[0]
    query = QUESTION if first["fallback"] else first["queries"][0]
    pool = Corpus(demo_store).retriever("bm25", 50, "").invoke(query)
    by_id = {d.id: d for d in pool}
    lm = VLLMTokens(vllm_url, server_models(vllm_url)[0])
    layout = await layout_of(vllm_url, lm.model)  # prompt_format auto, as the run laid it out
    for entry in sorted(first["rerank"], key=lambda e: e["entropy"])[::len(first["rerank"]) - 1]:
        prompt = answer_prompt(QUESTION, "", [by_id[entry["doc_id"]]], layout or "plain",
                               COT_TASK)
        again = await lm.steps(await lm.tokenize(prompt), ctx.rerank_tokens, 20)
        assert len(again.positions) == entry["tokens"]
        # batched requests differ from single ones by float noise on vLLM's CPU kernels
        assert entropy_of(again.positions) == pytest.approx(entry["entropy"], rel=1e-3,
                                                             abs=1e-4)

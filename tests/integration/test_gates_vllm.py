"""The uncertainty gates, ETC and DRAGIN-lite end to end against the real vLLM server (SmolLM2)
and the demo store: one question through gate_entropy_mean, flare_etc and dragin_lite, each
retrieving exactly when its recorded value says so."""

import math

import httpx
import pytest

from activerag.demo import load_demo_questions
from activerag.graphs.gated import build_dragin_graph, build_etc_graph, build_gated_graph
from activerag.nodes import estimators, triggers
from activerag.nodes.gated.context import DraginContext, EtcContext, GateContext
from activerag.nodes.prompts import COT_TASK, answer_prompt

pytestmark = pytest.mark.integration
QUESTION = load_demo_questions()[0]["question"]


def first_word_above(values: list[float | None], threshold: float) -> int | None:
    return next((i for i, v in enumerate(values) if v is not None and v > threshold), None)


async def test_gate_entropy_mean_retrieves_exactly_when_its_estimate_is_above_threshold(
        vllm_url, demo_store):
    ctx = GateContext(base_url=vllm_url, store_dir=str(demo_store), estimator="entropy_mean")
    out = await build_gated_graph().ainvoke({"question": QUESTION}, context=ctx)
    why = out["trace"][0]["why"]
    fired = why["value"] > why["threshold"]
    assert why["estimator"] == "entropy_mean" and why["fired"] is fired
    assert why["threshold"] == estimators.ESTIMATORS["entropy_mean"].threshold
    assert all(s["retrieved"] is fired and s["why"] == why for s in out["trace"])
    assert (out["lm_calls"], out["retrievals"]) == ((2, 1) if fired else (1, 0))
    if fired:
        assert out["trace"][0]["queries"] == [QUESTION] and len(out["trace"][0]["doc_ids"]) == 2

    # kept whatever it says (threshold out of reach): the value is the mean entropy of the
    # answer's tokens over the server's own top-20, asked again without streaming
    kept = await build_gated_graph().ainvoke({"question": QUESTION}, context=GateContext(
        base_url=vllm_url, store_dir=str(demo_store), estimator="entropy_mean",
        gate_threshold=100.0))
    assert kept["retrievals"] == 0 and kept["trace"][0]["why"]["value"] == pytest.approx(
        why["value"], abs=1e-6)  # the same greedy answer as the first pass above
    resp = httpx.post(f"{vllm_url}/completions", timeout=120, json={
        "model": "SmolLM2-135M-Instruct", "prompt": answer_prompt(QUESTION, "", [], "chatml",
                                                                  COT_TASK),
        "max_tokens": kept["answer_tokens"], "temperature": 0, "logprobs": 20})
    lp = resp.json()["choices"][0]["logprobs"]
    assert "".join(lp["tokens"]).startswith(kept["answer"])
    ents = [triggers.entropy(list(top.values())) for top in lp["top_logprobs"]]
    assert kept["trace"][0]["why"]["value"] == pytest.approx(sum(ents) / len(ents), abs=2e-3)

    # fired whatever it says (threshold 0): one retrieval with x, the answer written again
    forced = await build_gated_graph().ainvoke({"question": QUESTION}, context=GateContext(
        base_url=vllm_url, store_dir=str(demo_store), estimator="entropy_mean",
        gate_threshold=0.0))
    assert (forced["lm_calls"], forced["retrievals"], forced["retrieval_steps"]) == (2, 1, 1)
    assert all(s["retrieved"] and s["queries"] == [QUESTION] and len(s["doc_ids"]) == 2
               for s in forced["trace"])


FLARES_DOCUMENTS = {"k": 2, "initial_retrieval": True, "keep_documents": True}
"""FLARE's document handling, which these gate tests were written against (since issue #37
ETC and DRAGIN-lite default to their authors': k 3, no initial retrieval, documents only for
the regenerated sentence; tests/test_gated_etc_dragin.py checks those)."""


async def test_flare_etc_retrieves_from_the_first_word_over_its_threshold(vllm_url, demo_store):
    ctx = EtcContext(base_url=vllm_url, store_dir=str(demo_store), max_sentences=3,
                     etc_threshold=0.5, **FLARES_DOCUMENTS)
    out = await build_etc_graph().ainvoke({"question": QUESTION}, context=ctx)
    fired = 0
    for step in out["trace"]:
        why = step["why"]
        at = first_word_above(why["values"], ctx.etc_threshold)
        assert why["trigger"] == "etc" and why["at"] == at
        assert step["retrieved"] is (at is not None) is why["fired"]
        if at is not None:
            fired += 1
            assert why["values"][at] > ctx.etc_threshold and step["queries"]
            kept = " ".join(why["words"][:at])  # the draft before that word stays
            assert " ".join(step["sentence"].split()).startswith(kept)
        assert all(not math.isnan(h) for h in why["entropies"])
    assert fired >= 1, "SmolLM2's drafts rise this sharply on this question"
    assert out["lm_calls"] == len(out["trace"]) + fired
    assert out["retrieval_steps"] == 1 + fired


async def test_dragin_lite_retrieves_at_a_content_word_and_asks_with_the_question(
        vllm_url, demo_store):
    ctx = DraginContext(base_url=vllm_url, store_dir=str(demo_store), max_sentences=3,
                        dragin_query_words=4, **FLARES_DOCUMENTS)
    out = await build_dragin_graph().ainvoke({"question": QUESTION}, context=ctx)
    fired = 0
    for step in out["trace"]:
        why = step["why"]
        at = first_word_above(why["values"], ctx.dragin_threshold)
        assert why["trigger"] == "dragin_lite" and why["at"] == at
        assert step["retrieved"] is (at is not None)
        if at is not None:
            fired += 1
            [query] = step["queries"]
            assert query.startswith(QUESTION)
            added = query[len(QUESTION):].split()
            assert len(added) <= 4 and set(added) <= set(why["words"][:at])
    assert fired >= 1, "SmolLM2 is unsure of some content word on this question"
    assert out["lm_calls"] == len(out["trace"]) + fired
    assert out["retrieval_steps"] == 1 + fired

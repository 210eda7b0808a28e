"""FB-RAG and its baselines against two real vLLM servers, as the defaults have them: SmolLM2
samples (one request with n=K, or K requests), the default model (Qwen2.5-Coder-0.5B) reads; a
long context is cut to fit the reader's window; a strong server that is down is named as
such."""

import json
import random

import pytest

from activerag import longctx
from activerag.context import FlareContext
from activerag.demo import DEMO_CORPUS, load_demo_questions
from activerag.errors import LMServerUnreachable
from activerag.graphs.fb_rag import build_baseline_graph, build_fb_rag_graph
from activerag.graphs.registry import METHODS, method
from activerag.nodes.fb_rag.context import FBRagContext

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def row():
    """A demo two-hop question with its gold paragraphs among demo distractors, ~900 words."""
    corpus = [json.loads(line) for line in DEMO_CORPUS.read_text().splitlines() if line.strip()]
    by_title = {r["title"]: r["text"] for r in corpus}
    question = next(q for q in load_demo_questions() if q.get("hops") == 2)
    own = [(t, by_title[t]) for t in question["gold_titles"]]
    pool = [(r["title"], r["text"]) for r in corpus]
    paragraphs = longctx.pad(own, pool, 900, random.Random(0))
    context, spans = longctx.layout(paragraphs, question["gold_titles"])
    return {"question": question["question"], "context": context, "spans": spans,
            "answers": question["answers"]}


def settings(vllm_url, strong_url, **kw):
    return FBRagContext(light_base_url=vllm_url, base_url=strong_url, samples=3,
                        recall_words=300, read_words=200, **kw)


async def test_fb_rag_samples_on_the_light_server_and_reads_on_the_strong_one(
        vllm_url, strong_url, row):
    graph = build_fb_rag_graph()
    given = {"question": row["question"], "context": row["context"]}
    out = await graph.ainvoke(given, context=settings(vllm_url, strong_url))
    assert len(out["samples"]) == 3 and all(isinstance(s, str) for s in out["samples"])
    assert len(set(out["samples"])) > 1  # sampled at temperature 1, not greedy
    assert out["lm_calls"] == 2  # one request with n=3, one answer
    assert out["selected"] == sorted(out["selected"])  # the context's order
    assert sum(b - a for a, b in out["selected_spans"]) <= 200
    assert set(out["recall"]) <= set(range(out["chunks"]))
    assert out["answer"] and "\n" not in out["answer"]
    assert out["prompt_tokens"] > 0 and out["generated_tokens"] > 0
    assert set(out["stage_seconds"]) == {"prepare", "recall_retrieve", "sample", "rerank",
                                         "generate"}
    # K separate requests cost K light calls (unseeded: a seed crashes vLLM's CPU engine)
    apart = await graph.ainvoke(given, context=settings(vllm_url, strong_url,
                                                        separate_requests=True))
    assert apart["lm_calls"] == 4 and len(apart["samples"]) == 3


async def test_the_whole_context_is_cut_in_the_middle_to_fit_the_strong_window(
        vllm_url, strong_url, row):
    long_text = "\n\n".join([row["context"]] * 3)  # about 2,700 words: over 2,048 tokens
    out = await build_baseline_graph("long_context").ainvoke(
        {"question": row["question"], "context": long_text},
        context=settings(vllm_url, strong_url))
    assert out["truncated_tokens"] > 0 and out["route"] == "long_context"
    assert out["prompt_tokens"] <= 2048 - 32
    assert out["answer"]


@pytest.mark.parametrize("kind", ["op_rag", "vanilla_rag", "self_route"])
async def test_the_rag_baselines_answer_from_the_strong_server(vllm_url, strong_url, row, kind):
    out = await build_baseline_graph(kind).ainvoke(
        {"question": row["question"], "context": row["context"]},
        context=settings(vllm_url, strong_url))
    assert out["answer"] and out["route"] in {"op_rag", "vanilla_rag", "long_context"}
    assert out["lm_calls"] in (1, 2)


async def test_a_strong_server_that_is_down_is_named(vllm_url, row):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = FBRagContext(light_base_url=vllm_url, base_url=f"http://127.0.0.1:{port}/v1",
                       model="Qwen2.5-Coder-0.5B-Instruct", samples=2, recall_words=300,
                       read_words=200)
    with pytest.raises(LMServerUnreachable, match=f"strong reader at http://127.0.0.1:{port}"):
        await build_fb_rag_graph().ainvoke(
            {"question": row["question"], "context": row["context"]}, context=ctx)


@pytest.mark.parametrize("name", [m for m in METHODS if METHODS[m].context is FBRagContext])
async def test_each_method_answers_a_question_without_a_context_from_the_store(
        name, vllm_url, strong_url, demo_store):
    fb = FBRagContext(light_base_url=vllm_url, base_url=strong_url, samples=2, k=8,
                      read_words=60, store_dir=str(demo_store))
    graph, ctx = method(name, FlareContext(store_dir=str(demo_store)), fb)
    question = load_demo_questions()[0]["question"]
    out = await graph.ainvoke({"question": question}, context=ctx)
    assert out["retrievals"] == 1 and len(out["retrieved_titles"]) == 8
    assert out["chunks"] == 8 and out["answer"] is not None and out["lm_calls"] >= 1
    if name == "fb_rag_fb":
        assert (ctx.eta_b, ctx.eta_f) == (0.5, 0.5)


async def test_the_app_sends_a_question_with_its_context_to_fb_rag_on_both_servers(
        vllm_url, strong_url, row):
    from activerag.graphs.app import graph
    from activerag.nodes.app.context import AppContext

    given = {"question": row["question"], "context": row["context"]}
    out = await graph.ainvoke(given, context=AppContext(
        base_url=vllm_url, fb=settings(vllm_url, strong_url)))
    assert out["route"] == "fb_rag" and list(out["runs"]) == ["fb_rag"]
    fb = out["runs"]["fb_rag"]
    assert out["answer"] == fb["answer"] and fb["answer"]
    assert out["lm_calls"] == fb["lm_calls"] == 2 and len(fb["samples"]) == 3

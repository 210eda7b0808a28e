"""Adaptive-RAG against the real SmolLM2 server: the prompt classifier routes a demo question and
the answer is the chosen strategy's own, and `activerag train-router` on three 2Wiki training
questions writes a router folder that loads and routes."""

import asyncio
import json

import pytest

from activerag.cli import main
from activerag.demo import load_demo_questions
from activerag.evaluation.datasets import twowiki
from activerag.graphs.adaptive_rag import graph as router_graph
from activerag.graphs.adaptive_rag import prompt_graph
from activerag.graphs.registry import method
from activerag.lsr import evaluation_questions, question_key
from activerag.nodes.adaptive_rag.context import AdaptiveContext
from activerag.nodes.adaptive_rag.router import MINILM, load_router, minilm
from activerag.nodes.adaptive_rag.steps import STRATEGIES

pytestmark = pytest.mark.integration
STRATEGY_METHOD = {"no_retrieval": "none", "single_step": "single", "multi_step": "ircot"}


def context(vllm_url, demo_store, **kwargs) -> AdaptiveContext:
    return AdaptiveContext(base_url=vllm_url, store_dir=str(demo_store), max_answer_tokens=64,
                           **kwargs)


async def test_the_prompt_classifier_routes_a_demo_question_to_a_strategy_that_answers(
        vllm_url, demo_store):
    question = load_demo_questions()[0]["question"]
    ctx = context(vllm_url, demo_store)
    out = await prompt_graph.ainvoke({"question": question}, context=ctx)
    label = out["route"]
    assert label in STRATEGIES and out["strategy"] == STRATEGIES[label]
    record = out["classification"]
    assert record["classifier"] == "prompt" and record["label"] == label
    assert "note" in record or set(out["probabilities"]) == {label}
    ran = out["runs"][out["strategy"]]
    assert out["answer"] == ran["answer"] and out["answer"].strip()
    assert out["lm_calls"] == 1 + ran["lm_calls"]
    # greedy decoding: the strategy's method run alone gives the same answer
    graph, alone_ctx = method(STRATEGY_METHOD[out["strategy"]], ctx)
    alone = await graph.ainvoke({"question": question}, context=alone_ctx)
    assert alone["answer"] == out["answer"]


def test_train_router_on_three_questions_writes_a_router_that_routes(
        vllm_url, demo_store, tmp_path, capsys, shared_data_dir):
    out = tmp_path / "router"
    rc = main(["train-router", "--out", str(out), "--n", "3", "--concurrency", "3",
               "--base-url", vllm_url, "--store", str(demo_store), "--max-answer-tokens", "48"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "training accuracy: " in printed and "labels: A " in printed
    meta = json.loads((out / "meta.json").read_text())
    assert meta["embedding_model"] == MINILM and meta["dimension"] == 384
    assert len(meta["train_ids"]) == 3 and meta["dataset"] == "2wiki"
    assert meta["strategies"] == {"A": "none", "B": "single", "C": "ircot"}
    assert sum(meta["label_counts"].values()) == 3
    assert meta["command"].startswith("activerag train-router --out ")
    rows = [json.loads(line) for line in (out / "silver" / "examples.jsonl").read_text()
            .splitlines()]
    assert sorted((r["method"], r["id"]) for r in rows) == sorted(
        (m, i) for m in ("none", "single") for i in meta["train_ids"])  # C is the fallback
    assert meta["not_run"] == ["ircot"]
    text = {e.id: e.question for e in twowiki()}
    held_out = evaluation_questions()
    assert not any(question_key(text[i]) in held_out for i in meta["train_ids"])
    router = load_router(out, minilm())
    assert router.weights.shape == (3, 384)
    routed = asyncio.run(router_graph.ainvoke(
        {"question": load_demo_questions()[0]["question"]},
        context=context(vllm_url, demo_store, router=str(out))))
    assert routed["classification"]["classifier"] == "router"
    assert routed["route"] == max(routed["probabilities"], key=routed["probabilities"].get)
    assert routed["lm_calls"] == routed["runs"][routed["strategy"]]["lm_calls"]

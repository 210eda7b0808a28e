"""Where FLARE's time goes besides the LM: the graph against a bare loop of the same LM calls.

    python -m benchmarks.cost.overhead [--questions 20] [--latency 0.05] [--max-sentences 4]

An LM with a fixed latency (it sleeps, then writes one sentence whose token probabilities are
drawn from a seeded generator, so some sentences retrieve and some do not) answers the demo
questions through the FLARE graph (in-memory BM25 over the demo corpus, Punkt) one at a time.
The same LM then answers the same prompts again in a bare loop (no graph, no retrieval, no
splitting). Overhead = (graph - bare) / graph; BM25's share is timed apart, and the rest is
LangGraph's scheduling and state with the nodes' own work (splitting, masking, prompts).
Goal: at most 5%. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time

from activerag.context import FlareContext
from activerag.demo import DEMO_CORPUS, load_demo_questions
from activerag.graphs.flare import build_flare_graph
from activerag.sentences import SentenceSplitter
from activerag.serving.generation import Generation, Token
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import read_corpus

WORDS = ["The", " founder", " of", " the", " company", " was", " born", " in", " Gepu", "."]


class SleepyLM:
    """Sleeps LATENCY seconds a call, then writes one ten-token sentence."""

    model = "sleepy"

    def __init__(self, latency: float, seed: int = 0) -> None:
        self.latency = latency
        self.rng = random.Random(seed)
        self.prompts: list[str] = []
        self.seconds = 0.0

    async def generate(self, prompt: str, *, max_tokens: int, cut=None, stop=None,  # type: ignore[no-untyped-def]
                       logit_bias=None) -> Generation:
        start = time.perf_counter()
        self.prompts.append(prompt)
        await asyncio.sleep(self.latency)
        tokens, text = [], ""
        for w in WORDS:
            tokens.append(Token(w, math.log(self.rng.uniform(0.3, 1.0)), len(text)))
            text += w
        self.seconds += time.perf_counter() - start
        return Generation(text, tokens, False, len(tokens), None, len(prompt) // 4, prompt,
                          complete=True)

    async def token_ids(self, text: str) -> list[int]:
        return [1]


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--max-sentences", type=int, default=4)
    args = p.parse_args()
    store = BM25Store()
    store.add(list(read_corpus(DEMO_CORPUS)))
    store.search("warm up", 1)
    splitter = SentenceSplitter()
    lm = SleepyLM(args.latency)
    graph = build_flare_graph(lm=lm, retriever=StoreRetriever(store=store, k=2),
                              splitter=splitter)
    ctx = FlareContext(max_sentences=args.max_sentences)
    questions = [q["question"] for q in load_demo_questions()][: args.questions]
    searched = [0.0]
    search = store.search

    def timed_search(query: str, k: int):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return search(query, k)
        finally:
            searched[0] += time.perf_counter() - start

    store.search = timed_search  # type: ignore[method-assign]
    graph_s, calls = [], []
    for q in questions:
        before, n_before = time.perf_counter(), len(lm.prompts)
        await graph.ainvoke({"question": q}, context=ctx)
        graph_s.append(time.perf_counter() - before)
        calls.append(len(lm.prompts) - n_before)
    prompts = list(lm.prompts)
    bare = SleepyLM(args.latency)
    start = time.perf_counter()
    for prompt in prompts:  # the same calls, one after another, nothing else
        await bare.generate(prompt, max_tokens=64)
    bare_s = time.perf_counter() - start
    total = sum(graph_s)
    lm_s = lm.seconds
    print(f"{len(questions)} demo questions, {sum(calls)} LM calls of {args.latency * 1000:.0f} "
          f"ms, up to {args.max_sentences} sentences; seconds per question "
          f"{statistics.mean(graph_s):.3f}\n")
    print("| part | seconds | share of the graph's wall time |")
    print("|---|---|---|")
    print(f"| graph, wall | {total:.3f} | 100% |")
    print(f"| bare loop of the same LM calls | {bare_s:.3f} | {100 * bare_s / total:.1f}% |")
    print(f"| LM calls inside the graph | {lm_s:.3f} | {100 * lm_s / total:.1f}% |")
    print(f"| BM25 retrieval | {searched[0]:.3f} | {100 * searched[0] / total:.1f}% |")
    other = total - lm_s - searched[0]
    print(f"| the rest: LangGraph, splitting, masking, prompts | {other:.3f} | "
          f"{100 * other / total:.1f}% |")
    print(f"\noverhead over the bare loop: {100 * (total - bare_s) / total:.1f}% of the graph's "
          "wall time")


if __name__ == "__main__":
    asyncio.run(main())

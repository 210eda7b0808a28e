"""What FLARE costs on the demo questions, next to single-time retrieval.

Prints LM calls per question, generated tokens per accepted token, vLLM's prefix-cache hit
rate (from /metrics) and wall time of each method, one question at a time, and their ratio.
Needs a running server (`activerag serve`) and the demo corpus (`activerag ingest --demo`).

    python -m benchmarks.cost.flare_cost [--n 12] [--theta 0.8]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.graphs.flare import graph as flare_graph
from activerag.graphs.single import single_graph
from activerag.serving.running import vllm_counters
from activerag.settings import Settings


async def run(graph, questions: list[str], ctx: FlareContext) -> dict[str, float]:
    before = vllm_counters(ctx.base_url)
    totals = {"lm_calls": 0, "generated_tokens": 0, "answer_tokens": 0, "sentences": 0,
              "retrieved": 0}
    start = time.perf_counter()
    for q in questions:
        out = await graph.ainvoke({"question": q}, context=ctx)
        totals["lm_calls"] += out["lm_calls"]
        totals["generated_tokens"] += out["generated_tokens"]
        totals["answer_tokens"] += out["answer_tokens"]
        totals["sentences"] += len(out["trace"])
        totals["retrieved"] += sum(s["retrieved"] for s in out["trace"])
    wall = time.perf_counter() - start
    after = vllm_counters(ctx.base_url)
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    n = len(questions)
    queries = delta.get("vllm:prefix_cache_queries_total", 0.0)
    return {
        "lm_calls_per_q": totals["lm_calls"] / n,
        "gen_per_kept_token": totals["generated_tokens"] / max(1, totals["answer_tokens"]),
        "server_gen_tokens": delta.get("vllm:generation_tokens_total", 0.0),
        "client_gen_tokens": totals["generated_tokens"],
        "prefix_hit_rate": delta.get("vllm:prefix_cache_hits_total", 0.0) / queries
        if queries else float("nan"),
        "retrieval_rate": totals["retrieved"] / max(1, totals["sentences"]),
        "wall_s_per_q": wall / n,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12)
    p.add_argument("--theta", type=float, default=0.8)
    args = p.parse_args()
    settings = Settings.from_env()
    ctx = FlareContext(base_url=settings.url, store_dir=str(settings.stores), theta=args.theta)
    questions = [q["question"] for q in load_demo_questions()[: args.n]]
    asyncio.run(run(single_graph, questions[:1], ctx))  # warm caches and components
    results = {"flare": asyncio.run(run(flare_graph, questions, ctx)),
               "single": asyncio.run(run(single_graph, questions, ctx))}
    keys = list(results["flare"])
    print(f"{len(questions)} demo questions, theta={args.theta}, one at a time, {settings.url}")
    print(f"{'metric':<22}{'flare':>12}{'single':>12}")
    for k in keys:
        print(f"{k:<22}{results['flare'][k]:>12.3f}{results['single'][k]:>12.3f}")
    ratio = results["flare"]["wall_s_per_q"] / results["single"]["wall_s_per_q"]
    print(f"wall time ratio flare/single: {ratio:.2f}")


if __name__ == "__main__":
    main()

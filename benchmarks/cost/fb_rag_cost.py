"""FB-RAG's cost: K samples from one request (n=K, one prefill) against K = 1 and against K
separate requests, stage by stage, beside OP-RAG and long context.

    python -m benchmarks.cost.fb_rag_cost [--dataset FILE] [--n 6] [--skip 90] [--k 5]

Runs each question one at a time through fb_rag with K = 1, with K samples in one request, with
K separate requests, then op_rag and long_context (interleaved, so a busy machine weighs on all
alike; each variant's requests carry a vLLM cache_salt of their own, so no variant reuses the
prefill another computed for the same question), and prints per-stage wall time, tokens and
requests with 95% bootstrap intervals, and the ratio of K samples to one (goal: at most 1.3x
for n=K). Needs both servers (`activerag serve`, `activerag serve --model smollm2-135m`) and a
long-context file (`activerag longctx build --dataset hotpotqa --words 1500`); --skip leaves
out the questions the evaluation uses.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import replace

from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.stats import bootstrap_ci
from activerag.graphs.fb_rag import build_baseline_graph, build_fb_rag_graph
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.settings import Settings
from benchmarks.cost import serverprobe


def described(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{sum(values) / len(values):.2f} [{low:.2f}, {high:.2f}]"


async def one(graph, question: str, context: str, ctx: FBRagContext) -> dict:
    start = time.perf_counter()
    out = await graph.ainvoke({"question": question, "context": context}, context=ctx)
    return {"seconds": time.perf_counter() - start, **out.get("stage_seconds", {}),
            "requests": out["lm_calls"], "prompt_tokens": out["prompt_tokens"],
            "generated_tokens": out["generated_tokens"]}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(Settings.from_env().home / "longctx"
                                            / "hotpotqa-1500w.jsonl"))
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--skip", type=int, default=90)
    p.add_argument("--k", type=int, default=5)
    args = p.parse_args()
    examples = load_dataset(args.dataset, args.skip + args.n)[args.skip:]
    base = FBRagContext()
    variants = {
        "fb_rag K=1": (build_fb_rag_graph(), replace(base, samples=1)),
        f"fb_rag K={args.k} (n={args.k})": (build_fb_rag_graph(), replace(base, samples=args.k)),
        f"fb_rag K={args.k} ({args.k} requests)": (
            build_fb_rag_graph(), replace(base, samples=args.k, separate_requests=True)),
        "op_rag": (build_baseline_graph("op_rag"), base),
        "long_context": (build_baseline_graph("long_context"), base),
    }
    rows: dict[str, list[dict]] = {name: [] for name in variants}
    serverprobe.instrument()
    for e in examples:
        for name, (graph, ctx) in variants.items():
            with serverprobe.salted(f"{e.id} {name}"):
                rows[name].append(await one(graph, e.question, e.context, ctx))
        print(f"{e.id}: " + ", ".join(f"{name} {rs[-1]['seconds']:.1f} s"
                                      for name, rs in rows.items()), flush=True)
    print(f"\n{len(examples)} questions of {args.dataset} (from #{args.skip}), one at a time, "
          f"each variant with its own cache salt; X={base.recall_words}, Y={base.read_words} "
          "words; seconds with 95% intervals\n")
    print("| variant | total s | sample s | generate / read s | requests | prompt tokens | "
          "generated tokens |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in rows.items():
        read = [r.get("generate", r.get("long_context", 0.0)) for r in rs]
        print(f"| {name} | {described([r['seconds'] for r in rs])} | "
              f"{described([r.get('sample', 0.0) for r in rs])} | {described(read)} | "
              f"{described([r['requests'] for r in rs])} | "
              f"{described([r['prompt_tokens'] for r in rs])} | "
              f"{described([r['generated_tokens'] for r in rs])} |")
    names = list(rows)

    def total(name: str, key: str) -> float:
        return sum(r.get(key, 0.0) for r in rows[name])

    for name in names[1:3]:
        sample = total(name, "sample") / total(names[0], "sample")
        whole = total(name, "seconds") / total(names[0], "seconds")
        print(f"\n{name} over K=1: sample stage {sample:.2f}x, whole question {whole:.2f}x")
    print(f"\nfb_rag K={args.k} (n={args.k}) over op_rag: whole question "
          f"{total(names[1], 'seconds') / total('op_rag', 'seconds'):.2f}x")


if __name__ == "__main__":
    asyncio.run(main())

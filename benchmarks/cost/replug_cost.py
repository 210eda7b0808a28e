"""REPLUG's token mode against agree mode: the same tokens, how many requests and seconds.

    python -m benchmarks.cost.replug_cost [--n 6] [--k 10] [--lookahead 8 16] [--store DIR]

Runs each demo question (two-hop and one-hop alternately) one at a time in token mode (Eq. 2
at every position, one request per document and token) and in agree mode (greedy look-aheads
decided while the documents agree), checks that both wrote the same tokens, and prints LM
requests and wall time per answer token with 95% bootstrap intervals, and their ratios.
Needs a running server (`activerag serve`) and an ingested store (`activerag ingest --demo`).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from activerag.demo import load_demo_questions
from activerag.evaluation.stats import bootstrap_ci
from activerag.graphs.replug import build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.settings import Settings


async def one(question: str, ctx: ReplugContext) -> dict:
    start = time.perf_counter()
    out = await build_replug_graph().ainvoke({"question": question}, context=ctx)
    tokens = [t for entry in out["trace"] for t, _ in entry["tokens"]]
    return {"tokens": tokens, "answer_tokens": max(1, out["answer_tokens"]),
            "requests": out["lm_calls"], "seconds": time.perf_counter() - start,
            "certified": out["certified"]}


def described(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{sum(values) / len(values):.2f} [{low:.2f}, {high:.2f}]"


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=6)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--lookahead", type=int, nargs="+", default=[8, 16])
    p.add_argument("--store", default=None)
    args = p.parse_args()
    settings = Settings.from_env()
    store = args.store or str(settings.stores)
    questions = load_demo_questions()
    two, one_hop = [q for q in questions if q.get("hops") == 2], [
        q for q in questions if q.get("hops") == 1]
    picked = [q for pair in zip(two, one_hop, strict=False) for q in pair][: args.n]
    base = dict(base_url=settings.url, store_dir=store, k=args.k, max_answer_tokens=64)
    rows: dict[str, list[dict]] = {"token": []}
    for la in args.lookahead:
        rows[f"agree-{la}"] = []
    same = 0
    for q in picked:
        token = await one(q["question"], ReplugContext(**base, ensemble="token"))
        rows["token"].append(token)
        identical = True
        for la in args.lookahead:
            agree = await one(q["question"], ReplugContext(**base, ensemble="agree",
                                                           lookahead=la))
            rows[f"agree-{la}"].append(agree)
            identical &= agree["tokens"] == token["tokens"]
        same += identical
        print(f"{q['id']}: {token['answer_tokens']} tokens, same output: {identical}", flush=True)
    print(f"\n{len(picked)} demo questions, k={args.k}, one at a time; identical output in "
          f"{same} of {len(picked)}\n")
    print("| mode | requests / answer token | seconds / answer token | certified |")
    print("|---|---|---|---|")
    for mode, rs in rows.items():
        print(f"| {mode} | {described([r['requests'] / r['answer_tokens'] for r in rs])} | "
              f"{described([r['seconds'] / r['answer_tokens'] for r in rs])} | "
              f"{described([r['certified'] for r in rs])} |")
    token_req = sum(r["requests"] for r in rows["token"])
    token_sec = sum(r["seconds"] for r in rows["token"])
    for mode, rs in rows.items():
        if mode != "token":
            print(f"\n{mode}: {token_req / sum(r['requests'] for r in rs):.2f}x fewer requests, "
                  f"{token_sec / sum(r['seconds'] for r in rs):.2f}x faster than token")


if __name__ == "__main__":
    asyncio.run(main())

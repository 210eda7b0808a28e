"""The uncertainty gates' thresholds, by the rule fixed before any run: each estimator's median
over training questions answered without documents, so that each gate retrieves for about half
of such questions and the four are compared at one retrieval rate.

    python -m benchmarks.quality.gate_thresholds [--n 40] [--base-url URL] [--store DIR]
                                         [--prompts paper] [--max-answer-tokens 128]
                                         [--concurrency 2] [--out results/gate_thresholds.json]

The training questions are 2WikiMultihopQA dev questions of the 500-question file
(`twowiki500`, file order) that are not in the 1,000-question file every 2Wiki table measures
(`twowiki`, matched by 2Wiki id): none of them is ever an evaluation question. Each is answered
once without documents (the request the `none` method makes, with each token's top-20
alternatives) and sampled lexsim_samples times; all four estimators read those. Answers without
tokens are left out of the medians. It prints the medians and the `--gate-threshold` each
method would take. Needs the server (and, for the paper's exemplars, the store their documents
come from).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from activerag.evaluation.datasets import Example, twowiki, twowiki500
from activerag.graphs.gated import build_gated_graph
from activerag.nodes import estimators
from activerag.nodes.base import Update
from activerag.nodes.gated import steps as gated
from activerag.nodes.gated.context import GateContext
from activerag.nodes.parts import Parts
from activerag.state import FlareState


def training_questions(n: int) -> list[Example]:
    """The first N 2Wiki dev questions of twowiki500 that no 2Wiki table measures."""
    measured = {e.id for e in twowiki()}
    return [e for e in twowiki500() if e.id not in measured][:n]


def make_record(parts: Parts, found: dict[str, dict[str, float | None]]) -> Any:
    """An estimate node that never fires and keeps every estimator's value of the answer."""

    async def record(state: FlareState, runtime: Runtime[GateContext]) -> Update:
        ctx = runtime.context
        step: Any = dict(state.get("step", {}))
        step["samples"], costs = await gated.draw_samples(parts, state, ctx)
        full: Any = {**state, "step": step}
        found[state["question"]] = {name: est.value(step.get("tokens", []), full, ctx)
                                    for name, est in estimators.ESTIMATORS.items()}
        return {"step": {"fire": False}, **costs}

    return record


async def measure(examples: list[Example], ctx: GateContext, concurrency: int
                  ) -> dict[str, dict[str, float | None]]:
    found: dict[str, dict[str, float | None]] = {}
    graph = build_gated_graph(estimate=make_record(Parts(), found))
    limit = asyncio.Semaphore(concurrency)

    async def one(example: Example) -> None:
        async with limit:
            await graph.ainvoke({"question": example.question}, context=ctx)
            # the graph strips the question (nodes/base.checked_question)
            print(f"{len(found):3d}/{len(examples)} {example.id} "
                  f"{found[example.question.strip()]}", flush=True)

    await asyncio.gather(*[one(e) for e in examples])
    return found


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--n", type=int, default=40)
    cli.add_argument("--base-url", default=GateContext.base_url)
    cli.add_argument("--store", default="")
    cli.add_argument("--prompts", default="paper")
    cli.add_argument("--max-answer-tokens", type=int, default=128)
    cli.add_argument("--concurrency", type=int, default=2)
    cli.add_argument("--out", type=Path)
    cli.add_argument("--cache", type=Path, help="an LM cache file: a rerun repeats no request")
    args = cli.parse_args()
    if args.cache:
        from activerag.serving import cache

        cache.enable(args.cache)
    # entropy_mean's first pass asks for the top-20 alternatives every estimator but lexsim
    # needs; perplexity reads the same greedy tokens
    ctx = GateContext(estimator="entropy_mean", base_url=args.base_url, store_dir=args.store,
                      prompt_set=args.prompts, max_answer_tokens=args.max_answer_tokens)
    examples = training_questions(args.n)
    import activerag.graphs.base  # noqa: F401  (every shipped estimator, the margin's too)
    found = asyncio.run(measure(examples, ctx, args.concurrency))
    medians = {}
    for name in estimators.ESTIMATORS:
        values = [v[name] for v in found.values() if v[name] is not None]
        medians[name] = statistics.median(values) if values else None
        print(f"{name:13s} median {medians[name]} over {len(values)} answers "
              f"(method gate_{name}: --gate-threshold {medians[name]})")
    if args.out:
        settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
        args.out.write_text(json.dumps({"settings": settings,
                                        "questions": [e.id for e in examples],
                                        "values": {e.id: found[e.question.strip()]
                                                   for e in examples},
                                        "medians": medians}, indent=1))


if __name__ == "__main__":
    main()

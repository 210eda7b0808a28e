"""`activerag train-router`: Adaptive-RAG's query-complexity router, trained on 2Wiki training
questions labelled by this library's own runs of the three strategies."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from activerag.cli.flags import FLAGS, FLARE, SERVING, add_flags
from activerag.context import FlareContext
from activerag.errors import ActiveRagError
from activerag.settings import Settings

MULTI_STEP = "ircot"
"""The multi-step strategy (label C) a router is trained with by default: IRCoT, the paper's
and Adaptive-RAG's default multi-step graph."""
ONE_STEP = ("none", "single", "single_k1", "single_k10")
"""Methods that are not multi-step."""
GROUPS = (SERVING, FLARE)
"""The run flags train-router takes: the three strategies' settings."""
DEFAULT_N = 400
"""Training questions by default: the paper samples 400 per dataset (§4.2)."""


def add_train_router(sub: Any) -> None:
    """The `train-router` subcommand, with the run flags of FLARE's family (the strategies'
    settings)."""
    t = sub.add_parser(
        "train-router", help="Adaptive-RAG: label 2Wiki training questions by the strategies' "
                             "runs and train the query-complexity router",
        description="Labels --n 2Wiki training questions (2Wiki-1000 after its held-out "
                    "first 500, deduplicated, never an evaluation or demo question) by the "
                    "answers of no retrieval (A) and single-step retrieval (B): the simpler one "
                    "whose answer matches the gold exactly, else C (2Wiki being multi-hop, a "
                    "question neither answers is C whatever --multi answers, so --multi is not "
                    "run), fits a logistic regression on the questions' MiniLM embeddings and "
                    "writes it to --out. Running again resumes the labelling run.")
    t.add_argument("--out", required=True, help="the router folder to write")
    t.add_argument("--n", type=int, default=DEFAULT_N,
                   help=f"training questions (default: {DEFAULT_N}, the paper's per dataset)")
    t.add_argument("--seed", type=int, default=0, help="shuffle of the training questions")
    t.add_argument("--multi", default=MULTI_STEP,
                   help=f"the multi-step method of label C (default: {MULTI_STEP})")
    t.add_argument("--run", help="the labelling run folder (default: OUT/silver); running into "
                                 "an existing one resumes it")
    t.add_argument("--concurrency", type=int, default=4,
                   help="questions answered at once (default: 4)")
    t.add_argument("--cache", action="store_true",
                   help="serve identical LM requests from a cache under ACTIVERAG_HOME")
    t.add_argument("--l2", type=float, default=1e-3, help="L2 weight of the logistic regression")
    t.add_argument("--steps", type=int, default=2000, help="gradient steps at most")
    add_flags(t, GROUPS)
    t.set_defaults(func=train_router)


def command_line(args: argparse.Namespace) -> str:
    """The command that trains this router again: train-router's options and the run flags
    given."""
    words = ["activerag", "train-router", "--out", args.out, "--n", str(args.n),
             "--seed", str(args.seed), "--multi", args.multi, "--l2", str(args.l2),
             "--steps", str(args.steps)]
    if args.run:
        words += ["--run", args.run]
    if args.cache:
        words.append("--cache")
    for flag in FLAGS:
        if flag.group in GROUPS and hasattr(args, flag.dest):
            value = getattr(args, flag.dest)
            if isinstance(value, bool):
                words.append(flag.option if value else "--no-" + flag.option[2:])
            else:
                words += [flag.option, "none" if value is None else str(value)]
    return shlex.join(words)


def train_router(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from activerag import lsr
    from activerag.cli.commands import at_least_one
    from activerag.cli.endpoints import check_endpoints, needed
    from activerag.cli.options import method_runs
    from activerag.evaluation.datasets import TWOWIKI_1000
    from activerag.evaluation.router_train import train_router as train
    from activerag.graphs.registry import METHODS, unknown_method_error
    from activerag.nodes.adaptive_rag.logic import HOPS_LABEL
    from activerag.nodes.adaptive_rag.router import minilm

    at_least_one(args, "n", "concurrency", "steps")
    if args.multi not in METHODS:
        raise unknown_method_error([args.multi])
    context = METHODS[args.multi].context
    if args.multi in ONE_STEP or not issubclass(context, FlareContext) or context.ROUTES:
        raise ActiveRagError(f"--multi {args.multi} is not a multi-step method that answers a "
                             "question alone under FLARE's settings; give one such as flare")
    if args.cache:
        from activerag.serving import cache

        cache.enable(settings.home / "lm-cache.sqlite")
    examples = lsr.training_examples(args.n, args.seed)
    strategies = {"A": "none", "B": "single", "C": args.multi}
    runs = method_runs(args, settings, list(strategies.values()))
    check_endpoints(point for name in runs for point in needed(name, runs[name][1], False))
    out = Path(args.out)
    ctx = runs["single"][1]
    meta = {"command": command_line(args), "dataset_file": TWOWIKI_1000,
            "questions": (f"2Wiki-1000 after the held-out first {lsr.HELD_OUT_2WIKI}, "
                          "deduplicated, no evaluation or demo question "
                          f"(activerag.lsr.training_examples), shuffled with seed {args.seed}, "
                          f"the first {args.n}"),
            "lm": {"base_url": ctx.base_url, "model": ctx.model,
                   "prompt_set": ctx.prompt_set}}
    print(f"labelling {len(examples)} 2Wiki training questions with none (A) and single (B); "
          f"a question neither answers is C, whatever {args.multi} would answer, so "
          f"{args.multi} is not run; LM at {ctx.base_url}", file=sys.stderr)
    trained = asyncio.run(train(out, examples, runs, strategies, minilm(), dataset="2wiki",
                                fallback=HOPS_LABEL["multi-hop"],
                                run_dir=Path(args.run) if args.run else None,
                                concurrency=args.concurrency, l2=args.l2, steps=args.steps,
                                meta=meta))
    counts = ", ".join(f"{k} {v}" for k, v in trained.counts.items())
    print(f"labels: {counts} (of {len(trained.labels)}; C wherever neither none nor single "
          "was right)")
    print(f"training accuracy: {trained.accuracy:.3f}")
    print(f"router: {out}")
    return 0

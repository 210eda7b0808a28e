"""Command line: serve, ingest, ask, eval, sweep, train-retriever, longctx, demo."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from activerag.cli.commands import eval_methods, ingest, longctx_build, serve, sweep
from activerag.cli.flags import FLARE, FOLDER_GROUPS, SERVING, add_flags
from activerag.cli.options import check_methods, methods_help
from activerag.cli.router import add_train_router
from activerag.cli.run import ask, demo
from activerag.cli.train import train_retriever
from activerag.errors import ActiveRagError
from activerag.serving.catalogue import (
    CATALOGUE,
    CPU_VLLM_MODEL,
    DEFAULT_MODEL,
    DEFAULT_PORT,
    ENGINES,
    READER_MODEL,
)
from activerag.serving.server import DEFAULT_MAX_MODEL_LEN, Launch
from activerag.settings import Settings

RUN_GROUPS = [SERVING, FLARE, *FOLDER_GROUPS]
"""The flag groups of `ask` and `eval`, which run methods of every family (`sweep` runs FLARE's
and the app over FLARE's settings)."""


METHODS_EPILOG = "\0methods"
"""Where a command's help lists every method: made only when the help is shown, since listing
the methods imports every graph (seconds), which no other use of the parser needs."""


class MethodsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    def add_text(self, text: str | None) -> None:
        super().add_text(methods_help() if text == METHODS_EPILOG else text)


def parser() -> argparse.ArgumentParser:
    """The argument parser of `activerag`: one subcommand each, made by its own function."""
    p = argparse.ArgumentParser(prog="activerag", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    _add_serve(sub)
    _add_ingest(sub)
    _add_ask(sub)
    _add_eval(sub)
    _add_sweep(sub)
    _add_train_retriever(sub)
    add_train_router(sub)
    from activerag.cli.doctor import add_doctor

    add_doctor(sub)
    _add_longctx(sub)
    _add_demo(sub)
    return p


def _add_serve(sub: Any) -> None:
    """`serve`: start a model server, or stop them."""
    s = sub.add_parser("serve", help="start vLLM (or llama.cpp) with the default (or a given) "
                                      "model")
    s.add_argument("--engine", choices=ENGINES,
                   help="default: the engine this machine runs fastest, said in one line at "
                        "start: vllm where a GPU that vLLM can use is visible, else llama.cpp "
                        "(serves the 4-bit GGUF as shipped: about 5x the decoding speed of "
                        "vLLM's CPU build here, ready in seconds, a tenth of the memory; its "
                        "server is built once, 6-13 min on 2 cores)")
    s.add_argument("--model", help="a catalogue model to fetch and serve (default: the largest "
                                    "that the chosen engine decodes at a usable speed: "
                                    f"{READER_MODEL.key} on llama.cpp or a GPU, "
                                    f"{CPU_VLLM_MODEL.key} on vLLM's CPU build; "
                                    f"here {DEFAULT_MODEL.key}): "
                                    + ", ".join(f"{m.key} ({m.server_gb:g} GB on vLLM's CPU "
                                                f"build, {m.llama_gb:g} on llama.cpp)"
                                                for m in CATALOGUE.values()))
    s.add_argument("--model-dir", help="Hugging Face model directory to serve (vllm)")
    s.add_argument("--gguf", help="GGUF file to serve (vllm converts it first)")
    s.add_argument("--served-name", help="model name the server announces")
    s.add_argument("--port", type=int,
                   help=f"default: ACTIVERAG_PORT, else {DEFAULT_PORT} for the default model, "
                        "else the model's own ("
                        + ", ".join(f"{m.key} {m.port}" for m in CATALOGUE.values()) + ")")
    s.add_argument("--max-model-len", type=int,
                   help=f"context length (default: the catalogue model's; {DEFAULT_MAX_MODEL_LEN} "
                        "for --model-dir/--gguf)")
    s.add_argument("--parallel", type=int, default=Launch.parallel,
                   help="llama.cpp: requests served at once (slots), each with the whole "
                        "--max-model-len; one request's n samples take a slot each, as "
                        f"gate_lexsim's 10 samples in one request do (default {Launch.parallel})")
    s.add_argument("--threads", type=int, help="llama.cpp: threads (default: the cores this "
                                                 "process may use, by its CPU affinity and "
                                                 "cgroup quota)")
    s.add_argument("--chat-template",
                   help="serve with another chat template than the model's own: a llama.cpp "
                        "built-in name (llama3, gemma, chatml, ...) or a Jinja file (either "
                        "engine)")
    s.add_argument("--no-prompt-cache", action="store_true",
                   help="prefill every request's whole prompt (vLLM's prefix caching and "
                        "llama-server's prompt cache off), for latencies no earlier request "
                        "shortened; a server already running is reused as it was started")
    s.add_argument("--tool-calls", action="store_true",
                   help="let chat requests call tools (vLLM's --enable-auto-tool-choice "
                        "--tool-call-parser hermes), as the example agent needs; a server "
                        "already running is reused as it was started")
    s.add_argument("--stop", action="store_true",
                   help="stop the servers activerag started (with --model or --port: that one)")
    s.set_defaults(func=serve)


def _add_ingest(sub: Any) -> None:
    """`ingest`: a corpus into the stores."""
    i = sub.add_parser("ingest", help="add a corpus (jsonl, json, DPR tsv, txt, md) to the stores")
    i.add_argument("path", nargs="?")
    i.add_argument("--demo", action="store_true", help="ingest the shipped demo corpus")
    i.add_argument("--store", dest="store_dir")
    i.add_argument("--no-dense", action="store_true", help="BM25 only (skip Chroma embeddings)")
    i.add_argument("--max-words", type=int, default=120, help="passage length")
    i.set_defaults(func=ingest)


def _run_ask(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio  # here, not at import: the CLI's start stays quick

    return asyncio.run(ask(args, settings))


def _add_ask(sub: Any) -> None:
    """`ask`: one question, with every run flag."""
    a = sub.add_parser("ask", help="answer one question", epilog=METHODS_EPILOG,
                       formatter_class=MethodsHelpFormatter)
    a.add_argument("question")
    a.add_argument("--method", default="flare",
                   help="the method to run (default: flare); all are listed below, by family")
    a.add_argument("--trace", action="store_true",
                   help="print what the method decided: each sentence's retrieval decision "
                        "(FLARE; REPLUG: its documents' weights), FB-RAG's stages, the app's "
                        "route and single's confidence")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a.add_argument("--html", metavar="FILE", help="write the run as one self-contained HTML "
                   "page: the graph and the path taken, each sentence's draft tokens by "
                   "probability, the retrievals, the answer and the costs")
    a.add_argument("--context-file", help="the question's own long context (FB-RAG and its "
                                           "baselines; without it they retrieve from the store)")
    a.add_argument("--thread", help="checkpoint the run on disk under this name: a run killed "
                                    "midway and asked again goes on from its last step")
    a.add_argument("--checkpoints", help="the checkpoint file of --thread (default "
                                         "ACTIVERAG_HOME/threads.sqlite)")
    add_flags(a, RUN_GROUPS)
    a.set_defaults(func=_run_ask)


def _add_eval(sub: Any) -> None:
    """`eval`: methods on a dataset, with every run flag."""
    e = sub.add_parser("eval", help="evaluate methods on a dataset (resumable)",
                       epilog=METHODS_EPILOG, formatter_class=MethodsHelpFormatter)
    e.add_argument("--dataset", default="demo",
                   help="demo, 2wiki, 2wiki500, hotpotqa, strategyqa, asqa, nq, or a .jsonl path")
    e.add_argument("--methods", default="flare,single,none",
                   help="comma-separated methods, each run on every question (default: "
                        "flare,single,none); all are listed below, by family")
    e.add_argument("--n", type=int, default=20, help="questions (default: 20)")
    e.add_argument("--concurrency", type=int, default=4,
                   help="questions answered at once (default: 4)")
    e.add_argument("--run", help="run folder (examples.jsonl, summary.json, summary.md); "
                                 "running into an existing one resumes it")
    e.add_argument("--cache", action="store_true",
                   help="serve identical LM requests from a cache under ACTIVERAG_HOME")
    e.add_argument("--cache-samples", action="store_true",
                   help="FB-RAG: remember the light LM's samples under ACTIVERAG_HOME, so that "
                        "methods that differ after stage II (Ours-F/FB, Y, K up to the K drawn) "
                        "read the same ones; the strong reader is still asked")
    e.add_argument("--rescore", metavar="RUN", help="recompute the metrics of a run folder")
    e.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="answer on the actor pool of a Ray cluster (the activerag[ray] extra): "
                        "auto (RAY_ADDRESS, or the cluster `ray start` made here), HOST:PORT of "
                        "its head, ray://HOST:PORT, or nothing for a cluster of this run's own "
                        "on this machine; the rows go to --run as they come")
    e.add_argument("--actors", default="1:4", metavar="MIN:MAX",
                   help="with --ray: the pool grows from MIN to MAX actors while questions "
                        "wait, each answering --concurrency at once (default: 1:4)")
    e.add_argument("--actor-cpus", type=float, default=1.0, metavar="CPUS",
                   help="with --ray: CPUs Ray reserves for each actor (default: 1, so a node "
                        "holds as many actors as it has CPUs; lower it when the LM runs "
                        "elsewhere and the actors mostly wait)")
    add_flags(e, RUN_GROUPS)
    e.set_defaults(func=eval_methods)


def _add_sweep(sub: Any) -> None:
    """`sweep`: the ablations' tables and plots."""
    w = sub.add_parser("sweep", help="the paper's ablations, the triggers, the app: tables "
                                     "and plots")
    w.add_argument("kind", choices=["theta", "beta", "next_previous", "window", "trigger", "app",
                                    "all"])
    w.add_argument("--dataset", default="2wiki",
                   help="the dataset every variant answers (default: 2wiki); as eval's")
    w.add_argument("--n", type=int, default=100, help="questions (default: 100)")
    w.add_argument("--concurrency", type=int, default=4,
                   help="questions answered at once (default: 4)")
    w.add_argument("--out", default="runs/sweeps", help="folder of the sweep run folders")
    w.add_argument("--variants", metavar="LABEL,LABEL",
                   help="only these variants of the sweep, named as its table names them "
                        "(e.g. 'beta=0.0,beta=0.4 word'), in this order: the first is the one "
                        "the table's p are against (default: every variant)")
    w.add_argument("--cache", action="store_true",
                   help="serve identical LM requests from a cache under ACTIVERAG_HOME")
    add_flags(w, [SERVING, FLARE])
    w.set_defaults(func=sweep)


def _add_train_retriever(sub: Any) -> None:
    """`train-retriever`: REPLUG-LSR's query encoder."""
    t = sub.add_parser("train-retriever",
                       help="REPLUG-LSR: train a query encoder from the served LM's scores")
    t.add_argument("--out", required=True, help="folder for the encoder and its checkpoints")
    t.add_argument("--store", dest="store_dir", help="corpus folder (needs the dense store)")
    t.add_argument("--n", type=int, help="training questions (default: all 2Wiki ones left "
                                         "after the held-out head and deduplication)")
    t.add_argument("--task", choices=["qa", "lm"], default="qa",
                   help="qa: 2Wiki questions and answers; lm: corpus passages, the second half "
                        "given the first")
    t.add_argument("--k", type=int, default=10, help="passages per question")
    t.add_argument("--gamma", type=float, default=0.1, help="retriever temperature γ")
    t.add_argument("--beta", dest="lm_beta", type=float, default=0.1, help="LM temperature β")
    t.add_argument("--lm-score", choices=["mean", "sum"], default="mean")
    t.add_argument("--kl", choices=["paper", "reverse"], default="paper",
                   help="KL(P_R||Q) as in Eq. 5, or the official code's KL(Q||P_R)")
    t.add_argument("--teacher", choices=["lm", "shuffled"], default="lm",
                   help="shuffled: a control with each question's LM scores permuted")
    t.add_argument("--reembed-every", type=int, default=0, metavar="T",
                   help="re-embed the passages with the tower every T steps and retrieve from "
                        "the new index (§4.4; a small corpus); 0: passage embeddings frozen")
    t.add_argument("--lr", type=float, default=2e-5)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--checkpoint-every", type=int, default=10)
    t.add_argument("--eval-n", type=int, default=200,
                   help="held-out 2Wiki questions for recall@k before and after")
    t.add_argument("--fresh", action="store_true", help="ignore a checkpoint in --out")
    t.add_argument("--base-url", dest="base_url")
    t.add_argument("--model")
    t.set_defaults(func=train_retriever)


def _add_longctx(sub: Any) -> None:
    """`longctx build`: LongBench-style inputs."""
    lc = sub.add_parser("longctx", help="LongBench-style long-context inputs (FB-RAG)")
    lc_sub = lc.add_subparsers(dest="longctx_command", required=True)
    b = lc_sub.add_parser("build", help="pad 2wiki500 or HotpotQA questions' own paragraphs "
                                        "with distractors from the shared corpus")
    b.add_argument("--dataset", choices=["2wiki500", "hotpotqa"], required=True)
    b.add_argument("--words", type=int, default=1500, help="target context length in words")
    b.add_argument("--n", type=int, help="first N questions (default: all)")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", help="jsonl file (default: ACTIVERAG_HOME/longctx/"
                                 "DATASET-WORDSw.jsonl; never inside the repository)")
    b.set_defaults(func=longctx_build)


def _add_demo(sub: Any) -> None:
    """`demo`: the newcomer's first run."""
    d = sub.add_parser("demo", help="serve, ingest the demo corpus, answer demo questions")
    d.add_argument("--n", type=int, default=2, help="questions of each kind (two-hop, one-hop)")
    d.set_defaults(func=demo)

def main(argv: list[str] | None = None) -> int:
    """Entry point of the `activerag` command."""
    args = parser().parse_args(argv)
    cached = _lm_cache_state()
    try:
        if args.command in ("ask", "eval") and not getattr(args, "rescore", None):
            check_methods(args)
        settings = Settings.from_env()
        return int(args.func(args, settings))
    except ActiveRagError as exc:
        print(f"activerag: error: {exc}", file=sys.stderr)
        return 2
    finally:
        _lm_cache_state(cached)


def _lm_cache_state(restore: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
    """The LM cache's state (activerag.serving.cache), or RESTORE put back: --cache and
    --cache-samples hold for the command that gives them, so that main() called in-process (a
    notebook, a test) leaves the graphs run after it uncached. The module is not imported for
    this (a command that never loads it changed nothing)."""
    cache = sys.modules.get("activerag.serving.cache")
    if cache is None:
        return (None, None)
    if restore is not None:
        cache.restore(restore)
    return cache.state()  # type: ignore[no-any-return]

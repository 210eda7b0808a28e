"""Command line: serve, ingest, ask, eval, sweep, train-retriever, demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from activerag.context import AppContext, FBRagContext, FlareContext
from activerag.errors import ActiveRagError
from activerag.evaluation.report import format_stage, format_step
from activerag.serving.server import DEFAULT_MAX_MODEL_LEN
from activerag.settings import Settings


def _context(args: argparse.Namespace, settings: Settings) -> FlareContext:
    # the app's own setting makes the context the app's (a FlareContext with it)
    cls = AppContext if getattr(args, "min_confidence", None) is not None else FlareContext
    given = {f.name: getattr(args, f.name) for f in fields(cls)
             if getattr(args, f.name, None) is not None}
    given.setdefault("base_url", settings.url)
    given.setdefault("store_dir", str(settings.stores))
    if settings.model and "model" not in given:
        given["model"] = settings.model
    return cls(**given)


FB_OPTIONS = {"light_url": "light_base_url", "strong_url": "base_url",
              "strong_model": "model", "light_model": "light_model",
              "strong_format": "prompt_format", "light_format": "light_prompt_format",
              "chunk_words": "chunk_words", "chunking": "chunking",
              "recall_words": "recall_words", "read_words": "read_words",
              "samples": "samples", "separate_requests": "separate_requests",
              "fb_scale": "scale", "seed": "seed"}
"""CLI options of FB-RAG's context (its own endpoints and sizes), by argparse name."""


def _fb_context(args: argparse.Namespace, settings: Settings) -> FBRagContext:
    given = {field: getattr(args, opt) for opt, field in FB_OPTIONS.items()
             if getattr(args, opt, None) is not None}
    if getattr(args, "answer_tokens", None) is not None:
        given["max_answer_tokens"] = args.answer_tokens
    given.setdefault("store_dir", getattr(args, "store_dir", None) or str(settings.stores))
    return FBRagContext(**given)


def _add_fb_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("FB-RAG and its baselines (long_context, vanilla_rag, op_rag, "
                             "self_route)")
    g.add_argument("--light-url", help="light sampler endpoint (default SmolLM2 on :8765)")
    g.add_argument("--strong-url", help="strong reader endpoint (default Gemma on :8775)")
    g.add_argument("--light-model")
    g.add_argument("--strong-model")
    g.add_argument("--light-format", choices=["chatml", "plain"])
    g.add_argument("--strong-format", choices=["chatml", "plain"])
    g.add_argument("--chunking", choices=["words", "paragraphs"])
    g.add_argument("--chunk-words", type=int, help="words per chunk (default 100)")
    g.add_argument("--recall-words", type=int, help="X: words the light LM reads (default 1500)")
    g.add_argument("--read-words", type=int, help="Y: words the strong LM reads (default 500)")
    g.add_argument("--samples", type=int, help="K: the light LM's samples (default 5)")
    g.add_argument("--separate-requests", action=argparse.BooleanOptionalAction,
                   help="K requests instead of one with n=K")
    g.add_argument("--fb-scale", choices=["raw", "minmax"], help="Eq. 6's scale (fb_rag_fb)")
    g.add_argument("--seed", type=int, help="sampling seed (default none: CPU vLLM crashes on "
                   "a seeded request whose prompt is prefilled in chunks)")
    g.add_argument("--answer-tokens", type=int, help="the reader's answer budget (default 32)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--theta", type=float, help="retrieval threshold θ (default 0.8)")
    p.add_argument("--beta", type=float, help="masking threshold β (default 0.4)")
    p.add_argument("--trigger", help="when to retrieve: min_prob (FLARE, default), "
                                     "mean_surprisal, never, always, every_n")
    p.add_argument("--trigger-n", dest="trigger_n", type=int,
                   help="every_n's period in answer tokens (default 16)")
    p.add_argument("--k", type=int, help="documents per retrieval (default 2)")
    p.add_argument("--min-confidence", dest="min_confidence", type=float,
                   help="app: FLARE answers when single-time retrieval's geometric-mean token "
                        "probability is below this (default 0.5)")
    p.add_argument("--query", dest="query_formulation", choices=["implicit", "explicit"])
    p.add_argument("--mask-unit", dest="mask_unit", choices=["token", "word"],
                   help="implicit queries mask tokens below β (default) or whole words")
    p.add_argument("--keep-question-words", dest="keep_question_words",
                   action=argparse.BooleanOptionalAction,
                   help="never mask a word of the question in implicit queries")
    p.add_argument("--span-merge-gap", dest="span_merge_gap", type=int,
                   help="explicit queries: confident tokens bridged within one span (default 3)")
    p.add_argument("--keep-documents", dest="keep_documents",
                   action=argparse.BooleanOptionalAction,
                   help="keep the last retrieved documents in later prompts (default on)")
    p.add_argument("--exemplar-retrieval", dest="exemplar_retrieval",
                   action=argparse.BooleanOptionalAction,
                   help="exemplars carry documents retrieved with their questions "
                        "(default: on for --prompts paper)")
    p.add_argument("--retriever", choices=["bm25", "chroma"])
    p.add_argument("--query-encoder", dest="query_encoder",
                   help="query encoder folder from `activerag train-retriever` (with "
                        "--retriever chroma)")
    p.add_argument("--max-sentences", dest="max_sentences", type=int)
    p.add_argument("--max-answer-tokens", dest="max_answer_tokens", type=int)
    p.add_argument("--prompt-format", dest="prompt_format", choices=["chatml", "plain"])
    p.add_argument("--prompts", dest="prompt_set",
                   choices=["default", "paper", "paper-strategyqa", "paper-asqa"],
                   help="exemplars: the library's own or the paper's (from $ACTIVERAG_DATA)")
    p.add_argument("--window", dest="window_tokens", type=int, help="previous-window size l")
    p.add_argument("--query-tokens", dest="query_tokens", type=int,
                   help="previous-window query: 0 previous window, N last N tokens, -1 all")
    p.add_argument("--base-url", dest="base_url", help="OpenAI-compatible server URL (…/v1)")
    p.add_argument("--model", help="served model name (default: the one the server serves)")
    p.add_argument("--store", dest="store_dir", help="corpus folder")


def _print_trace(step: dict[str, Any]) -> None:
    print(format_step(step))


async def _ask(args: argparse.Namespace, settings: Settings) -> int:
    await _answer(args, settings)
    return 0


async def _answer(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """Answer args.question with args.method, printing as asked; the final state."""
    from activerag.graphs.methods import method

    graph, ctx = method(args.method, _context(args, settings), _fb_context(args, settings))
    given: dict[str, Any] = {"question": args.question}
    if getattr(args, "context_file", None):
        path = Path(args.context_file)
        if not path.exists():
            raise ActiveRagError(f"the context file {path} does not exist")
        given["context"] = path.read_text()
    record = None
    if getattr(args, "html", None):
        from activerag.page import RunRecord, settings_of

        record = RunRecord(args.question, args.method, settings_of(ctx))
    final: dict[str, Any] = {}
    async for mode, chunk in _stream(args, settings, graph, given, ctx):
        if record is not None:
            record.observe(mode, chunk)
        if mode == "custom" and args.trace and not args.json:
            if "stage" in chunk:
                print(format_stage(chunk["stage"]))
            else:
                _print_trace(chunk["sentence"])
        elif mode == "values":
            final = chunk
    if args.json:
        keys = ("question", "answer", "trace", "answer_tokens", "lm_calls", "generated_tokens",
                "prompt_tokens", "retrievals", "retrieval_steps", "retrieved_titles", "route",
                "recall", "samples", "selected", "stage_seconds", "truncated_tokens")
        print(json.dumps({k: final.get(k) for k in keys}, indent=1, default=str))
    else:
        if args.trace and (args.method == "none" or args.method.startswith("single")):
            for step in final.get("trace", []):
                _print_trace(step)
        print(final.get("answer", "").strip())
    if record is not None:
        from activerag.page import render_page

        record.complete = True
        Path(args.html).write_text(render_page(record, graph), encoding="utf-8")
        print(f"page: {args.html}", file=sys.stderr if args.json else sys.stdout)
    return final


async def _stream(args: argparse.Namespace, settings: Settings, graph: Any, given: dict[str, Any],
                  ctx: Any) -> AsyncIterator[tuple[str, Any]]:
    """The run's stream (custom events, states, node updates): checkpointed on disk under
    --thread, else in memory only."""
    from activerag.page import STREAM_MODES

    if not getattr(args, "thread", None):
        async for item in graph.astream(given, context=ctx, stream_mode=STREAM_MODES):
            yield item
        return
    from activerag import durable

    path = Path(args.checkpoints) if args.checkpoints else settings.home / "threads.sqlite"
    async with durable.checkpoints(path) as saver:
        async for item in durable.stream(graph, given, ctx, saver, args.thread, STREAM_MODES):
            yield item


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.serving import server

    model = server.catalogue_model(args.model) if args.model else server.DEFAULT_MODEL
    # the port: --port, else ACTIVERAG_PORT, else the catalogue model's own
    port = args.port or (settings.port if os.environ.get("ACTIVERAG_PORT") else model.port)
    if args.stop:
        chosen = args.port or args.model or os.environ.get("ACTIVERAG_PORT")
        ports = [port] if chosen else server.managed_ports(settings)
        stopped = [p for p in ports if server.stop_server(settings.model_copy(update={"port": p}))]
        print(f"stopped the server on port{'s' if len(stopped) > 1 else ''} "
              f"{', '.join(map(str, stopped))}" if stopped else "no managed server was running")
        return 0
    settings = settings.model_copy(update={"port": port})
    model_dir = Path(args.model_dir) if args.model_dir else None
    if args.gguf:
        gguf = Path(args.gguf)
        model_dir = settings.models / gguf.stem
        if not (model_dir / "config.json").exists():
            server.convert_gguf(gguf, model_dir)
    url = server.start_server(settings, model_dir, args.max_model_len, args.served_name,
                              model=model)
    print(url)
    return 0


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.demo import DEMO_CORPUS
    from activerag.stores.corpus import Corpus

    if not args.path and not args.demo:
        raise ActiveRagError("give a corpus PATH or --demo")
    source = DEMO_CORPUS if args.demo else Path(args.path)
    store = Path(args.store_dir) if args.store_dir else settings.stores
    report = Corpus(store, settings.chroma_url).ingest(source, dense=not args.no_dense,
                                                       max_words=args.max_words)
    print(report.summary())
    print(f"store: {store}")
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.evaluation import evaluate
    from activerag.evaluation.datasets import load_dataset
    from activerag.graphs.methods import METHODS

    if args.rescore:
        result = evaluate.rescore(evaluate.Run(Path(args.rescore)))
        print(evaluate.summary_markdown(result))
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ActiveRagError(f"unknown methods {unknown}; choose from {', '.join(METHODS)}")
    if args.cache:
        from activerag.serving import cache

        cache.enable(settings.home / "lm-cache.sqlite")
    if args.cache_samples:
        from activerag.serving import cache

        cache.enable_samples(settings.home / "lm-cache.sqlite")
    examples = load_dataset(args.dataset, args.n)
    run_dir = Path(args.run or f"runs/{args.dataset.replace('/', '_')}-{'-'.join(methods)}")
    runs = evaluate.method_runs(methods, _context(args, settings), _fb_context(args, settings))
    result = asyncio.run(evaluate.evaluate(evaluate.Run(run_dir), args.dataset, runs, examples,
                                           args.concurrency,
                                           metrics_url=runs[methods[0]][1].base_url))
    print(evaluate.summary_markdown(result))
    print(f"run folder: {run_dir}")
    return 0


def _sweep(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.evaluation.datasets import load_dataset
    from activerag.evaluation.sweeps import SWEEPS, run_sweep

    if args.cache:
        from activerag.serving import cache

        cache.enable(settings.home / "lm-cache.sqlite")
    names = list(SWEEPS) if args.kind == "all" else [args.kind]
    examples = load_dataset(args.dataset, args.n)
    for name in names:
        folder = Path(args.out) / name
        asyncio.run(run_sweep(name, folder, args.dataset, examples, _context(args, settings),
                              args.concurrency))
        print((folder / f"{name}.md").read_text())
        print(f"plot: {folder / f'{name}.png'}")
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.demo import DEMO_CORPUS, load_demo_questions
    from activerag.evaluation.metrics import exact_match, extract_answer
    from activerag.serving import server
    from activerag.stores.corpus import Corpus

    if not settings.base_url:
        server.start_server(settings)
    report = Corpus(settings.stores, settings.chroma_url).ingest(DEMO_CORPUS)
    print(report.summary())
    # The first questions of each kind, in file order (never picked by how they come out).
    questions = load_demo_questions()
    shown = [[q for q in questions if q.get("hops") == hops][: args.n] for hops in (2, 1)]
    right = 0
    for q in [q for group in shown for q in group]:
        print(f"\nQ ({q.get('hops', 2)}-hop): {q['question']}   (gold: {q['answers'][0]})")
        ns = argparse.Namespace(question=q["question"], method="flare", trace=True, json=False)
        final = asyncio.run(_answer(ns, settings))
        prediction = extract_answer(final.get("answer", ""))
        ok = exact_match(prediction, q["answers"]) == 1.0
        right += ok
        print(f"-> {'matches the gold' if ok else 'does NOT match the gold'} "
              f"(extracted {prediction!r}, gold {q['answers'][0]!r})")
    total = sum(len(g) for g in shown)
    print(f"\n{right} of {total} demo answers match the gold (SmolLM2-135M is a very small "
          "model; README shows flare, single and none on all 48 demo questions)")
    return 0


def _longctx_build(args: argparse.Namespace, settings: Settings) -> int:
    from activerag import longctx

    out = Path(args.out) if args.out else (settings.home / "longctx"
                                           / f"{args.dataset}-{args.words}w.jsonl")
    longctx.write(longctx.build(args.dataset, args.words, args.n, args.seed), out)
    print(out)
    return 0


def _train_retriever(args: argparse.Namespace, settings: Settings) -> int:
    from activerag import lsr
    from activerag.evaluation.datasets import twowiki
    from activerag.evaluation.stats import bootstrap_ci, paired_bootstrap_p
    from activerag.serving.lm import VLLMClient
    from activerag.serving.token_lm import VLLMTokens
    from activerag.stores.chroma import QueryEncoder
    from activerag.stores.corpus import Corpus

    config = lsr.LSRConfig(k=args.k, gamma=args.gamma, beta=args.lm_beta, lm_score=args.lm_score,
                           direction=args.kl, lr=args.lr, batch=args.batch, epochs=args.epochs,
                           seed=args.seed, checkpoint_every=args.checkpoint_every, task=args.task,
                           teacher=args.teacher, reembed_every=args.reembed_every)
    config.check()
    store = Path(args.store_dir) if args.store_dir else settings.stores
    corpus = Corpus(store, settings.chroma_url)
    if args.task == "lm":
        examples = lsr.lm_split(corpus.bm25.docs)[1][: args.n]
        what = (f"{len(examples)} corpus passages (first half x, second half y; none of the "
                "titles benchmarks/replug_lm.py evaluates)")
        held_out = []
    else:
        examples = lsr.training_examples(args.n, args.seed)
        what = f"{len(examples)} 2Wiki questions (none of them an evaluation question)"
        held_out = twowiki()[: args.eval_n]
        clash = lsr.overlap(examples, held_out)
        if clash:
            raise ActiveRagError(f"{clash} held-out questions are also training questions")
    url = args.base_url or settings.url
    lm = VLLMTokens(url, args.model or settings.model or VLLMClient(url).model)
    cache = lsr.ScoreCache(settings.home / "lsr-lm-scores.sqlite")
    out = Path(args.out)
    print(f"training a query encoder on {what}, k={config.k}, γ={config.gamma}, β={config.beta}, "
          f"{config.epochs} epochs of batch {config.batch}; LM {lm.model} at {url}",
          file=sys.stderr)
    report = lsr.Trainer(corpus, lm, out, config, cache).train(examples, resume=not args.fresh)
    per = max(1, len(report.losses) // config.epochs)
    means = [sum(report.losses[i:i + per]) / len(report.losses[i:i + per])
             for i in range(0, len(report.losses), per)]
    print(f"trained {report.steps} steps; mean loss per epoch "
          f"{' -> '.join(f'{m:.3f}' for m in means)}; LM scored {report.scored_pairs} pairs, "
          f"{report.cached_pairs} from the cache; encoder in {out}")
    if not held_out:
        print("bits per byte with and without it: python benchmarks/replug_lm.py --store "
              f"{store} --query-encoder {out}")
        return 0
    ks = [k for k in (1, 2, 5, 10, 20) if k <= len(corpus.chroma)]
    before = lsr.recall_at(corpus.chroma, held_out, ks)
    encoder = QueryEncoder(out)
    after = lsr.recall_at(encoder.index() or corpus.chroma, held_out, ks, encoder)
    lines = [f"gold-title recall@k on the first {len(held_out)} 2Wiki questions (held out; mean, "
             "95% bootstrap interval, paired p)", "",
             "| k | MiniLM | LSR query encoder | p |", "|---|---|---|---|"]
    table = {}
    for k in ks:
        b, a = before[k], after[k]
        bl, bh = bootstrap_ci(b)
        al, ah = bootstrap_ci(a)
        pval = paired_bootstrap_p(a, b)
        table[k] = {"before": sum(b) / len(b), "before_ci": [bl, bh], "after": sum(a) / len(a),
                    "after_ci": [al, ah], "p": pval}
        lines.append(f"| {k} | {table[k]['before']:.3f} [{bl:.3f}, {bh:.3f}] | "
                     f"{table[k]['after']:.3f} [{al:.3f}, {ah:.3f}] | {pval:.3f} |")
    (out / "recall.json").write_text(json.dumps({"n": len(held_out), "recall": table},
                                                indent=1))
    (out / "recall.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of `activerag`."""
    p = argparse.ArgumentParser(prog="activerag", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="start vLLM with the default (or a given) model")
    s.add_argument("--model", help="a catalogue model to fetch, convert and serve: "
                                    "smollm2-135m (the default) or gemma-3-270m")
    s.add_argument("--model-dir", help="Hugging Face model directory to serve")
    s.add_argument("--gguf", help="GGUF file to convert and serve")
    s.add_argument("--served-name", help="model name the server announces")
    s.add_argument("--port", type=int,
                   help="default: ACTIVERAG_PORT, else the model's own (SmolLM2 8765, Gemma 8775)")
    s.add_argument("--max-model-len", type=int,
                   help=f"context length (default: the catalogue model's; {DEFAULT_MAX_MODEL_LEN} "
                        "for --model-dir/--gguf)")
    s.add_argument("--stop", action="store_true",
                   help="stop the servers activerag started (with --model or --port: that one)")
    s.set_defaults(func=_serve)

    i = sub.add_parser("ingest", help="add a corpus (jsonl, json, DPR tsv, txt, md) to the stores")
    i.add_argument("path", nargs="?")
    i.add_argument("--demo", action="store_true", help="ingest the shipped demo corpus")
    i.add_argument("--store", dest="store_dir")
    i.add_argument("--no-dense", action="store_true", help="BM25 only (skip Chroma embeddings)")
    i.add_argument("--max-words", type=int, default=120, help="passage length")
    i.set_defaults(func=_ingest)

    a = sub.add_parser("ask", help="answer one question")
    a.add_argument("question")
    a.add_argument("--method", default="flare",
                   help="flare (default), flare_explicit, flare_combined, flare_instruct, "
                        "next_sentence, previous_sentence, previous_window, self_ask, single, none")
    a.add_argument("--trace", action="store_true", help="print each sentence's decision")
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
    _add_run_options(a)
    _add_fb_options(a)
    a.set_defaults(func=lambda args, st: asyncio.run(_ask(args, st)))

    e = sub.add_parser("eval", help="evaluate methods on a dataset (resumable)")
    e.add_argument("--dataset", default="demo",
                   help="demo, 2wiki, 2wiki500, hotpotqa, strategyqa, asqa, nq, or a .jsonl path")
    e.add_argument("--methods", default="flare,single,none")
    e.add_argument("--n", type=int, default=20)
    e.add_argument("--concurrency", type=int, default=4)
    e.add_argument("--run", help="run folder (examples.jsonl, summary.json, summary.md); "
                                 "running into an existing one resumes it")
    e.add_argument("--cache", action="store_true",
                   help="serve identical LM requests from a cache under ACTIVERAG_HOME")
    e.add_argument("--cache-samples", action="store_true",
                   help="FB-RAG: remember the light LM's samples under ACTIVERAG_HOME, so that "
                        "methods that differ after stage II (Ours-F/FB, Y, K up to the K drawn) "
                        "read the same ones; the strong reader is still asked")
    e.add_argument("--rescore", metavar="RUN", help="recompute the metrics of a run folder")
    _add_fb_options(e)
    _add_run_options(e)
    e.set_defaults(func=_eval)

    w = sub.add_parser("sweep", help="the paper's ablations, the triggers, the app: tables "
                                     "and plots")
    w.add_argument("kind", choices=["theta", "beta", "next_previous", "window", "trigger", "app",
                                    "all"])
    w.add_argument("--dataset", default="2wiki")
    w.add_argument("--n", type=int, default=100)
    w.add_argument("--concurrency", type=int, default=4)
    w.add_argument("--out", default="runs/sweeps", help="folder of the sweep run folders")
    w.add_argument("--cache", action="store_true",
                   help="serve identical LM requests from a cache under ACTIVERAG_HOME")
    _add_run_options(w)
    w.set_defaults(func=_sweep)

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
    t.set_defaults(func=_train_retriever)

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
    b.set_defaults(func=_longctx_build)

    d = sub.add_parser("demo", help="serve, ingest the demo corpus, answer demo questions")
    d.add_argument("--n", type=int, default=2, help="questions of each kind (two-hop, one-hop)")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `activerag` command."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args, Settings.from_env()) or 0)
    except ActiveRagError as exc:
        print(f"activerag: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

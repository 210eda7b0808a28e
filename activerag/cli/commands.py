"""`activerag serve`, `ingest`, `eval`, `sweep` and `longctx build`."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path
from typing import Any

from activerag.cli.endpoints import check_endpoints, needed
from activerag.cli.options import check_methods, flare_context, method_runs, warn_ignored
from activerag.errors import ActiveRagError, SettingError
from activerag.settings import Settings


def at_least_one(args: argparse.Namespace, *names: str) -> None:
    """Refuse a size option of ARGS (--n, --concurrency) below 1: 0 workers wait forever, and
    --n 0 or -1 would slice the dataset instead of sizing it."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ActiveRagError(f"--{name} must be at least 1, got {value}; give a positive "
                                 "number")


def gguf_dir(settings: Settings, gguf: Path) -> Path:
    """Where GGUF is converted: models/gguf-<its sha256's first 16 hex digits>, so two files
    of one name never share a conversion, and one file under two names is converted once."""
    from activerag.errors import ModelFileMissing

    if not gguf.is_file():
        raise ModelFileMissing(f"GGUF file {gguf} does not exist or is not a file; pass an "
                               "existing .gguf file")
    digest = hashlib.sha256()
    with open(gguf, "rb") as src:
        while block := src.read(1 << 20):
            digest.update(block)
    return settings.models / f"gguf-{digest.hexdigest()[:16]}"


def serve(args: argparse.Namespace, settings: Settings) -> int:
    from activerag.errors import ModelFileMissing
    from activerag.serving import managed, models, server
    from activerag.serving.catalogue import catalogue_model
    from activerag.serving.hardware import engine_choice

    # without --model, start_server serves the default of the engine it chooses
    model = catalogue_model(args.model) if args.model else None
    # the port: --port, else ACTIVERAG_PORT, else the default server's (no --model) or the
    # catalogue model's own
    port = args.port or (model.port if model and not os.environ.get("ACTIVERAG_PORT")
                         else settings.port)
    if args.stop:
        chosen = args.port or args.model or os.environ.get("ACTIVERAG_PORT")
        ports = [port] if chosen else managed.managed_ports(settings)
        stopped = [p for p in ports if managed.stop_server(settings.model_copy(update={"port": p}))]
        print(f"stopped the server on port{'s' if len(stopped) > 1 else ''} "
              f"{', '.join(map(str, stopped))}" if stopped else "no managed server was running")
        return 0
    # a Hugging Face folder is vLLM's to serve; else, without --engine, this machine's fastest
    given = getattr(args, "engine", None) or ("vllm" if args.model_dir else None)
    engine = engine_choice(given).engine
    settings = settings.model_copy(update={"port": port})
    at_least_one(args, "parallel", "threads", "max_model_len")
    model_dir = Path(args.model_dir) if args.model_dir else None
    gguf = Path(args.gguf) if args.gguf else None
    if gguf is not None and engine == "vllm":
        model_dir = gguf_dir(settings, gguf)
        if not (model_dir / "config.json").exists():
            models.convert_gguf(gguf, model_dir)
        gguf = None
    elif gguf is not None and not gguf.is_file():
        raise ModelFileMissing(f"GGUF file {gguf} does not exist or is not a file; pass an "
                               "existing .gguf file")
    tools = server.TOOL_CALL_ARGS if getattr(args, "tool_calls", False) else ()
    if tools and engine == "llama.cpp":
        tools = ()  # llama-server answers tool calls with the model's Jinja template as it is
    launch = server.Launch(given, tools, getattr(args, "parallel", None) or server.Launch.parallel,
                           getattr(args, "threads", None), getattr(args, "chat_template", None),
                           not getattr(args, "no_prompt_cache", False))
    url = server.start_server(settings, model_dir, args.max_model_len, args.served_name,
                              model=model, launch=launch, gguf=gguf)
    print(url)
    return 0


def ingest(args: argparse.Namespace, settings: Settings) -> int:
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


def eval_methods(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from activerag.evaluation import evaluate
    from activerag.evaluation.datasets import load_dataset

    at_least_one(args, "n", "concurrency")
    if args.rescore:
        result = evaluate.rescore(evaluate.Run(Path(args.rescore)))
        print(evaluate.summary_markdown(result))
        return 0
    methods = check_methods(args)
    if args.ray is not None:  # no Ray, or a bad --actors: said before any server is asked
        from activerag.evaluation.on_ray import need_ray, parse_actors

        parse_actors(args.actors)
        need_ray()
    from activerag.database import check as check_database

    database = check_database()  # a database that does not answer stops us before any LM call
    if args.cache:
        from activerag.serving import cache

        cache.enable(settings.home / "lm-cache.sqlite")
    if args.cache_samples:
        from activerag.serving import cache

        cache.enable_samples(settings.home / "lm-cache.sqlite")
    warn_ignored(args, methods)
    examples = load_dataset(args.dataset, args.n)
    run_dir = Path(args.run or f"runs/{args.dataset.replace('/', '_')}-{'-'.join(methods)}")
    runs = method_runs(args, settings, methods)
    long = any(example.context for example in examples)
    check_endpoints(point for name in methods for point in needed(name, runs[name][1], long))
    from activerag.cli.abilities import check_needs

    runs = check_needs(runs)
    if args.ray is not None:
        return ray_eval(args, database, run_dir, runs, examples)
    result = asyncio.run(evaluate.evaluate(evaluate.Run(run_dir), args.dataset, runs, examples,
                                           args.concurrency,
                                           metrics_url=runs[methods[0]][1].base_url))
    print(evaluate.summary_markdown(result))
    print(f"run folder: {run_dir}")
    return 0


def ray_eval(args: argparse.Namespace, database: str | None, run_dir: Path,
             runs: dict[str, Any], examples: list[Any]) -> int:
    """`eval --ray`: the run's questions answered on a Ray cluster's actor pool, its rows in
    RUN_DIR (docs/operations.md)."""
    from functools import partial

    from activerag.evaluation.evaluate import Run
    from activerag.evaluation.on_ray import evaluate_on_ray, parse_actors, registry_runs
    from activerag.evaluation.tables import summary_markdown
    from activerag.graphs.registry import METHODS

    actors = parse_actors(args.actors)
    text_only = frozenset(n for n, (graph, _) in runs.items() if graph is not METHODS[n].graph)
    build = partial(registry_runs, {n: ctx for n, (_, ctx) in runs.items()}, text_only)
    result = evaluate_on_ray(Run(run_dir), args.dataset, runs, examples,
                             address=None if args.ray == "local" else args.ray, actors=actors,
                             concurrency=args.concurrency, database=database, build=build,
                             actor_cpus=args.actor_cpus)
    print(summary_markdown(result))
    ray = result["ray"]
    print(f"run folder: {run_dir} ({ray['nodes']} Ray node(s), {ray['duplicates_dropped']} "
          "duplicate row(s) dropped)")
    return 0


def sweep(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from activerag.evaluation.datasets import load_dataset
    from activerag.evaluation.sweeps import SWEEPS, chosen, run_sweep

    at_least_one(args, "n", "concurrency")
    only = (None if args.variants is None
            else [v.strip() for v in args.variants.split(",") if v.strip()])
    if only is not None and args.kind == "all":
        raise SettingError("--variants names the variants of one sweep; give its kind (theta, "
                           "beta, ...) instead of 'all'")
    names = list(SWEEPS) if args.kind == "all" else [args.kind]
    if only is not None:
        chosen(args.kind, only)  # an unknown label is refused before anything runs
    if args.cache:
        from activerag.serving import cache

        cache.enable(settings.home / "lm-cache.sqlite")
    examples = load_dataset(args.dataset, args.n)
    for name in names:
        folder = Path(args.out) / name
        asyncio.run(run_sweep(name, folder, args.dataset, examples, flare_context(args, settings),
                              args.concurrency, only))
        print((folder / f"{name}.md").read_text())
        print(f"plot: {folder / f'{name}.png'}")
    return 0


def longctx_build(args: argparse.Namespace, settings: Settings) -> int:
    from activerag import longctx

    out = Path(args.out) if args.out else (settings.home / "longctx"
                                           / f"{args.dataset}-{args.words}w.jsonl")
    longctx.write(longctx.build(args.dataset, args.words, args.n, args.seed), out)
    print(out)
    return 0

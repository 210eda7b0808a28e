"""The options shared by `ask`, `eval` and `sweep`, and the method contexts built from them."""

from __future__ import annotations

import argparse
from dataclasses import fields

from activerag.context import AppContext, FBRagContext, FlareContext
from activerag.settings import Settings


def flare_context(args: argparse.Namespace, settings: Settings) -> FlareContext:
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


def fb_context(args: argparse.Namespace, settings: Settings) -> FBRagContext:
    given = {field: getattr(args, opt) for opt, field in FB_OPTIONS.items()
             if getattr(args, opt, None) is not None}
    if getattr(args, "answer_tokens", None) is not None:
        given["max_answer_tokens"] = args.answer_tokens
    given.setdefault("store_dir", getattr(args, "store_dir", None) or str(settings.stores))
    return FBRagContext(**given)


def add_fb_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("FB-RAG and its baselines (long_context, vanilla_rag, op_rag, "
                             "self_route)")
    g.add_argument("--light-url", help="light sampler endpoint (default SmolLM2-135M on :8755, "
                                       "as `activerag serve --model smollm2-135m` serves it)")
    g.add_argument("--strong-url", help="strong reader endpoint (default the default model, "
                                        "Qwen2.5-Coder-0.5B, on :8765)")
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


def add_run_options(p: argparse.ArgumentParser) -> None:
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

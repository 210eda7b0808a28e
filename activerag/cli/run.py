"""`activerag ask` and `activerag demo`: one run of a method graph, streamed and printed (and
checkpointed under --thread, drawn into a page under --html)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from activerag.cli import trace
from activerag.cli.endpoints import Endpoint, check_endpoints, needed
from activerag.cli.options import method_runs, warn_ignored
from activerag.errors import ActiveRagError, LMServerUnreachable
from activerag.settings import Settings


def utf8_question(question: str) -> str:
    """QUESTION, refused when it holds a byte that is not UTF-8 (Python keeps such a byte of
    the command line as a lone surrogate, which no request can carry)."""
    for at, char in enumerate(question):
        if "\ud800" <= char <= "\udfff":
            byte = f"byte 0x{ord(char) - 0xDC00:02x}" if char >= "\udc80" else "a lone surrogate"
            raise ActiveRagError(f"the question is not valid UTF-8 ({byte} at character {at + 1}); "
                                 "type it in a UTF-8 terminal (e.g. LANG=C.UTF-8) or re-encode it")
    return question


def context_text(path: Path) -> str:
    """The text of the --context-file PATH, refused unless it is a readable UTF-8 text file."""
    if path.is_dir():
        raise ActiveRagError(f"the context file {path} is a folder; pass a UTF-8 text file")
    if not path.exists():
        raise ActiveRagError(f"the context file {path} does not exist; pass a UTF-8 text file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ActiveRagError(f"the context file {path} is not UTF-8 text (byte "
                             f"0x{exc.object[exc.start]:02x} at offset {exc.start}); pass a UTF-8 "
                             "text file (re-encode it, e.g. with iconv)") from exc
    except OSError as exc:
        raise ActiveRagError(f"cannot read the context file {path} ({exc.strerror}); pass a "
                             "readable UTF-8 text file") from exc
    if "\x00" in text:
        raise ActiveRagError(f"the context file {path} holds NUL bytes, so it is not text; pass "
                             "a UTF-8 text file")
    return text


def check_page_target(path: Path) -> None:
    """Refuse an --html PATH that cannot be written, before the run spends any LM time."""
    if path.is_dir():
        raise ActiveRagError(f"the --html page {path} is a folder; name a file to write")
    if not path.parent.is_dir():
        raise ActiveRagError(f"the folder {path.parent} of the --html page does not exist; "
                             "create it first or name a page in an existing folder")


async def ask(args: argparse.Namespace, settings: Settings) -> int:
    await answer(args, settings)
    return 0


async def answer(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """Answer args.question with args.method, printing as asked; the final state."""
    from activerag.nodes.base import checked_question

    # refused before any server is asked, so that a bad question costs nothing
    given: dict[str, Any] = {"question": checked_question(utf8_question(args.question))}
    if getattr(args, "context_file", None):
        given["context"] = context_text(Path(args.context_file))
    if getattr(args, "html", None):
        check_page_target(Path(args.html))
    if getattr(args, "thread", None) or getattr(args, "cache", False):
        from activerag.database import check as check_database

        check_database()  # the thread or cache's database, refused before any server is asked
    graph, ctx = method_runs(args, settings, [args.method])[args.method]
    warn_ignored(args, [args.method])
    endpoints = needed(args.method, ctx, "context" in given)
    check_endpoints(endpoints)
    from activerag.cli.abilities import check_needs

    graph, ctx = check_needs({args.method: (graph, ctx)})[args.method]
    record = None
    if getattr(args, "html", None):
        from activerag.page.record import RunRecord, settings_of

        record = RunRecord(args.question, args.method, settings_of(ctx))
    final: dict[str, Any] = {}
    tracing = args.trace and not args.json
    streamed = False
    async for mode, chunk in stream(args, settings, graph, given, ctx):
        if record is not None:
            record.observe(mode, chunk)
        if mode == "custom" and tracing and chunk.get("kind") != "token":
            print(trace.event(chunk))
            streamed = streamed or "sentence" in chunk
        elif mode == "values":
            final = chunk
    if record is not None:
        record.finish()
        record.servers = served(endpoints, ctx)
    if args.json:
        keys = ("question", "answer", "trace", "answer_tokens", "lm_calls", "generated_tokens",
                "prompt_tokens", "retrievals", "retrieval_steps", "retrieved_titles", "route",
                "recall", "samples", "selected", "stage_seconds", "truncated_tokens")
        print(json.dumps({k: final.get(k) for k in keys}, indent=1, default=str))
    else:
        if tracing:
            for line in trace.after_run(final, ctx, streamed):
                print(line)
        print(final.get("answer", "").strip())
    if record is not None:
        from activerag.page import render_page

        Path(args.html).write_text(render_page(record, graph), encoding="utf-8")
        print(f"page: {args.html}", file=sys.stderr if args.json else sys.stdout)
    return final


def served(endpoints: list[Endpoint], ctx: Any) -> list[tuple[str, str, str]]:
    """Each endpoint's role, URL and model (the run's --model, else the first its server
    lists; empty where it no longer answers) for the run page."""
    from activerag.serving.replicas import urls
    from activerag.serving.running import server_models

    found = []
    for point in endpoints:
        model = getattr(ctx, "model", "") if point.flag in ("--base-url", "--strong-url") else ""
        if not model:
            try:
                model = next(iter(server_models(urls(point.url)[0])), "")
            except LMServerUnreachable:
                model = ""
        found.append((point.role, point.url, model))
    return found


async def stream(args: argparse.Namespace, settings: Settings, graph: Any, given: dict[str, Any],
                  ctx: Any) -> AsyncIterator[tuple[str, Any]]:
    """The run's stream (custom events, states, node updates): checkpointed on disk under
    --thread, else in memory only."""
    from activerag.page.record import STREAM_MODES

    if not getattr(args, "thread", None):
        async for item in graph.astream(given, context=ctx, stream_mode=STREAM_MODES):
            yield item
        return
    from activerag import durable

    path = Path(args.checkpoints) if args.checkpoints else settings.home / "threads.sqlite"
    async with durable.checkpoints(path) as saver:
        async for item in durable.stream(graph, given, ctx, saver, args.thread, STREAM_MODES,
                                         method=args.method):
            yield item


def demo(args: argparse.Namespace, settings: Settings) -> int:
    import asyncio

    from activerag.answers import extract_answer
    from activerag.demo import DEMO_CORPUS, load_demo_questions
    from activerag.evaluation.metrics import exact_match
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
        final = asyncio.run(answer(ns, settings))
        prediction = extract_answer(final.get("answer", ""))
        ok = exact_match(prediction, q["answers"]) == 1.0
        right += ok
        print(f"-> {'matches the gold' if ok else 'does NOT match the gold'} "
              f"(extracted {prediction!r}, gold {q['answers'][0]!r})")
    total = sum(len(g) for g in shown)
    print(f"\n{right} of {total} demo answers match the gold (the first {args.n} questions of "
          "each kind, whatever they come out as; README shows flare, single and none on all 48 "
          "demo questions)")
    return 0

"""Where a FLARE question's wall time goes, and FLARE's wall time over single-time retrieval's.

    python -m benchmarks.cost.breakdown [--n 20] [--offset 0] [--store DIR]
                                   [--out results/breakdown.md]

N 2Wiki questions, one at a time, through the evaluation harness's own path (each question a
checkpointed thread, `durable.final`, sticky to its replica), first with FLARE, then with
single-time retrieval (`method("single", ...)`), with the main table's settings (the paper's
exemplars with their BM25 documents, k=2, θ=0.8, β=0.4, 128 answer tokens, BM25 over the
2Wiki corpus). Each method's requests carry their own vLLM cache_salt, so neither reuses the
prompts the other computed, and one question outside the N warms each method's exemplar prefix
first, as in any run past its first question.

A question's wall time is split into
- LM prefill: from sending each request to its first token (queue, prefill, HTTP), as the
  client sees it;
- LM decode: from the first token to the last, less the client's own work on the chunks;
- LM stream end: from the last token to the closed stream (the usage chunk, or the abort of
  a stream cut at a sentence end);
- token handling: the client's work on each chunk (logprobs, the sentence cut);
- retrieval: every search the nodes make (`Parts.search`: the executor hop, LangChain's
  retriever, BM25), outside LM calls;
- checkpoints: SQLite reads and writes around every step (the harness's durable runs),
  outside the above (a step's writes overlap each other and are counted once);
- orchestration: the rest (LangGraph's scheduling and state, prompts, masking, the gate).
vLLM's /metrics has per-request prefill and decode histograms, but only for requests that
finish: a stream the client closes at a sentence end is aborted and recorded nowhere, so its
sums are shown apart, with how many requests they cover. LangGraph's own cost against a bare
loop of the same LM calls is benchmarks/cost/overhead.py's (results/overhead.md). The goal for the
wall-time ratio is FLARE / single ≤ 1.2 × (1 + retrieval rate), the rate being FLARE's share of
sentences that retrieved. Needs the server and the 2Wiki store. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from activerag import durable
from activerag.context import FlareContext
from activerag.evaluation.datasets import Example, load_dataset
from activerag.graphs.registry import method
from activerag.nodes.parts import Parts
from activerag.serving.replicas import sticky
from benchmarks.cost import serverprobe
from benchmarks.publish import publish

PARTS = ("lm_prefill", "lm_decode", "lm_stream_end", "token_handling", "retrieval",
         "checkpoints", "orchestration")
LABELS = {"lm_prefill": "LM prefill (request to first token)",
          "lm_decode": "LM decode (first to last token)",
          "lm_stream_end": "LM stream end (last token to closed stream)",
          "token_handling": "token handling in the client (logprobs, sentence cut)",
          "retrieval": "retrieval (Parts.search)",
          "checkpoints": "checkpoint writes (SQLite, every step)",
          "orchestration": "orchestration: LangGraph, prompts, masking, gate (the rest)"}
Interval = tuple[float, float]
_spans: ContextVar[dict[str, list[Interval]] | None] = ContextVar("breakdown_spans",
                                                                    default=None)


def _timed(name: str, fn: Any) -> Any:
    """An async method that adds its (start, end) to the current question's spans NAME."""

    async def wrapper(*args: Any, **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return await fn(*args, **kw)
        finally:
            spans = _spans.get()
            if spans is not None:
                spans.setdefault(name, []).append((start, time.perf_counter()))

    return wrapper


def covered(intervals: Sequence[Interval], outside: Sequence[Interval] = ()) -> float:
    """Seconds covered by INTERVALS (overlaps counted once) and not by OUTSIDE."""

    def union(spans: Sequence[Interval]) -> list[Interval]:
        out: list[Interval] = []
        for a, b in sorted(spans):
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        return out

    total = 0.0
    mask = union(outside)
    for a, b in union(intervals):
        total += b - a
        for c, d in mask:
            total -= max(0.0, min(b, d) - max(a, c))
    return total


def instrument() -> None:
    """Time retrieval and checkpoint writes, salt and time LM requests (see serverprobe)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    serverprobe.instrument()
    Parts.search = _timed("retrieval", Parts.search)  # type: ignore[method-assign]
    for name in ("aput", "aput_writes", "aget_tuple"):
        setattr(AsyncSqliteSaver, name, _timed("checkpoints", getattr(AsyncSqliteSaver, name)))


@contextmanager
def spans() -> Iterator[dict[str, list[Interval]]]:
    out: dict[str, list[Interval]] = {}
    token = _spans.set(out)
    try:
        yield out
    finally:
        _spans.reset(token)


async def question(graph: Any, ctx: Any, ex: Example, saver: Any, name: str) -> dict[str, Any]:
    """Run EX as the harness does; its wall time, parts, counters and trace."""
    calls: list[serverprobe.Call] = []
    given = {"question": ex.question}
    thread = f"{name}/{ex.id}"
    with spans() as timed, serverprobe.recording(calls), sticky(ex.id):
        start = time.perf_counter()
        out = await durable.final(graph, given, ctx, saver, thread)
        wall = time.perf_counter() - start
    await durable.forget(saver, thread)
    streamed = [(c.start, c.first, c.last or c.first) for c in calls if c.first is not None]
    prefill = sum(first - start for start, first, _ in streamed)
    handling = sum(c.handling for c in calls)
    decode = sum(last - first for _, first, last in streamed) - handling
    stream_end = sum(c.end - (c.last or c.start) for c in calls)
    lm = [(c.start, c.end) for c in calls]
    searches = timed.get("retrieval", [])
    parts = {"lm_prefill": prefill, "lm_decode": decode, "lm_stream_end": stream_end,
             "token_handling": handling, "retrieval": covered(searches, lm),
             "checkpoints": covered(timed.get("checkpoints", []), lm + searches)}
    parts["orchestration"] = wall - covered(lm + searches + timed.get("checkpoints", []))
    trace = out.get("trace", [])
    return {"wall": wall, **parts, "calls": len(calls), "lm_calls": out.get("lm_calls", 0),
            "generated_tokens": out.get("generated_tokens", 0),
            "prompt_tokens": out.get("prompt_tokens", 0), "sentences": len(trace),
            "retrieved": sum(1 for s in trace if s.get("retrieved")),
            "retrieval_steps": out.get("retrieval_steps", 0)}


async def run_method(name: str, ctx: FlareContext, examples: list[Example], warm: Example,
                     salt: str, folder: Path) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every example with method NAME, one at a time; rows and the server's /metrics delta."""
    graph, mctx = method(name, ctx)
    rows = []
    with serverprobe.salted(salt):
        async with durable.checkpoints(folder / f"{name}.sqlite") as saver:
            await question(graph, mctx, warm, saver, name)
            before = serverprobe.scrape(ctx.base_url)
            for ex in examples:
                rows.append(await question(graph, mctx, ex, saver, name))
                print(name, {k: round(v, 3) if isinstance(v, float) else v
                             for k, v in rows[-1].items()}, flush=True)
            server = serverprobe.delta(serverprobe.scrape(ctx.base_url), before)
    return rows, server


def mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(r[key] for r in rows)


def markdown(results: dict[str, tuple[list[dict[str, Any]], dict[str, float]]], note: str
             ) -> str:
    names = list(results)
    lines = ["### Where a question's wall time goes (benchmarks/cost/breakdown.py, one question "
             f"at a time, {len(results[names[0]][0])} 2Wiki questions)\n", note, "",
             "| part | " + " | ".join(f"{n}: s / question | {n}: share" for n in names) + " |",
             "|---" * (1 + 2 * len(names)) + "|"]
    walls = {n: mean(results[n][0], "wall") for n in names}
    lines.append("| wall | " + " | ".join(f"{walls[n]:.2f} | 100%" for n in names) + " |")
    for part in PARTS:
        cells = []
        for n in names:
            v = mean(results[n][0], part)
            cells.append(f"{v:.3f} | {v / walls[n]:.1%}")
        lines.append(f"| {LABELS[part]} | " + " | ".join(cells) + " |")
    for key, label in (("lm_calls", "LM calls"), ("prompt_tokens", "prompt tokens"),
                       ("generated_tokens", "generated tokens"),
                       ("retrieval_steps", "retrievals")):
        lines.append(f"| {label} per question | " + " | ".join(
            f"{mean(results[n][0], key):.1f} | -" for n in names) + " |")
    lines += ["", "vLLM's own histograms over the same requests (finished requests only: a "
              "stream closed at a sentence end is aborted and not recorded):", "",
              "| method | requests sent | recorded | prefill s (recorded) | decode s (recorded) "
              "| queue s (recorded) |", "|---|---|---|---|---|---|"]
    for n in names:
        rows, server = results[n]
        lines.append(
            f"| {n} | {sum(r['calls'] for r in rows)} | "
            f"{server.get('vllm:request_prefill_time_seconds_count', 0):.0f} | "
            f"{server.get('vllm:request_prefill_time_seconds_sum', 0):.2f} | "
            f"{server.get('vllm:request_decode_time_seconds_sum', 0):.2f} | "
            f"{server.get('vllm:request_queue_time_seconds_sum', 0):.2f} |")
    if "flare" in results and "single" in results:
        flare = results["flare"][0]
        rate = sum(r["retrieved"] for r in flare) / max(1, sum(r["sentences"] for r in flare))
        ratio = walls["flare"] / walls["single"]
        bound = 1.2 * (1 + rate)
        lines += ["", "| FLARE s / question | single s / question | FLARE / single | "
                  "retrieval rate | goal: ≤ 1.2 × (1 + rate) | met |", "|---|---|---|---|---|---|",
                  f"| {walls['flare']:.2f} | {walls['single']:.2f} | {ratio:.2f} | {rate:.3f} | "
                  f"{bound:.2f} | {'yes' if ratio <= bound else 'no'} |"]
    lines += ["", "LangGraph's own cost against a bare loop of the same LM calls: "
              "benchmarks/cost/overhead.py, results/overhead.md."]
    return "\n".join(lines) + "\n"


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--offset", type=int, default=0, help="first question (file order)")
    p.add_argument("--methods", default="flare,single")
    p.add_argument("--max-answer-tokens", type=int, default=128)
    p.add_argument("--store", default=None, help="default: $ACTIVERAG_HOME/store-2wiki")
    p.add_argument("--out", default="results/breakdown.md")
    args = p.parse_args()
    ctx, engine = serverprobe.flare_on_2wiki(args.store, args.max_answer_tokens)
    instrument()
    data = load_dataset("2wiki")
    examples, warm = data[args.offset: args.offset + args.n], data[-1]
    stamp = f"{os.getpid()}-{time.time_ns()}"
    load = os.getloadavg()[0]
    results = {}
    with tempfile.TemporaryDirectory(prefix="breakdown-") as tmp:
        for name in [m.strip() for m in args.methods.split(",") if m.strip()]:
            results[name] = await run_method(name, ctx, examples, warm, f"bd-{stamp}-{name}",
                                             Path(tmp))
    note = (f"2Wiki dev from #{args.offset} (file order), each method with its own vLLM "
            "cache_salt and its exemplar prefix warmed by one question outside the set; the "
            f"paper's exemplars, k=2, θ=0.8, {args.max_answer_tokens} answer tokens, BM25 over "
            f"{Path(ctx.store_dir).name} ({engine.split(':')[0]}); server {ctx.base_url}, "
            f"{os.cpu_count()} CPU cores, load average {load:.1f} at the start. Times are means "
            "per question; LM parts as the client sees each streamed request.")
    publish(markdown(results, note), args.out)


if __name__ == "__main__":
    asyncio.run(main())

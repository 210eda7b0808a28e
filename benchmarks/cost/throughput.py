"""LM throughput of the evaluation harness: FLARE on 2Wiki at several concurrencies in one run.

    python -m benchmarks.cost.throughput [--n 48] [--levels 1 4 8 16] [--bare-streams 1 4 8 16]
                                    [--bare-requests 6] [--store DIR] [--out results/throughput.md]

Each level runs the same N 2Wiki questions through `activerag.evaluation.evaluate.evaluate` (what
`activerag eval` runs: durable checkpoints, sticky replicas, no LM cache) with FLARE and the
main table's settings (the paper's exemplars with their BM25 documents, k=2, θ=0.8, β=0.4,
128 answer tokens, BM25 over the 2Wiki corpus), CONCURRENCY questions at a time. Levels are
made comparable with vLLM's cache_salt: every request of a level carries the level's own salt,
so the prefix cache serves a level only from that level's requests (the same questions, so the
same work, and nothing computed by an earlier level is reused). Before each level is timed, one
question outside the N runs with its salt, so the exemplars' prefix (shared by every question)
is cached as it would be in any run past its first question.

Reported per level: questions per minute and speed-up over concurrency 1, over the whole run
and in the steady part (from the CONCURRENCY-th finished question to the one after which fewer
than CONCURRENCY remain: every slot busy, without the first wave's bunching or the last wave's
stragglers); LM calls and generated tokens per second; the mean number of LM requests the
harness keeps open (the sum of its requests' durations over the wall time: a harness that keeps
the server busy keeps it near the concurrency) and the requests vLLM reports running (polled
from /metrics every 2 s); the prefix-cache hit rate; the machine's CPU use and the harness
process's CPU seconds per question.

The reference is the bare server: STREAMS parallel loops of completion requests sent straight
to it, each with FLARE's mean prompt length (at concurrency 1), the same share of it cached
(one prefix shared by every request, as FLARE's exemplars are), and exactly FLARE's mean
generated tokens per call; the speed-up of 8 streams over 1 is what
the harness could at best reach at concurrency 8 (and likewise for the other stream counts).
Needs the server (`activerag serve`) and the 2Wiki store (`activerag ingest
.../hipporag_2wikimultihopqa_corpus.json --store DIR`). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from activerag.evaluation import evaluate
from activerag.evaluation.datasets import Example, load_dataset
from activerag.serving.running import server_models
from benchmarks.cost import serverprobe
from benchmarks.publish import publish


class TimedRun(evaluate.Run):
    """A run folder that notes when each row is kept (a question finished)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.finished: list[float] = []

    def append(self, row: dict[str, Any]) -> None:
        super().append(row)
        self.finished.append(time.perf_counter())


def steady_rate(finished: list[float], concurrency: int) -> float | None:
    """Questions per minute between the CONCURRENCY-th finished question and the one after
    which fewer than CONCURRENCY remain (every slot busy, the first wave's bunching past);
    None when too few questions finish in between."""
    times = sorted(finished)
    first, last = concurrency - 1, len(times) - concurrency - 1
    if last - first < max(2, concurrency // 2):
        return None
    return 60 * (last - first) / (times[last] - times[first])


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


async def level(runs: dict[str, Any], examples: list[Example], warm: Example, concurrency: int,
                salt: str, base_url: str, folder: Path) -> dict[str, Any]:
    """Time one concurrency level (see the module); returns its row."""
    with serverprobe.salted(salt):
        await evaluate.evaluate(evaluate.Run(folder / f"warm-c{concurrency}"), "2wiki", runs,
                                [warm], concurrency=1, progress=False)
        before = serverprobe.scrape(base_url)
        busy0, total0 = cpu_ticks()
        cpu0 = time.process_time()
        start = time.perf_counter()
        calls: list[serverprobe.Call] = []
        run = TimedRun(folder / f"c{concurrency}")
        with serverprobe.Occupancy(base_url) as occupancy, serverprobe.recording(calls):
            result = await evaluate.evaluate(run, "2wiki", runs, examples,
                                             concurrency=concurrency, progress=False)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0 - occupancy.cpu
        busy1, total1 = cpu_ticks()
        server = serverprobe.delta(serverprobe.scrape(base_url), before)
    s = result["summary"]["flare"]
    n = s["n"]
    queries = server.get("vllm:prefix_cache_queries_total", 0.0)
    steady = steady_rate(run.finished, concurrency)
    return {"concurrency": concurrency, "n": n, "wall_s": wall, "q_per_min": 60 * n / wall,
            "steady_q_per_min": steady,
            "lm_calls": s["lm_calls"], "prompt_tokens": s["prompt_tokens"],
            "generated_tokens": s["generated_tokens"],
            "gen_tok_per_s": s["generated_tokens"] / wall,
            "server_gen_tokens": server.get("vllm:generation_tokens_total", 0.0),
            "in_flight": sum(c.end - c.start for c in calls) / wall,
            "mean_running": occupancy.mean_running,
            "max_waiting": max(occupancy.waiting, default=float("nan")),
            "prefix_hit_rate": server.get("vllm:prefix_cache_hits_total", 0.0) / queries
            if queries else float("nan"),
            "cpu_busy": (busy1 - busy0) / max(1, total1 - total0),
            "client_cpu_s_per_q": cpu / n, "em": s.get("em", float("nan")),
            "retrieval_rate": s["retrieval_rate"]}


def markdown(rows: list[dict[str, Any]], bare: list[dict[str, Any]], args: argparse.Namespace,
             note: str) -> str:
    base, steady_base = rows[0]["q_per_min"], rows[0]["steady_q_per_min"]

    def steady(r: dict[str, Any]) -> str:
        q = r["steady_q_per_min"]
        if q is None:
            return "- | -"
        return f"{q:.2f} | " + (f"{q / steady_base:.2f}x" if steady_base else "-")

    lines = [f"### FLARE through the evaluation harness at several concurrencies "
             f"(benchmarks/cost/throughput.py, {rows[0]['n']} 2Wiki questions per level)\n",
             note, "",
             "| concurrency | questions | wall s | questions / min | speed-up over 1 | "
             "steady questions / min | steady speed-up | "
             "LM calls / q | generated tok / s | LM requests open (harness) | "
             "running on server (polled) | max waiting | prefix-cache hits | "
             "CPU busy (all cores) | harness CPU s / q | EM |",
             "|---" * 16 + "|"]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['n']} | {r['wall_s']:.1f} | {r['q_per_min']:.2f} | "
            f"{r['q_per_min'] / base:.2f}x | {steady(r)} | {r['lm_calls'] / r['n']:.2f} | "
            f"{r['gen_tok_per_s']:.1f} | {r['in_flight']:.2f} | {r['mean_running']:.1f} | "
            f"{r['max_waiting']:.0f} | "
            f"{r['prefix_hit_rate']:.1%} | {r['cpu_busy']:.0%} | "
            f"{r['client_cpu_s_per_q']:.2f} | {r['em']:.3f} |")
    if bare:
        one = bare[0]["tok_per_s"]
        lines += ["", f"**The bare server** (the reference): parallel streams of "
                  f"{args.bare_requests} completions each, prompts of {bare[0]['prompt']} "
                  f"tokens ({bare[0]['shared']} of them a cached prefix shared by all), "
                  f"{bare[0]['gen']} tokens "
                  "generated each (FLARE's means per call at concurrency 1)\n",
                  "| streams | requests | wall s | generated tok / s | speed-up over 1 stream |",
                  "|---|---|---|---|---|"]
        for b in bare:
            lines.append(f"| {b['streams']} | {b['requests']} | {b['wall_s']:.1f} | "
                         f"{b['tok_per_s']:.1f} | {b['tok_per_s'] / one:.2f}x |")
    return "\n".join(lines) + "\n"


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=48, help="questions per level")
    p.add_argument("--offset", type=int, default=0, help="first question (file order)")
    p.add_argument("--levels", type=int, nargs="+", default=[1, 4, 8, 16])
    p.add_argument("--bare-streams", type=int, nargs="*", default=[1, 4, 8, 16])
    p.add_argument("--bare-requests", type=int, default=6)
    p.add_argument("--max-answer-tokens", type=int, default=128)
    p.add_argument("--store", default=None, help="default: $ACTIVERAG_HOME/store-2wiki")
    p.add_argument("--out", default="results/throughput.md")
    args = p.parse_args()
    ctx, engine = serverprobe.flare_on_2wiki(args.store, args.max_answer_tokens)
    serverprobe.instrument()
    runs = evaluate.method_runs(["flare"], ctx)
    data = load_dataset("2wiki")
    examples = data[args.offset: args.offset + args.n]
    warm = data[-1]
    stamp = f"{os.getpid()}-{time.time_ns()}"
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        for c in args.levels:
            row = await level(runs, examples, warm, c, f"tp-{stamp}-c{c}", ctx.base_url,
                              Path(tmp))
            rows.append(row)
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
                  flush=True)
    first = rows[0]
    prompt = round(first["prompt_tokens"] / first["lm_calls"])
    gen = max(1, round(first["generated_tokens"] / first["lm_calls"]))
    hit = 0.0 if math.isnan(first["prefix_hit_rate"]) else first["prefix_hit_rate"]
    shared = int(prompt * hit)
    model = ctx.model or server_models(ctx.base_url)[0]
    bare = []
    for streams in args.bare_streams:
        wall, tokens = await serverprobe.bare_streams(ctx.base_url, model, streams,
                                                      args.bare_requests, prompt, shared, gen,
                                                      seed=streams)
        bare.append({"streams": streams, "requests": streams * args.bare_requests,
                     "wall_s": wall, "tok_per_s": tokens / wall, "prompt": prompt,
                     "shared": shared, "gen": gen})
        print(bare[-1], flush=True)
    note = (f"Same questions at every level (2Wiki dev from #{args.offset}, file order), each "
            "level with its own vLLM cache_salt and its exemplar prefix warmed by one question "
            f"outside the set; FLARE with the paper's exemplars, k=2, θ=0.8, "
            f"{args.max_answer_tokens} answer tokens, BM25 over {Path(ctx.store_dir).name} "
            f"({engine.split(':')[0]}); server "
            f"{ctx.base_url}, {os.cpu_count()} CPU cores, load average {load:.1f} at the "
            "start. Steady: from the c-th finished question to the one after which fewer than c "
            "remain. LM requests open: the harness's LM request seconds over the wall time (the "
            "mean number it keeps open); running on server: vLLM's num_requests_running, "
            "polled every 2 s; harness CPU: this process's CPU seconds (all threads) less the "
            "polling's.")
    publish(markdown(rows, bare, args, note), args.out)


if __name__ == "__main__":
    asyncio.run(main())

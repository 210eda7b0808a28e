"""vLLM against llama.cpp on this machine: the server's own speeds, then FLARE and single on the
demo set, for each catalogue model on each engine that can run it.

    python -m benchmarks.cost.engines [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b]
        [--engines llama.cpp,vllm] [--n 48] [--levels 1 4] [--demo-on ...] [--store DIR]
        [--include results/engines-05b.json ...] [--out results/engines.md]

Per (model, engine), one server at a time on a port of its own, the machine otherwise quiet:
- ready: seconds from the start command to the first answered request (a vLLM model is
  converted before the clock starts; llama.cpp's server is built before it);
- memory: the server's resident memory (its process group's RSS) after the speed requests;
- cold prefill: a ChatML prompt of demo passages (about 2,500 tokens, a fresh first line so
  nothing of it is cached), tokens per second; cached request: the same prompt again, one
  token, seconds; decode: 128 more tokens of it (EOS ignored) over the cached one-token time,
  tokens per second; all with logprobs: 5, as the methods ask.
Then, where --demo-on names the pair, single and FLARE on the first N demo questions (no LM
cache) at each concurrency level: seconds per question (wall time over N), EM by kind with 95%
bootstrap intervals, and FLARE's wall time over single's against the goal 1.2 x (1 + FLARE's
retrieval rate), and FLARE's generated tokens per token kept in its answers against the goal
1 + rate + 0.1. Engines are compared paired on each question's EM and greedy answer, at the
lowest concurrency both ran; --include adds an earlier run's JSON to the report and the pairing
without running it again. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from activerag.cli import main as cli
from activerag.demo import DEMO_CORPUS
from activerag.evaluation.stats import bootstrap_ci, paired_permutation_p
from activerag.evaluation.summaries import summarise
from activerag.nodes.prompts import render
from activerag.serving import server
from activerag.serving.catalogue import catalogue_model
from activerag.settings import Settings
from activerag.testing.dev_server import free_port
from activerag.testing.processes import group_alive, server_pgid

DECODE = 128


def long_prompt(words: int = 1700) -> str:
    """A ChatML prompt of demo passages, about 2,500 tokens, opened by a fresh line."""
    texts = [json.loads(line)["text"] for line in DEMO_CORPUS.read_text().splitlines()]
    body, n = [], 0
    for text in texts:
        body.append(text)
        n += len(text.split())
        if n >= words:
            break
    system = f"Request {uuid.uuid4().hex}. Read the passages and answer."
    return render("chatml", system, [("\n".join(body) + "\nQuestion: Who founded Zaezum Works?",
                                       "")], "")


def post(url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    resp = httpx.post(url + "/completions", json=body, timeout=1800)
    resp.raise_for_status()
    return time.perf_counter() - start, resp.json()


def rss_gb(pgid: int | None) -> float:
    """Resident memory of process group PGID, in GB."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            if pgid is not None and int(fields[2]) == pgid:
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def speeds(url: str, model: str) -> dict[str, float]:
    prompt = long_prompt()
    base = {"model": model, "prompt": prompt, "temperature": 0.0, "logprobs": 5}
    cold, out = post(url, {**base, "max_tokens": 1})
    tokens = out["usage"]["prompt_tokens"]
    cached, _ = post(url, {**base, "max_tokens": 1})
    decoded, _ = post(url, {**base, "max_tokens": 1 + DECODE, "ignore_eos": True})
    return {"prompt_tokens": tokens, "cold_prefill_tok_s": tokens / cold,
            "cached_request_s": cached, "decode_tok_s": DECODE / max(decoded - cached, 1e-9)}


def demo(url: str, store: Path, n: int, level: int, out: Path) -> dict[str, Any]:
    """single and FLARE, each on its own over the first N demo questions at LEVEL."""
    found: dict[str, Any] = {}
    for name in ("single", "flare"):
        run = out / f"{name}-c{level}"
        start = time.perf_counter()
        cli(["eval", "--dataset", "demo", "--methods", name, "--n", str(n), "--concurrency",
             str(level), "--base-url", url, "--store", str(store), "--run", str(run)])
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()]
        summary = json.loads((run / "summary.json").read_text())["summary"][name]
        found[name] = {"s_per_question": wall / n, "retrieval_rate": summary["retrieval_rate"],
                       "rows": {r["id"]: r for r in rows}}
    return found


def by_kind(rows: dict[str, dict[str, Any]]) -> str:
    cells = []
    for kind in ("one-hop", "two-hop"):
        em = [float(r["em"]) for r in rows.values() if r.get("group") == kind]
        if not em:  # the first N questions may all be of one kind
            cells.append("- (n=0)")
            continue
        low, high = bootstrap_ci(em)
        cells.append(f"{sum(em) / len(em):.3f} [{low:.3f}, {high:.3f}] (n={len(em)})")
    return " | ".join(cells)


def serve_and_measure(key: str, engine: str, args: argparse.Namespace,
                      out: Path) -> dict[str, Any]:
    model = catalogue_model(key)
    settings = Settings.from_env().model_copy(update={"port": free_port("127.0.0.1"),
                                                      "base_url": None})
    if engine == "vllm":
        server.prepare_model(settings, model)
    launch = server.Launch(engine, parallel=max(args.levels))
    start = time.perf_counter()
    url = server.start_server(settings, model=model, launch=launch)
    result: dict[str, Any] = {"model": key, "engine": engine,
                              "ready_s": time.perf_counter() - start}
    try:
        result.update(speeds(url, model.served_name))
        result["memory_gb"] = rss_gb(server_pgid(settings))
        print(json.dumps({k: v for k, v in result.items()}), flush=True)
        if f"{key}:{engine}" in args.demo_on:
            result["demo"] = {level: demo(url, args.store, args.n, level,
                                          out / f"{key}-{engine}") for level in args.levels}
    finally:
        pgid = server_pgid(settings)
        server.stop_server(settings)
        while pgid is not None and group_alive(pgid):
            time.sleep(0.5)
    return result


def work(found: dict[str, Any]) -> str:
    """What FLARE asked of the LM a question against single: the goal's 1 + rate counts the
    generated tokens, not the calls each of which pays its own request and prefill."""
    def mean(name: str, key: str) -> float:
        rows = found[name]["rows"].values()
        return sum(float(r[key]) for r in rows) / max(len(rows), 1)

    tokens = mean("flare", "generated_tokens") / max(mean("single", "generated_tokens"), 1e-9)
    return (f"FLARE generated {tokens:.2f}x single's tokens in {mean('flare', 'lm_calls'):.2f} "
            f"LM calls a question against {mean('single', 'lm_calls'):.2f}")


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    lines = ["# vLLM and llama.cpp on this machine", "",
             f"`python -m benchmarks.cost.engines {shlex.join(args.argv)}`; one server at a "
             "time.", "",
             "| model | engine | ready | memory | cold prefill | cached request | decode |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['model']} | {r['engine']} | {r['ready_s']:.1f} s | "
                     f"{r['memory_gb']:.1f} GB | {r['cold_prefill_tok_s']:.0f} tok/s "
                     f"({r['prompt_tokens']} tokens) | {r['cached_request_s']:.2f} s | "
                     f"{r['decode_tok_s']:.1f} tok/s |")
    notes = [f"- {r['model']} on {r['engine']}: {r['note']}" for r in results if r.get("note")]
    lines += ["", *notes] if notes else []
    lines += ["", "## Single and FLARE on the first demo questions (no LM cache; n per cell)", "",
              "| model | engine | concurrency | method | s/question | EM one-hop | EM two-hop |",
              "|---|---|---|---|---|---|---|"]
    ratios = []
    for r in results:
        for level, found in (r.get("demo") or {}).items():
            for name in ("single", "flare"):
                f = found[name]
                lines.append(f"| {r['model']} | {r['engine']} | {level} | {name} | "
                             f"{f['s_per_question']:.2f} | {by_kind(f['rows'])} |")
            rate = found["flare"]["retrieval_rate"]
            ratio = found["flare"]["s_per_question"] / found["single"]["s_per_question"]
            goal = 1.2 * (1 + rate)
            per_kept = summarise(list(found["flare"]["rows"].values()))[
                "generated_per_kept_token"]
            kept_goal = 1 + rate + 0.1
            ratios.append(f"- {r['model']} on {r['engine']}, concurrency {level}: FLARE's wall "
                          f"time {ratio:.2f}x single's at retrieval rate {rate:.2f}; goal "
                          f"<= {goal:.2f}: {'met' if ratio <= goal else 'missed'}; "
                          f"{per_kept:.2f} generated tokens per kept token, goal <= "
                          f"{kept_goal:.2f}: {'met' if per_kept <= kept_goal else 'missed'}"
                          f"; {60 / found['flare']['s_per_question']:.1f} FLARE questions a "
                          f"minute; {work(found)}")
    lines += ["", *ratios, ""]
    paired = [(a, b) for a in results for b in results
              if a["model"] == b["model"] and a["engine"] == "vllm" and b["engine"] == "llama.cpp"
              and a.get("demo") and b.get("demo")]
    for a, b in paired:
        level = min(set(a["demo"]) & set(b["demo"]), default=None)
        if level is None:
            continue
        for name in ("single", "flare"):
            ra = a["demo"][level][name]["rows"]
            rb = b["demo"][level][name]["rows"]
            ids = sorted(set(ra) & set(rb))
            ea, eb = [float(ra[i]["em"]) for i in ids], [float(rb[i]["em"]) for i in ids]
            same = sum(ra[i]["answer"] == rb[i]["answer"] for i in ids)
            lines.append(f"- {a['model']} {name}, concurrency {level}: EM llama.cpp - vLLM "
                         f"{(sum(eb) - sum(ea)) / len(ids):+.3f} (paired p "
                         f"{paired_permutation_p(eb, ea):.2f}); the same greedy answer on {same} "
                         f"of {len(ids)} questions")
    return lines


def load(path: Path) -> list[dict[str, Any]]:
    """An earlier run's JSON in the shape serve_and_measure returns."""
    results = json.loads(path.read_text())
    for r in results:
        r["demo"] = {int(level): {m: f | {"rows": {row["id"]: row for row in f["rows"]}}
                                  for m, f in found.items()}
                     for level, found in (r.get("demo") or {}).items()}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b",
                        help="catalogue models to run ('' for none: report --include only)")
    parser.add_argument("--engines", default="llama.cpp,vllm")
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--demo-on", default="qwen2.5-coder-0.5b:llama.cpp,"
                        "qwen2.5-coder-0.5b:vllm,qwen2.5-coder-1.5b:llama.cpp",
                        help="MODEL:ENGINE pairs that also run the demo set")
    parser.add_argument("--store", type=Path, help="a store holding the demo corpus "
                        "(default: a fresh one)")
    parser.add_argument("--runs", type=Path, help="keep the demo runs' folders here "
                        "(default: a temporary folder)")
    parser.add_argument("--include", type=Path, nargs="*", default=[],
                        help="earlier runs' JSON to report beside this run's (not re-run; of "
                        "two rows for one model and engine, the later file's)")
    parser.add_argument("--out", type=Path, default=Path("results/engines.md"))
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        if args.store is None and args.models:
            args.store = Path(tmp) / "store"
            cli(["ingest", "--demo", "--store", str(args.store)])
        results = [serve_and_measure(key, engine, args, args.runs or Path(tmp) / "runs")
                   for key in filter(None, args.models.split(","))
                   for engine in args.engines.split(",")]
    ran = {(r["model"], r["engine"]) for r in results}
    earlier = {(r["model"], r["engine"]): r for path in args.include for r in load(path)}
    results += [r for key, r in earlier.items() if key not in ran]  # a later file's row wins
    lines = report(results, args)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(
        [{k: v for k, v in r.items() if k != "demo"} | {"demo": {
            str(level): {m: {k: v for k, v in f.items() if k != "rows"} | {
                "rows": list(f["rows"].values())} for m, f in found.items()}
            for level, found in (r.get("demo") or {}).items()}} for r in results], indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

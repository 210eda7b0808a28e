"""BM25 at scale: the bm25s index against rank-bm25 (the reference), on real and synthetic corpora.

    python -m benchmarks.cost.retrieval [--sizes 32000 100000 1000000] [--reference-max 100000]
                                   [--queries 200] [--skip-real]

Real: the 2Wiki corpus (7,611 passages) and the shared union corpus (32,140 paragraphs, 39,629
passages), searched with 2Wiki questions: top-10 agreement of the two engines (identical id
lists), index build and open times, p50/p95 query latency. Synthetic: passages of 40-80 words
drawn from a Zipfian vocabulary of 50,000 words (s = 1.1), queries of 3-8 words from the same
law, at each size: build and open times, latency, resident memory after opening; rank-bm25 in
the same run up to --reference-max passages (above it, its in-memory index of one dict per
passage takes minutes and gigabytes). Prints one Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.documents import Document

from activerag.evaluation.datasets import load_dataset, shared_data
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import read_corpus

REAL = {"2wiki": "2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json",
        "union": "corpus/union_wiki_paragraphs_dpr_format.tsv"}


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentiles(seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return f"{statistics.median(ms):.1f} / {ms[int(0.95 * (len(ms) - 1))]:.1f}"


def timed_searches(store: BM25Store, queries: list[str], k: int = 10) -> tuple[list, list]:
    results, seconds = [], []
    for q in queries:
        start = time.perf_counter()
        results.append([d.id for d, _ in store.search(q, k)])
        seconds.append(time.perf_counter() - start)
    return results, seconds


def synthetic(n: int, rng: np.random.Generator) -> list[Document]:
    vocab = [f"w{i}" for i in range(50_000)]
    ranks = np.arange(1, len(vocab) + 1)
    p = ranks ** -1.1
    p /= p.sum()
    lengths = rng.integers(40, 81, size=n)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    docs, at = [], 0
    for i, length in enumerate(lengths):
        text = " ".join(vocab[w] for w in words[at:at + length])
        at += length
        docs.append(Document(page_content=text, id=f"s{i}", metadata={"title": f"t{i}"}))
    return docs


def synthetic_queries(count: int, rng: np.random.Generator) -> list[str]:
    ranks = np.arange(1, 50_001)
    p = ranks ** -1.1
    p /= p.sum()
    return [" ".join(f"w{w}" for w in rng.choice(50_000, size=int(rng.integers(3, 9)), p=p))
            for _ in range(count)]


def measure(name: str, docs: list[Document], queries: list[str], reference: bool) -> dict:
    row: dict = {"corpus": name, "passages": len(docs)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        store = BM25Store(path)
        store.add(docs)
        start = time.perf_counter()
        store.build_index()
        row["build_s"] = time.perf_counter() - start
        del store
        gc.collect()
        before = rss_mb()
        start = time.perf_counter()
        opened = BM25Store(path)
        row["open_s"] = time.perf_counter() - start
        fast, seconds = timed_searches(opened, queries)
        row["rss_mb"] = rss_mb() - before
        row["latency_ms"] = percentiles(seconds)
        del opened
        gc.collect()
        if reference:
            (path / "bm25s" / "activerag.json").unlink()  # the store then opens as before
            start = time.perf_counter()
            slow_store = BM25Store(path)
            slow_store.search("warm up", 1)  # rank-bm25 builds its index on the first search
            row["ref_open_s"] = time.perf_counter() - start
            slow, seconds = timed_searches(slow_store, queries)
            row["ref_latency_ms"] = percentiles(seconds)
            row["identical_top10"] = sum(a == b for a, b in zip(fast, slow, strict=True)) / len(
                queries)
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[32_000, 100_000, 1_000_000])
    p.add_argument("--reference-max", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--skip-real", action="store_true")
    args = p.parse_args()
    rows = []
    if not args.skip_real:
        questions = [e.question for e in load_dataset("2wiki", args.queries)]
        for name, rel in REAL.items():
            docs = list(read_corpus(shared_data() / rel))
            rows.append(measure(name, docs, questions, reference=True))
    rng = np.random.default_rng(0)
    random.seed(0)
    queries = synthetic_queries(args.queries, rng)
    for n in args.sizes:
        rows.append(measure(f"zipf-{n}", synthetic(n, rng), queries,
                            reference=n <= args.reference_max))
    print("\n| corpus | passages | index build s | open s | p50 / p95 ms | RSS after open MB | "
          "rank-bm25 open s | rank-bm25 p50 / p95 ms | identical top-10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['corpus']} | {r['passages']:,} | {r['build_s']:.1f} | {r['open_s']:.2f} | "
              f"{r['latency_ms']} | {r['rss_mb']:.0f} | {r.get('ref_open_s', float('nan')):.1f} | "
              f"{r.get('ref_latency_ms', '-')} | "
              f"{r.get('identical_top10', float('nan')):.3f} |")


if __name__ == "__main__":
    main()

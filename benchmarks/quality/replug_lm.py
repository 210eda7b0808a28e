"""REPLUG as a language model (Table 1 and Figure 4 in shape): bits per byte of held-out text.

    python -m benchmarks.quality.replug_lm --store STORE [--n 40] [--out runs/replug-lm]
        [--dense] [--query-encoder DIR]

Each of N seeded corpus passages of 60 words or more is cut in half: the first half x is the
query and the context, the second half y is scored. No retrieval scores y after x alone;
REPLUG scores it by Eq. 2 over the top k BM25 documents for x (documents of the passage's own
title excluded, as §5.2 avoids trivial retrieval), each document prepended to x; the random
ablation ensembles 10 random passages with uniform weights. --dense adds REPLUG over the Chroma
store's MiniLM top 10 and --query-encoder REPLUG-LSR's (a query tower trained by `activerag
train-retriever --task lm`, on passages none of whose titles is evaluated here: an encoder
whose training pool holds any passage of this --n and --seed is refused). Prints each
setting's BPB as Table 1 counts it, the bits of all passages over all their bytes, with a 95%
bootstrap interval and a paired p against no retrieval, and beside it the mean of the
passages' own ratios; writes a table and a plot. Needs a running server (`activerag serve`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path
from typing import Any

from activerag.evaluation.bpb import summarise_bpb
from activerag.lsr import LMSplit, check_held_out, halves
from activerag.nodes.replug.logic import bits_per_byte
from activerag.nodes.replug.steps import ensemble_logprobs, weights_of
from activerag.serving.token_lm import VLLMTokens
from activerag.settings import Settings
from activerag.stores.corpus import Corpus

KS = (1, 2, 5, 10)


def _others(found, title: str, k: int):  # type: ignore[no-untyped-def]
    """The first K hits whose title is not the passage's own, each carrying its score."""
    kept = [(d, s) for d, s in found if d.metadata.get("title") != title][:k]
    return [d.model_copy(update={"metadata": {**d.metadata, "score": s}}) for d, s in kept]


async def _replug_bpb(lm: VLLMTokens, docs, x: str, y: str, y_ids, kind: str) -> float:  # type: ignore[no-untyped-def]
    prompts = await asyncio.gather(*[lm.tokenize(f"{d.page_content}\n\n{x}") for d in docs])
    return bits_per_byte(await ensemble_logprobs(lm, prompts, weights_of(docs, kind), y_ids),
                         " " + y)


async def passage_bpb(lm: VLLMTokens, corpus: Corpus, text: str, title: str,
                      rng: random.Random, dense: dict | None = None) -> dict[str, Any]:
    """The UTF-8 bytes of the passage's second half as scored, and its bits per byte under
    each setting."""
    x, y = halves(text)
    y_ids = await lm.tokenize(" " + y)
    out = {"none": bits_per_byte(await lm.score(await lm.tokenize(x), y_ids), " " + y)}
    docs = _others(corpus.bm25.search(x, max(KS) + 20), title, max(KS))
    for k in KS:
        out[f"replug k={k}"] = await _replug_bpb(lm, docs[:k], x, y, y_ids, "bm25")
    for name, search in (dense or {}).items():  # dense retrievers: k = 10
        found = await asyncio.to_thread(search, x, max(KS) + 20)
        out[name] = await _replug_bpb(lm, _others(found, title, max(KS)), x, y, y_ids, "chroma")
    others = [d for d in rng.sample(corpus.bm25.docs, 30) if d.metadata.get("title") != title]
    random_prompts = await asyncio.gather(*[lm.tokenize(f"{d.page_content}\n\n{x}")
                                            for d in others[:10]])
    logprobs = await ensemble_logprobs(lm, random_prompts, [0.1] * 10, y_ids)
    out["random k=10"] = bits_per_byte(logprobs, " " + y)
    return {"bytes": len((" " + y).encode("utf-8")), "bpb": out}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True)
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--out", default="runs/replug-lm")
    p.add_argument("--base-url", action="append",
                   help="a server serving the same model (repeat to spread the passages)")
    p.add_argument("--dense", action="store_true",
                   help="also REPLUG over the Chroma store's MiniLM top 10")
    p.add_argument("--query-encoder", help="also REPLUG-LSR: the top 10 by this trained query "
                                           "encoder (activerag train-retriever --task lm)")
    args = p.parse_args()
    settings = Settings.from_env()
    from activerag.serving.lm import VLLMClient

    urls = args.base_url or [settings.url]
    model = VLLMClient(urls[0]).model
    lms = [VLLMTokens(url, model) for url in urls]  # passage i goes to server i mod n
    corpus = Corpus(Path(args.store))
    picked = LMSplit(args.n, args.seed).of(corpus.bm25.docs)[0]
    if args.query_encoder:
        check_held_out(Path(args.query_encoder), picked, corpus.bm25.docs)
    dense = {}
    if args.dense or args.query_encoder:
        dense["replug MiniLM k=10"] = corpus.chroma.search
    if args.query_encoder:
        dense["replug-LSR k=10"] = corpus.encoded(args.query_encoder).search
    sem = asyncio.Semaphore(args.concurrency)

    async def one(i: int) -> dict[str, Any]:
        async with sem:
            doc = picked[i]
            result = await passage_bpb(lms[i % len(lms)], corpus, doc.page_content,
                                       doc.metadata.get("title", ""), random.Random(i), dense)
            print(f"{i + 1}/{len(picked)}", flush=True)
            return {"id": doc.id, **result}

    rows = await asyncio.gather(*[one(i) for i in range(len(picked))])
    summary = summarise_bpb(rows)
    lines = [f"### REPLUG as a language model: bits per byte of the second half of {len(rows)} "
             f"passages given the first ({model}; BM25 over {args.store}; the bits of all "
             "passages over all their bytes as in REPLUG's Table 1, 95% bootstrap interval over "
             "passages, "
             "paired p of the passages' bits against no retrieval; beside it, the mean of "
             "the passages' own ratios)", "",
             "| setting | bits per byte | p vs none | mean of per-passage BPB |",
             "|---|---|---|---|"]
    for name, s in summary.items():
        (low, high), (m_low, m_high) = s["ci"], s["mean_passage_ci"]
        pval = "-" if s["p"] is None else f"{s['p']:.3f}"
        lines.append(f"| {name} | {s['bpb']:.4f} [{low:.4f}, {high:.4f}] | {pval} | "
                     f"{s['mean_passage_bpb']:.4f} [{m_low:.4f}, {m_high:.4f}] |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "replug-lm.md").write_text("\n".join(lines) + "\n")
    (out / "replug-lm.json").write_text(json.dumps(summary, indent=1))
    # per passage (id, bytes, bits per byte of each setting), for paired tests of any two
    (out / "passages.json").write_text(json.dumps(rows, indent=1))
    plot(summary, out / "replug-lm.png", len(rows), model)
    print("\n".join(lines))


def plot(summary: dict, path: Path, n: int, model: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ks = list(KS)
    bpb = [summary[f"replug k={k}"]["bpb"] for k in ks]
    err = [[b - summary[f"replug k={k}"]["ci"][0] for k, b in zip(ks, bpb, strict=True)],
           [summary[f"replug k={k}"]["ci"][1] - b for k, b in zip(ks, bpb, strict=True)]]
    ax.errorbar(ks, bpb, yerr=err, marker="o", capsize=3, label="REPLUG (BM25 documents)")
    for name, marker in (("replug MiniLM k=10", "s"), ("replug-LSR k=10", "D")):
        if name in summary:
            ax.errorbar([10], [summary[name]["bpb"]], marker=marker, linestyle="none", capsize=3,
                        yerr=[[summary[name]["bpb"] - summary[name]["ci"][0]],
                              [summary[name]["ci"][1] - summary[name]["bpb"]]],
                        label=f"{name.removesuffix(' k=10')} ({summary[name]['bpb']:.3f})")
    for name, style in (("none", "--"), ("random k=10", ":")):
        ax.axhline(summary[name]["bpb"], linestyle=style, color="gray" if name == "none"
                   else "tab:red", label=f"{name} ({summary[name]['bpb']:.3f})")
    ax.set_xlabel("documents ensembled (k)")
    ax.set_ylabel("bits per byte (lower is better)")
    ax.set_title(f"REPLUG as an LM, {model}, {n} passages")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    asyncio.run(main())

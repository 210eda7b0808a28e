"""FB-RAG's ceilings: what the strong reader does with the gold paragraphs alone, and with the
chunks that the gold answer itself (as stage II's query) would pick.

    python -m benchmarks.quality.fb_rag_oracle [--dataset FILE] [--n 30] \
        [--out runs/fbrag-oracle-NAME]

Per question of a long-context file (`activerag longctx build`): `gold paragraphs` reads only
the paragraphs that hold the gold spans, in the context's order; `answer as query` reranks every
chunk by BM25 with the gold answers as the samples (max over them, Ours-F) and reads the best up
to Y words in order, which bounds what any light LM's samples can do for the ranking. Rows are
scored as the evaluation scores them (qa_f1, EM, the gold words read and the gold paragraphs
read at least half) and written to OUT as examples.jsonl and summary.md. Needs the strong
server (`activerag serve`: the default model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from activerag.evaluation.datasets import Example, load_dataset
from activerag.evaluation.evaluate import row_of, summarise_methods
from activerag.evaluation.tables import LONG_CONTEXT_COLUMNS, markdown_table
from activerag.nodes.fb_rag import logic as fb
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.fb_rag.parts import FBParts
from activerag.nodes.fb_rag.steps import read
from activerag.settings import Settings


def gold_paragraphs(example: Example) -> list[int]:
    chunks = fb.chunk_paragraphs(example.context)
    return [c.index for c in chunks
            if any(a < c.end and c.start < b for a, b in example.gold_spans)]


def answer_ranked(example: Example, ctx: FBRagContext) -> tuple[list[fb.Chunk], list[int]]:
    chunks = fb.chunk_words(example.context, ctx.chunk_words)
    forward = fb.forward_scores(fb.bm25_scores(chunks, example.answers))
    return chunks, sorted(fb.within_budget(fb.ranking(forward), chunks, ctx.read_words))


async def one(parts: FBParts, ctx: FBRagContext, example: Example) -> list[dict]:
    paragraphs = fb.chunk_paragraphs(example.context)
    gold = gold_paragraphs(example)
    chunks, picked = answer_ranked(example, ctx)
    rows = []
    for name, source, chosen in (("gold paragraphs", paragraphs, gold),
                                 ("answer as query", chunks, picked)):
        start = time.perf_counter()
        out = await read(parts, ctx, example.question, fb.join_chunks(source, chosen))
        out |= {"selected_spans": [(source[i].start, source[i].end) for i in chosen],
                "route": name}
        rows.append(row_of(name, example, out, time.perf_counter() - start))
    return rows


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default=str(Settings.from_env().home / "longctx"
                                            / "hotpotqa-1500w.jsonl"))
    p.add_argument("--n", type=int, default=30)
    p.add_argument("--read-words", type=int, default=500)
    p.add_argument("--out", help="folder for examples.jsonl and summary.md")
    args = p.parse_args()
    examples = load_dataset(args.dataset, args.n)
    ctx = FBRagContext(read_words=args.read_words)
    parts = FBParts()
    rows: list[dict] = []
    for i, example in enumerate(examples, 1):
        rows += await one(parts, ctx, example)
        print(f"{i}/{len(examples)} {example.id}", flush=True)
    summary = summarise_methods(rows, ["gold paragraphs", "answer as query"])
    table = (f"### Ceilings on {Path(args.dataset).name} (n={len(examples)}; Y = "
             f"{args.read_words} words for the answer-as-query ranking; p: paired sign-flip test "
             "against gold paragraphs)\n\n" + markdown_table(summary, LONG_CONTEXT_COLUMNS))
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (out / "summary.md").write_text(table)


if __name__ == "__main__":
    asyncio.run(main())

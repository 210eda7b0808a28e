"""A first evaluation harness: methods × questions against one server, with cost accounting."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from tqdm import tqdm

from activerag.context import FlareContext
from activerag.demo import load_demo_questions
from activerag.errors import ActiveRagError
from activerag.graphs.methods import method
from activerag.metrics import best_prf, exact_match, extract_answer
from activerag.paper import shared_data

TWOWIKI_FILE = "2wikimultihopqa/gfmrag_style_2wikimultihopqa_test1000_TTS-project.json"
TWOWIKI_CORPUS = "2wikimultihopqa/hipporag_2wikimultihopqa_corpus.json"


@dataclass
class Example:
    """One question with its gold answers and the titles of its supporting paragraphs."""

    id: str
    question: str
    answers: list[str]
    gold_titles: list[str] = field(default_factory=list)


def load_dataset(name: str, n: int | None = None) -> list[Example]:
    """The first N examples of a dataset: 'demo' (shipped) or '2wiki' (2WikiMultihopQA)."""
    if name == "demo":
        rows = [Example(q["id"], q["question"], q["answers"], q["gold_titles"])
                for q in load_demo_questions()]
    elif name == "2wiki":
        raw = json.loads((shared_data() / TWOWIKI_FILE).read_text())
        rows = [Example(r["id"], r["question"], [r["answer"], *r.get("answer_aliases", [])],
                        list(r.get("supporting_facts", []))) for r in raw]
    else:
        raise ActiveRagError(f"unknown dataset {name!r}; use 'demo' or '2wiki'")
    return rows[:n] if n else rows


def score(example: Example, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Per-example metrics and costs of one graph output."""
    prediction = extract_answer(out.get("answer", ""))
    precision, recall, f1 = best_prf(prediction, example.answers)
    trace = out.get("trace", [])
    titles = set(out.get("retrieved_titles", []))
    gold = set(example.gold_titles)
    return {
        "id": example.id,
        "prediction": prediction,
        "em": exact_match(prediction, example.answers),
        "f1": f1, "precision": precision, "recall": recall,
        "sentences": len(trace),
        "retrieved_sentences": sum(1 for s in trace if s["retrieved"]),
        "gold_title_recall": len(gold & titles) / len(gold) if gold else None,
        "lm_calls": out.get("lm_calls", 0),
        "generated_tokens": out.get("generated_tokens", 0),
        "answer_tokens": out.get("answer_tokens", 0),
        "retrievals": out.get("retrievals", 0),
        "seconds": seconds,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the metrics, totals of the costs, and the retrieval rate over sentences."""
    n = len(rows)
    if not n:
        return {"n": 0}
    mean = {k: sum(r[k] for r in rows) / n for k in ("em", "f1", "precision", "recall")}
    recalls = [r["gold_title_recall"] for r in rows if r["gold_title_recall"] is not None]
    sentences = sum(r["sentences"] for r in rows)
    return {
        "n": n, **mean,
        "gold_title_recall": sum(recalls) / len(recalls) if recalls else None,
        "retrieval_rate": sum(r["retrieved_sentences"] for r in rows) / max(1, sentences),
        "lm_calls": sum(r["lm_calls"] for r in rows),
        "generated_tokens": sum(r["generated_tokens"] for r in rows),
        "answer_tokens": sum(r["answer_tokens"] for r in rows),
        "retrievals": sum(r["retrievals"] for r in rows),
        "seconds_per_question": sum(r["seconds"] for r in rows) / n,
    }


async def evaluate(methods: list[str], examples: list[Example], context: FlareContext,
                   concurrency: int = 4, progress: bool = True) -> dict[str, Any]:
    """Run every method on every example, CONCURRENCY at a time; return rows and summaries."""
    runs = {name: method(name, context) for name in methods}
    sem = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(runs) * len(examples), desc="eval", disable=not progress,
               file=sys.stderr)

    async def one(name: str, ex: Example) -> dict[str, Any]:
        graph, ctx = runs[name]
        async with sem:
            start = time.perf_counter()
            out = await graph.ainvoke({"question": ex.question}, context=ctx)
            row = {"method": name, **score(ex, out, time.perf_counter() - start)}
            bar.update(1)
            return row

    start = time.perf_counter()
    rows = await asyncio.gather(*[one(m, ex) for m in runs for ex in examples])
    wall = time.perf_counter() - start
    bar.close()
    summary = {m: summarise([r for r in rows if r["method"] == m]) for m in runs}
    return {"context": asdict(context), "wall_seconds": wall, "summary": summary,
            "examples": rows}

"""The evaluation harness: methods × examples against one server, into a resumable run folder.

A run folder holds config.json (what was asked), examples.jsonl (one line per finished
method and example, appended as they finish) and summary.json / summary.md. Running again
into the same folder skips what is done; `rescore` recomputes the metrics from the stored
answers without calling the LM.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from activerag.context import FlareContext
from activerag.datasets import Example, load_dataset
from activerag.errors import ActiveRagError
from activerag.graphs.methods import method
from activerag.metrics import best_prf, exact_match, extract_answer, rouge_l, str_em, yes_no
from activerag.server import vllm_counters

TIMING_KEYS = ("seconds", "seconds_per_question", "wall_seconds", "prefix_cache_hit_rate")
DISAMBIG_NOTE = ("ASQA Disambig-F1 is not computed: it needs a RoBERTa QA model that cannot be "
                 "installed here; EM is over the short answers and ROUGE-L over the long answers")


def score(example: Example, answer: str, retrieved_titles: list[str]) -> dict[str, Any]:
    """Quality metrics of one answer, by the kind of the example."""
    out: dict[str, Any] = {}
    if example.kind == "short":
        prediction = extract_answer(answer)
        precision, recall, f1 = best_prf(prediction, example.answers)
        out.update(prediction=prediction, em=exact_match(prediction, example.answers), f1=f1,
                   precision=precision, recall=recall)
    elif example.kind == "yesno":
        prediction = yes_no(answer)
        out.update(prediction=prediction, em=float(prediction == example.answers[0]))
    else:
        out.update(em=str_em(answer, example.short_answers),
                   rouge_l=rouge_l(answer, example.answers))
    gold = set(example.gold_titles)
    out["gold_title_recall"] = len(gold & set(retrieved_titles)) / len(gold) if gold else None
    return out


def row_of(name: str, example: Example, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The stored line of one finished run: answer, trace summary, metrics and costs."""
    trace = out.get("trace", [])
    return {
        "method": name, "id": example.id, "answer": out.get("answer", ""),
        "retrieved_titles": out.get("retrieved_titles", []),
        **score(example, out.get("answer", ""), out.get("retrieved_titles", [])),
        "sentences": len(trace),
        "retrieved_sentences": sum(1 for s in trace if s["retrieved"]),
        "lm_calls": out.get("lm_calls", 0),
        "prompt_tokens": out.get("prompt_tokens", 0),
        "generated_tokens": out.get("generated_tokens", 0),
        "answer_tokens": out.get("answer_tokens", 0),
        "retrievals": out.get("retrievals", 0),
        "seconds": seconds,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the metrics, totals of the costs, the retrieval rate over sentences."""
    n = len(rows)
    if not n:
        return {"n": 0}
    out: dict[str, Any] = {"n": n}
    for key in ("em", "f1", "precision", "recall", "rouge_l", "gold_title_recall"):
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            out[key] = sum(values) / len(values)
    sentences = sum(r["sentences"] for r in rows)
    out["retrieval_rate"] = sum(r["retrieved_sentences"] for r in rows) / max(1, sentences)
    for key in ("lm_calls", "prompt_tokens", "generated_tokens", "answer_tokens", "retrievals"):
        out[key] = sum(r[key] for r in rows)
    out["generated_per_kept_token"] = out["generated_tokens"] / max(1, out["answer_tokens"])
    out["lm_calls_per_question"] = out["lm_calls"] / n
    out["seconds_per_question"] = sum(r["seconds"] for r in rows) / n
    return out


class Run:
    """A run folder: its config, its finished rows, its summary."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows_file = path / "examples.jsonl"

    def start(self, config: dict[str, Any]) -> None:
        """Create the folder, or check that a resumed one was asked the same thing."""
        self.path.mkdir(parents=True, exist_ok=True)
        cfg = self.path / "config.json"
        if cfg.exists():
            old = json.loads(cfg.read_text())
            if old != config:
                diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
                raise ActiveRagError(f"{self.path} holds a run with other settings ({diff}); "
                                     "resume with the same ones or choose a new --run folder")
        else:
            cfg.write_text(json.dumps(config, indent=1))

    def rows(self) -> list[dict[str, Any]]:
        """Finished rows, one per method and example; a line cut short by a kill is ignored."""
        if not self.rows_file.exists():
            return []
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for line in self.rows_file.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            out[(row["method"], row["id"])] = row
        return list(out.values())

    def append(self, row: dict[str, Any]) -> None:
        with open(self.rows_file, "a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()

    def write_summary(self, methods: list[str], extra: dict[str, Any]) -> dict[str, Any]:
        rows = self.rows()
        summary = {m: summarise([r for r in rows if r["method"] == m]) for m in methods}
        result = {**extra, "summary": summary}
        (self.path / "summary.json").write_text(json.dumps(result, indent=1))
        (self.path / "summary.md").write_text(markdown_table(summary))
        return result


def markdown_table(summary: dict[str, dict[str, Any]]) -> str:
    """Methods as rows, the main metrics and costs as columns."""
    cols = ["n", "em", "f1", "rouge_l", "gold_title_recall", "retrieval_rate",
            "lm_calls_per_question", "generated_per_kept_token", "prompt_tokens",
            "generated_tokens", "seconds_per_question"]
    cols = [c for c in cols if any(c in s for s in summary.values())]
    lines = ["| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, s in summary.items():
        cells = [f"{s[c]:.3f}" if isinstance(s.get(c), float) else str(s.get(c, "-"))
                 for c in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def method_runs(methods: list[str], context: FlareContext) -> dict[str, tuple[Any, FlareContext]]:
    """The graph and context of each named method."""
    return {name: method(name, context) for name in methods}


async def evaluate(run: Run, dataset: str, runs: dict[str, tuple[Any, FlareContext]],
                   examples: list[Example], concurrency: int = 4,
                   progress: bool = True) -> dict[str, Any]:
    """Run every method on every example not done yet, CONCURRENCY at a time."""
    methods = list(runs)
    config = {"dataset": dataset, "ids": [e.id for e in examples], "methods": methods,
              "contexts": {m: asdict(ctx) for m, (_, ctx) in runs.items()}}
    run.start(config)
    done = {(r["method"], r["id"]) for r in run.rows()}
    todo = [(m, ex) for m in methods for ex in examples if (m, ex.id) not in done]
    context = next(iter(runs.values()))[1]
    sem = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(methods) * len(examples), initial=len(done), desc="eval",
               disable=not progress, file=sys.stderr)

    async def one(name: str, ex: Example) -> None:
        graph, ctx = runs[name]
        async with sem:
            start = time.perf_counter()
            out = await graph.ainvoke({"question": ex.question}, context=ctx)
            run.append(row_of(name, ex, out, time.perf_counter() - start))
            bar.update(1)

    before = vllm_counters(context.base_url)
    start = time.perf_counter()
    try:
        # A failure cancels the rest: nothing runs on behind the error to race a resume.
        async with asyncio.TaskGroup() as group:
            for m, ex in todo:
                group.create_task(one(m, ex))
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from group_error
    finally:
        bar.close()
    after = vllm_counters(context.base_url)
    queries = after.get("vllm:prefix_cache_queries_total", 0) - before.get(
        "vllm:prefix_cache_queries_total", 0)
    hits = after.get("vllm:prefix_cache_hits_total", 0) - before.get(
        "vllm:prefix_cache_hits_total", 0)
    extra = {"dataset": dataset, "n": len(examples), "context": asdict(context),
             "wall_seconds": time.perf_counter() - start, "resumed_from": len(done),
             "prefix_cache_hit_rate": hits / queries if queries else None}
    if any(e.kind == "long" for e in examples):
        extra["note"] = DISAMBIG_NOTE
    return run.write_summary(methods, extra)


def rescore(run: Run) -> dict[str, Any]:
    """Recompute every row's metrics from its stored answer (no LM calls)."""
    config = json.loads((run.path / "config.json").read_text())
    examples = {e.id: e for e in load_dataset(config["dataset"])}
    rows = run.rows()
    for r in rows:
        r.update(score(examples[r["id"]], r["answer"], r["retrieved_titles"]))
    run.rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    old = json.loads((run.path / "summary.json").read_text())
    return run.write_summary(config["methods"], {k: v for k, v in old.items() if k != "summary"})

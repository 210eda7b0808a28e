"""The evaluation harness: methods × examples against one server, into a resumable run folder.

A run folder holds config.json (what was asked), examples.jsonl (one line per finished
method and example, appended as they finish) and summary.json / summary.md. Running again
into the same folder skips what is done; `rescore` recomputes the metrics from the stored
answers without calling the LM. Summaries give each quality metric a 95% bootstrap interval
and each method after the first a paired bootstrap p-value against the first.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from activerag import durable
from activerag.context import FBRagContext, FlareContext, ServingContext
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example, load_dataset
from activerag.evaluation.metrics import (
    best_prf,
    exact_match,
    extract_answer,
    qa_f1,
    rouge_l,
    str_em,
    yes_no,
)
from activerag.evaluation.stats import bootstrap_ci, paired_bootstrap_p
from activerag.evaluation.tables import summary_markdown
from activerag.graphs.methods import method
from activerag.serving.replicas import sticky
from activerag.serving.server import vllm_counters

TIMING_KEYS = ("seconds", "seconds_per_question", "wall_seconds", "prefix_cache_hit_rate")
QUALITY_KEYS = ("em", "f1", "precision", "recall", "rouge_l", "gold_title_recall",
                "gold_word_recall", "gold_half_recall")
COST_KEYS = ("lm_calls", "prompt_tokens", "generated_tokens", "answer_tokens", "retrievals",
             "retrieval_steps")
SUMMARY_KEYS = ("expected", "finished", "missing", "damaged_lines", "summary", "groups")
"""What write_summary computes from the rows; the rest of summary.json is the caller's."""
UNGROUPED = "ungrouped"
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
    elif example.kind == "longbench":
        out.update(prediction=answer, em=exact_match(answer, example.answers),
                   f1=qa_f1(answer, example.answers))
    elif example.kind == "yesno":
        prediction = yes_no(answer)
        out.update(prediction=prediction, em=float(prediction == example.answers[0]))
    else:
        out.update(em=str_em(answer, example.short_answers),
                   rouge_l=rouge_l(answer, example.answers))
    gold = set(example.gold_titles)
    out["gold_title_recall"] = len(gold & set(retrieved_titles)) / len(gold) if gold else None
    return out


def gold_read(example: Example, spans: Sequence[Sequence[int]]) -> dict[str, float | None]:
    """How much of the example's gold paragraphs the SPANS read: the share of their words
    (gold_word_recall), and the share of them read at least half (gold_half_recall)."""
    from activerag.nodes.fb_rag_logic import gold_half_recall, gold_word_recall

    read = [(int(a), int(b)) for a, b in spans]
    return {"gold_word_recall": gold_word_recall(read, example.gold_spans),
            "gold_half_recall": gold_half_recall(read, example.gold_spans)}


def long_context_fields(example: Example, out: dict[str, Any]) -> dict[str, Any]:
    """What a long-context run (FB-RAG and its baselines) adds to its row: the route taken,
    the time per stage, the word spans read (and how much of the gold they cover) and the light
    LM's samples, so that a row can be scored again and FB-RAG's ranking redone."""
    if "selected_spans" not in out:
        return {}
    spans = [list(s) for s in out["selected_spans"]]
    return {"route": out.get("route", ""), "stage_seconds": out.get("stage_seconds", {}),
            "words_read": sum(b - a for a, b in spans), "selected_spans": spans,
            "truncated_tokens": out.get("truncated_tokens", 0), **gold_read(example, spans),
            **({"samples": out["samples"]} if out.get("samples") is not None else {})}


def row_of(name: str, example: Example, out: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The stored line of one finished run: answer, trace summary, metrics and costs."""
    trace = out.get("trace", [])
    return {
        "method": name, "id": example.id, "answer": out.get("answer", ""),
        "retrieved_titles": out.get("retrieved_titles", []),
        **score(example, out.get("answer", ""), out.get("retrieved_titles", [])),
        "sentences": len(trace),
        "retrieved_sentences": sum(1 for s in trace if s.get("retrieved")),
        "lm_calls": out.get("lm_calls", 0),
        "prompt_tokens": out.get("prompt_tokens", 0),
        "generated_tokens": out.get("generated_tokens", 0),
        "answer_tokens": out.get("answer_tokens", 0),
        "retrievals": out.get("retrievals", 0),
        "retrieval_steps": out.get("retrieval_steps", 0),
        **({"certified": out["certified"]} if "certified" in out else {}),
        **long_context_fields(example, out),
        **({"route": out.get("route", ""), "confidence": out.get("confidence")}
           if "runs" in out else {}),  # the adaptive app: which method answered, and why
        "group": example.group,
        "seconds": seconds,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the metrics with 95% bootstrap intervals, totals of the costs, retrieval rates.

    retrieval_rate is the paper's (sentences that retrieved / sentences); retrievals_per_question
    and retrievals_per_100_tokens count retrieval steps (the one with the question included),
    which compare across methods whatever unit they generate in.
    """
    n = len(rows)
    if not n:
        return {"n": 0}
    out: dict[str, Any] = {"n": n}
    for key in QUALITY_KEYS:
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            out[key] = sum(values) / len(values)
            out[f"{key}_ci"] = list(bootstrap_ci(values))
    sentences = sum(r["sentences"] for r in rows)
    out["retrieval_rate"] = sum(r["retrieved_sentences"] for r in rows) / max(1, sentences)
    for key in COST_KEYS:
        out[key] = sum(r.get(key, 0) for r in rows)
    out["retrievals_per_question"] = out["retrieval_steps"] / n
    out["retrievals_per_100_tokens"] = 100 * out["retrieval_steps"] / max(1, out["answer_tokens"])
    out["generated_per_kept_token"] = out["generated_tokens"] / max(1, out["answer_tokens"])
    out["lm_calls_per_question"] = out["lm_calls"] / n
    out["seconds_per_question"] = sum(r["seconds"] for r in rows) / n
    if any("stage_seconds" in r for r in rows):  # long-context runs
        stages = sorted({k for r in rows for k in r.get("stage_seconds", {})})
        out["stage_seconds"] = {k: sum(r.get("stage_seconds", {}).get(k, 0.0) for r in rows) / n
                                for k in stages}
        out["words_read"] = sum(r.get("words_read", 0) for r in rows) / n
        out["fallback_rate"] = sum(1 for r in rows if r.get("route") == "long_context") / n
        out["latency_seconds"] = sum(latency(r) for r in rows) / n
    if any("confidence" in r for r in rows):  # the adaptive app
        out["flare_share"] = sum(1 for r in rows if r.get("route") == "flare") / n
    return out


def latency(row: dict[str, Any]) -> float:
    """A row's wall time, with light samples served from the cache counted at what their draw
    took (`eval --cache-samples`): the seconds the question costs without the cache."""
    stages = row.get("stage_seconds", {})
    if "sample_drawn" not in stages:
        return row["seconds"]
    return row["seconds"] - stages.get("sample", 0.0) + stages["sample_drawn"]


def versus(rows: list[dict[str, Any]], first_rows: list[dict[str, Any]],
           first: str) -> dict[str, Any]:
    """Mean differences from method FIRST and their paired bootstrap p-values, on the examples
    both scored (paired by id)."""
    theirs = {r["id"]: r for r in first_rows}
    out: dict[str, Any] = {"method": first, "n": sum(1 for r in rows if r["id"] in theirs)}
    for key in QUALITY_KEYS:
        pairs = [(r[key], theirs[r["id"]][key]) for r in rows
                 if r.get(key) is not None and theirs.get(r["id"], {}).get(key) is not None]
        if pairs:
            ours, base = [a for a, _ in pairs], [b for _, b in pairs]
            out[f"{key}_diff"] = (sum(ours) - sum(base)) / len(pairs)
            out[f"{key}_p"] = paired_bootstrap_p(ours, base)
    return out


def summarise_methods(rows: list[dict[str, Any]], methods: list[str]) -> dict[str, Any]:
    """The summary of each method; every method after the first also gets `vs_first`."""
    by_method = {m: [r for r in rows if r["method"] == m] for m in methods}
    out = {m: summarise(by_method[m]) for m in methods}
    first = methods[0] if methods else ""
    for m in methods[1:]:
        if by_method[m] and by_method[first]:
            out[m]["vs_first"] = versus(by_method[m], by_method[first], first)
    return out


CHECKPOINTS = "checkpoints.sqlite"
"""The run folder's checkpoints of the questions under way (each dropped once its row is kept)."""


class Run:
    """A run folder: its config, its finished rows, its summary."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows_file = path / "examples.jsonl"

    def start(self, config: dict[str, Any]) -> None:
        """Create the folder, or check that a resumed one was asked the same thing and mend
        the end of its rows."""
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
        self._mend_last_line()

    def _mend_last_line(self) -> None:
        """End the rows file on a newline, so the next append starts a line of its own.

        A kill mid-write leaves a last line without one: a whole row gets its newline, a
        partial one is cut off (its example runs again).
        """
        if not self.rows_file.exists():
            return
        data = self.rows_file.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        start = data.rfind(b"\n") + 1
        with open(self.rows_file, "r+b") as fh:
            if _parse_row(data[start:].decode(errors="replace")) is None:
                fh.truncate(start)
                print(f"{self.rows_file}: dropped a partial last line left by a kill; "
                      "its example runs again", file=sys.stderr)
            else:
                fh.seek(0, 2)
                fh.write(b"\n")

    def config(self) -> dict[str, Any]:
        """What the run was asked: dataset, example ids, methods, contexts."""
        return dict(json.loads((self.path / "config.json").read_text()))

    def scan(self) -> tuple[list[dict[str, Any]], int]:
        """Finished rows, one per method and example (the last one wins), and the number of
        lines that are not rows (cut short by a kill, or overwritten)."""
        if not self.rows_file.exists():
            return [], 0
        out: dict[tuple[str, str], dict[str, Any]] = {}
        damaged = 0
        for line in self.rows_file.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            row = _parse_row(line)
            if row is None:
                damaged += 1
            else:
                out[(row["method"], row["id"])] = row
        return list(out.values()), damaged

    def rows(self) -> list[dict[str, Any]]:
        """Finished rows, one per method and example; lines that are not rows are skipped."""
        return self.scan()[0]

    def append(self, row: dict[str, Any]) -> None:
        with open(self.rows_file, "a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()

    def write_summary(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Summarise the config's methods × examples into summary.json and summary.md, saying
        how many rows are missing or unreadable; with example groups, also one summary each."""
        config = self.config()
        methods, ids = list(config["methods"]), set(config["ids"])
        rows, damaged = self.scan()
        rows = [r for r in rows if r["method"] in methods and r["id"] in ids]
        expected = len(ids) * len(methods)
        result = {**{k: v for k, v in extra.items() if k not in SUMMARY_KEYS},
                  "expected": expected, "finished": len(rows), "missing": expected - len(rows),
                  "damaged_lines": damaged, "summary": summarise_methods(rows, methods)}
        groups = sorted({r.get("group") or UNGROUPED for r in rows})
        if groups and groups != [UNGROUPED]:
            result["groups"] = {
                g: summarise_methods([r for r in rows if (r.get("group") or UNGROUPED) == g],
                                     methods) for g in groups}
        (self.path / "summary.json").write_text(json.dumps(result, indent=1))
        (self.path / "summary.md").write_text(summary_markdown(result))
        return result


def _parse_row(line: str) -> dict[str, Any] | None:
    """The row stored on LINE, or None when the line is not one."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    ok = isinstance(row, dict) and isinstance(row.get("method"), str) and "id" in row
    return row if ok else None


def method_runs(methods: list[str], context: FlareContext, fb_context: FBRagContext | None = None,
                ) -> dict[str, tuple[Any, ServingContext]]:
    """The graph and context of each named method (FB-RAG's from FB_CONTEXT)."""
    return {name: method(name, context, fb_context) for name in methods}


async def evaluate(run: Run, dataset: str, runs: dict[str, tuple[Any, ServingContext]],
                   examples: list[Example], concurrency: int = 4, progress: bool = True,
                   metrics_url: str | None = None) -> dict[str, Any]:
    """Run every method on every example not done yet, CONCURRENCY at a time.

    With METRICS_URL (the served /v1 endpoint), vLLM's /metrics before and after give the
    run's prefix-cache hit rate; without it no server is asked.
    """
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

    async def one(name: str, ex: Example, saver: Any) -> None:
        graph, ctx = runs[name]
        async with sem:
            start = time.perf_counter()
            given = {"question": ex.question, **({"context": ex.context} if ex.context else {})}
            # checkpointed after every step: a question killed midway goes on from there
            thread = f"{name}/{ex.id}"
            with sticky(ex.id):  # one replica per question keeps its prefix cache warm
                out = await durable.final(graph, given, ctx, saver, thread)
            run.append(row_of(name, ex, out, time.perf_counter() - start))
            await durable.forget(saver, thread)
            bar.update(1)

    before = vllm_counters(metrics_url) if metrics_url else {}
    start = time.perf_counter()
    try:
        # A failure cancels the rest: nothing runs on behind the error to race a resume.
        async with durable.checkpoints(run.path / CHECKPOINTS) as saver, \
                asyncio.TaskGroup() as group:
            for m, ex in todo:
                group.create_task(one(m, ex, saver))
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from group_error
    finally:
        bar.close()
    after = vllm_counters(metrics_url) if metrics_url else {}
    queries = after.get("vllm:prefix_cache_queries_total", 0) - before.get(
        "vllm:prefix_cache_queries_total", 0)
    hits = after.get("vllm:prefix_cache_hits_total", 0) - before.get(
        "vllm:prefix_cache_hits_total", 0)
    extra = {"dataset": dataset, "n": len(examples), "context": asdict(context),
             "wall_seconds": time.perf_counter() - start, "resumed_from": len(done),
             "prefix_cache_hit_rate": hits / queries if queries else None}
    if any(e.kind == "long" for e in examples):
        extra["note"] = DISAMBIG_NOTE
    return run.write_summary(extra)


def rescore(run: Run) -> dict[str, Any]:
    """Recompute every row's metrics and group from its stored answer and, for a long-context
    row, the spans it read (no LM calls)."""
    examples = {e.id: e for e in load_dataset(run.config()["dataset"])}
    rows = run.rows()
    for r in rows:
        example = examples[r["id"]]
        r.update(score(example, r["answer"], r["retrieved_titles"]), group=example.group)
        if "selected_spans" in r:
            r.update(gold_read(example, r["selected_spans"]))
    run.rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run.write_summary(json.loads((run.path / "summary.json").read_text()))

"""The evaluation harness: methods × examples against one server, into a resumable run folder.

A run folder holds config.json (what was asked), examples.jsonl (one line per finished
method and example, appended as they finish) and summary.json / summary.md. Running again
into the same folder skips what is done; `rescore` recomputes the metrics from the stored
answers without calling the LM. Summaries give each quality metric a 95% bootstrap interval
and each method after the first a paired sign-flip p-value against the first.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from activerag import durable
from activerag.context import FlareContext, ServingContext
from activerag.database import database_url
from activerag.errors import ActiveRagError
from activerag.evaluation.datasets import Example, load_dataset
from activerag.evaluation.rows import gold_read, row_of, score
from activerag.evaluation.summaries import summarise as summarise
from activerag.evaluation.summaries import summarise_methods
from activerag.evaluation.tables import summary_markdown
from activerag.graphs.registry import answer_rule, method
from activerag.locks import WriterLock
from activerag.serving.replicas import sticky
from activerag.serving.running import vllm_counters

TIMING_KEYS = ("seconds", "seconds_per_question", "wall_seconds", "prefix_cache_hit_rate")
SUMMARY_KEYS = ("expected", "finished", "missing", "damaged_lines", "summary", "groups")
"""What write_summary computes from the rows; the rest of summary.json is the caller's."""
UNGROUPED = "ungrouped"
DISAMBIG_NOTE = ("ASQA Disambig-F1 is not computed: it needs a RoBERTa QA model that cannot be "
                 "installed here; EM is over the short answers and ROUGE-L over the long answers")


CHECKPOINTS = "checkpoints.sqlite"
"""The run folder's checkpoints of the questions under way (each dropped once its row is kept)."""


class Run:
    """A run folder: its config, its finished rows, its summary. Reading takes no lock and
    writes nothing; one writer at a time (`start`, `writing`) holds the folder's lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows_file = path / "examples.jsonl"
        self._writer = WriterLock(path, "the run folder")

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the folder's writer lock for the block (refused while another process holds
        it), unless this Run holds it already."""
        taken = self._writer.acquire()
        try:
            yield
        finally:
            if taken:
                self._writer.release()

    def close(self) -> None:
        """Give up the writer lock that `start` took."""
        self._writer.release()

    def start(self, config: dict[str, Any]) -> None:
        """Become the folder's writer (until `close`, or the end of the `writing` block), create
        it, or check that a resumed one was asked the same thing and mend the end of its rows."""
        self._writer.acquire()
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
        """End the rows file on a newline, so the next append starts a line of its own (the
        writer alone does this: a reader may see a line that is still being written).

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


def run_config(dataset: str, runs: dict[str, tuple[Any, ServingContext]],
               examples: list[Example]) -> dict[str, Any]:
    """What a run folder's config.json says it was asked: the same however it is run (here, or
    over a Ray cluster), so that a run started one way resumes the other."""
    return {"dataset": dataset, "ids": [e.id for e in examples], "methods": list(runs),
            "contexts": {m: asdict(ctx) for m, (_, ctx) in runs.items()}}


def method_runs(methods: list[str], context: FlareContext, *given: ServingContext,
                ) -> dict[str, tuple[Any, ServingContext]]:
    """The graph and context of each named method: a family's from GIVEN where one of its
    context class is there (FB-RAG's), else made from CONTEXT (registry.method)."""
    return {name: method(name, context, *given) for name in methods}


async def evaluate(run: Run, dataset: str, runs: dict[str, tuple[Any, ServingContext]],
                   examples: list[Example], concurrency: int = 4, progress: bool = True,
                   metrics_url: str | None = None) -> dict[str, Any]:
    """Run every method on every example not done yet, CONCURRENCY at a time.

    With METRICS_URL (the served /v1 endpoint), vLLM's /metrics before and after give the
    run's prefix-cache hit rate; without it no server is asked.
    """
    with run.writing():
        return await _evaluate(run, dataset, runs, examples, concurrency, progress,
                               metrics_url)


async def _evaluate(run: Run, dataset: str, runs: dict[str, tuple[Any, ServingContext]],
                    examples: list[Example], concurrency: int, progress: bool,
                    metrics_url: str | None) -> dict[str, Any]:
    methods = list(runs)
    run.start(run_config(dataset, runs, examples))
    done = {(r["method"], r["id"]) for r in run.rows()}
    todo = [(m, ex) for m in methods for ex in examples if (m, ex.id) not in done]
    context = next(iter(runs.values()))[1]
    sem = asyncio.Semaphore(concurrency)
    # the database's threads are shared by every run folder: each run's carry its path
    prefix = "" if database_url() is None else f"{run.path.resolve()}/"
    bar = tqdm(total=len(methods) * len(examples), initial=len(done), desc="eval",
               disable=not progress, file=sys.stderr)

    async def one(name: str, ex: Example, saver: Any) -> None:
        graph, ctx = runs[name]
        async with sem:
            start = time.perf_counter()
            given = {"question": ex.question, **({"context": ex.context} if ex.context else {})}
            # checkpointed after every step: a question killed midway goes on from there
            thread = f"{prefix}{name}/{ex.id}"
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
    row, the spans it read (no LM calls). The rows file is replaced whole or not at all; a row
    whose example the dataset no longer has is refused before anything is written."""
    if not (run.path / "config.json").is_file():
        raise ActiveRagError(f"{run.path} holds no evaluation run (no config.json); pass the "
                             "folder an `activerag eval --run FOLDER` wrote")
    with run.writing():
        config = run.config()
        examples = {e.id: e for e in load_dataset(config["dataset"])}
        rows = run.rows()
        unknown = [r["id"] for r in rows if r["id"] not in examples]
        if unknown:
            named = ", ".join(map(str, unknown[:5])) + (", ..." if len(unknown) > 5 else "")
            raise ActiveRagError(
                f"{run.rows_file} holds rows of {len(unknown)} example(s) that the dataset "
                f"{config['dataset']!r} no longer has ({named}); nothing was rescored. Restore "
                "the dataset file the run was made with, or start a new run")
        for r in rows:
            example = examples[r["id"]]
            r.update(score(example, r["answer"], r["retrieved_titles"], answer_rule(r["method"])),
                     group=example.group)
            if "selected_spans" in r:
                r.update(gold_read(example, r["selected_spans"]))
        _replace(run.rows_file, "".join(json.dumps(r) + "\n" for r in rows))
        summary = run.path / "summary.json"
        extra = (json.loads(summary.read_text()) if summary.exists()  # none: killed before it
                 else {"dataset": config["dataset"], "n": len(config["ids"])})
        return run.write_summary(extra)


def _replace(path: Path, text: str) -> None:
    """Write TEXT to PATH through a new file renamed over it: a full disk or a kill leaves
    PATH as it was."""
    new = path.with_name(path.name + ".new")
    try:
        with open(new, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(new, path)
    finally:
        new.unlink(missing_ok=True)

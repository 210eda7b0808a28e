"""`activerag eval` as one worker of an evaluation shared through PostgreSQL.

Every worker started with the same run name and ACTIVERAG_DATABASE_URL claims questions from
the run's claim table (claims.py) until none is left, checkpointing each in the database's
durable threads, so a question retaken from a killed worker goes on from its last step. Each
worker returns once the whole run is finished (waiting for leases of killed workers to run
out) with the summary of every question, counted once.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import asdict
from typing import Any

from tqdm import tqdm

from activerag import durable
from activerag.context import ServingContext
from activerag.evaluation.claims import Claims, open_claims, renewing
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import DISAMBIG_NOTE, row_of
from activerag.evaluation.summaries import summarise_methods
from activerag.serving.replicas import sticky

LOCAL_FIELDS = ("base_url", "light_base_url", "store_dir")
"""Context fields each worker sets for its own machine (its server, its copy of the store):
left out of what the workers of one run must agree on."""


def shared_summary(config: dict[str, Any], rows: list[dict[str, Any]],
                   extra: dict[str, Any]) -> dict[str, Any]:
    """The run's summary from its stored ROWS (one per method and question), as a run
    folder's: expected, finished, missing, and each method's."""
    methods, ids = list(config["methods"]), {str(i) for i in config["ids"]}
    rows = [r for r in rows if r["method"] in methods and str(r["id"]) in ids]
    expected = len(ids) * len(methods)
    return {**extra, "expected": expected, "finished": len(rows),
            "missing": expected - len(rows), "damaged_lines": 0,
            "summary": summarise_methods(rows, methods)}


async def evaluate_shared(url: str, run_name: str, dataset: str,
                          runs: dict[str, tuple[Any, ServingContext]], examples: list[Example],
                          concurrency: int = 4, lease: float = 120.0, progress: bool = True,
                          worker: str | None = None) -> dict[str, Any]:
    """Answer the run's questions with this worker's CONCURRENCY tasks until every one is
    finished by some worker; the summary of all of them."""
    methods = list(runs)
    config = {"dataset": dataset, "ids": [e.id for e in examples], "methods": methods,
              "contexts": {m: {k: v for k, v in asdict(ctx).items() if k not in LOCAL_FIELDS}
                           for m, (_, ctx) in runs.items()}}
    by_id = {str(e.id): e for e in examples}
    context = next(iter(runs.values()))[1]
    start = time.perf_counter()
    from activerag.durable.postgres import pg_checkpoints

    async with open_claims(url, run_name, lease, worker) as claims, \
            pg_checkpoints(url) as saver:
        await claims.start(config, [(m, str(e.id)) for m in methods for e in examples])
        bar = tqdm(total=len(methods) * len(examples), desc=f"eval {run_name}",
                   disable=not progress, file=sys.stderr)
        answered = 0

        async def one(method: str, ex: Example) -> None:
            nonlocal answered
            graph, ctx = runs[method]
            begun = time.perf_counter()
            given = {"question": ex.question, **({"context": ex.context} if ex.context else {})}
            thread = f"{run_name}/{method}/{ex.id}"  # another worker resumes it after a kill
            with sticky(ex.id):
                out = await durable.final(graph, given, ctx, saver, thread, local=LOCAL_FIELDS)
            if await claims.finish(method, str(ex.id), row_of(method, ex, out,
                                                                time.perf_counter() - begun)):
                answered += 1
                bar.update(1)
            await durable.forget(saver, thread)

        async def work() -> None:
            while True:
                if errors:  # the lease renewal failed: others may take our questions
                    raise errors[0]
                got = await claims.claim()
                if got is not None:
                    await one(got[0], by_id[got[1]])
                elif await claims.remaining() == 0:
                    return
                else:  # the rest are held by others: wait in case a lease runs out
                    await asyncio.sleep(min(2.0, claims.lease / 4))

        try:
            with renewing(claims) as errors:
                await _run_all(claims, [work() for _ in range(concurrency)])
        finally:
            bar.close()
        extra = {"dataset": dataset, "n": len(examples), "context": asdict(context),
                 "run": run_name, "worker": claims.worker, "answered_here": answered,
                 "wall_seconds": time.perf_counter() - start}
        if any(e.kind == "long" for e in examples):
            extra["note"] = DISAMBIG_NOTE
        result = shared_summary(config, await claims.rows(), extra)
        await claims.save_summary(result)
        return result


async def _run_all(claims: Claims, workers: list[Any]) -> None:
    """Run WORKERS; on a failure the rest are cancelled and the claims given up, so others
    take them at once."""
    try:
        async with asyncio.TaskGroup() as group:
            for w in workers:
                group.create_task(w)
    except BaseExceptionGroup as group_error:
        await claims.release()
        raise group_error.exceptions[0] from group_error

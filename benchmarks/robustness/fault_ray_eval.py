"""Fault h of the fault table (issues #22, #57): a node of a Ray cluster lost in the middle of
`eval --ray`, with PostgreSQL.

    python -m benchmarks.robustness.fault_ray_eval [--n 6] [--out results/faults.md]

A 3-node Ray cluster of this script's own on 127.0.0.1 (a head without CPUs, two workers of one
actor each), a throwaway PostgreSQL cluster for the questions' checkpoints, and FLARE with at
most 3 sentences against a real SmolLM2 CPU vLLM server. Once a row is in the run folder and a
question is under way, the node of one actor is killed with its processes (-9) and a node is
added. The counts are read back from what the fault left: the run folder's rows (lost: a key
with no row; duplicated: a key with more than one), the summary, the checkpoints in the
database, and the driver's stderr, where the actors' logs say which question went on from its
checkpoint.

benchmarks/robustness/faults.py calls fault_ray_eval() with its own server and store. Run alone,
this script starts a server of its own on a free port, stops it at the end, and writes its row
into --out: an earlier row h is replaced, else the row goes below the table's last.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activerag.context import FlareContext
from activerag.demo import DEMO_CORPUS
from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.evaluate import Run, method_runs
from activerag.evaluation.on_ray import evaluate_on_ray
from activerag.stores.corpus import Corpus
from activerag.testing import processes as realprocs
from activerag.testing.postgres import checkpointed as in_database
from activerag.testing.postgres import throwaway_postgres
from activerag.testing.ray_nodes import actor_node, isolate, local_cluster
from benchmarks.robustness.fault_kit import CORES, NotProduced, Row, plural, wait_for

ROOT = Path(__file__).resolve().parents[2]
N = 6
NAME = "h. a node of a Ray cluster lost in the middle of `eval --ray` (PostgreSQL checkpoints)"


def keys(run: Path) -> Counter[tuple[str, str]]:
    import json

    rows = run / "examples.jsonl"
    lines = rows.read_text().splitlines() if rows.exists() else []
    return Counter((r["method"], str(r["id"])) for r in map(json.loads, filter(None, lines)))


def checkpointed(database: str) -> dict[str, int]:
    return in_database(database, "ray:")


@contextlib.contextmanager
def stderr_to(path: Path) -> Any:
    """This process's fd 2 (where Ray prints its actors' logs) into PATH for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "wb") as out:
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def fault_ray_eval(url: str, store: Path, n: int = N, database: str | None = None) -> Row:
    """Make fault h against the server at URL over STORE; a throwaway PostgreSQL cluster
    unless DATABASE is given."""
    isolate()
    work = Path(tempfile.mkdtemp(prefix="activerag-fault-h-"))
    try:
        with contextlib.ExitStack() as stack:
            db = database or stack.enter_context(throwaway_postgres())
            return _fault(url, store, n, db, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fault(url: str, store: Path, n: int, database: str, work: Path) -> Row:
    examples = load_dataset("demo", n)
    expected = {("flare", str(e.id)) for e in examples}
    runs = method_runs(["flare"], FlareContext(base_url=url, store_dir=str(store),
                                               max_sentences=3))
    run = work / "run"
    out: dict[str, Any] = {}
    with stderr_to(work / "driver.log"), local_cluster(workers=2, worker_cpus=1) as cluster:
        def drive() -> None:
            try:
                out["summary"] = evaluate_on_ray(Run(run), "demo", runs, examples,
                                                 address=cluster.address, actors=(2, 2),
                                                 concurrency=2, database=database,
                                                 progress=False)
            except BaseException as exc:  # noqa: BLE001 -- reported in the row
                out["error"] = exc

        driver = threading.Thread(target=drive)
        driver.start()

        def under_way() -> dict[str, int]:
            done = {f"/flare/{i}" for _, i in keys(run)}
            return {t.rsplit("/", 1)[1]: c for t, c in checkpointed(database).items()
                    if not t.endswith(tuple(done))}

        try:
            wait_for(lambda: bool(keys(run)) and bool(under_way())
                     and actor_node(cluster) is not None, None,
                     "a row kept, a question under way and an actor on a worker node",
                     timeout=900, every=0.5)
        except NotProduced:
            driver.join(900)
            raise
        at_kill, cut = sum(keys(run).values()), under_way()
        killed_at = time.monotonic()
        cluster.remove_node(actor_node(cluster), allow_graceful=False)
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=1)
        driver.join(1800)
        after = time.monotonic() - killed_at
    if "error" in out:
        raise NotProduced(f"the run failed after the kill: {out['error']}")
    found = keys(run)
    lost = len(expected - set(found))
    duplicated = sum(c - 1 for c in found.values())
    log = (work / "driver.log").read_text(errors="replace")
    resumed = {t.rsplit("/", 1)[-1]: int(k) for t, k in
               re.findall(r"thread (\S+): resuming after (\d+) accepted", log)}
    summary = out["summary"]
    return Row(f"{NAME} (3 nodes on 127.0.0.1, 2 actors of 2 questions each; FLARE against a "
               "real SmolLM2 CPU vLLM server)",
               f"the node of one actor was killed -9 with {plural(at_kill, 'row')} kept and "
               f"{', '.join(f'{i} ({c} checkpoints)' for i, c in sorted(cut.items()))} under "
               f"way, then a node added; the run ended {after:.0f} s after the kill; "
               + ("resumed " + ", ".join(f"{i} after {k} accepted" for i, k in
                                         sorted(resumed.items()))
                  if resumed else "no question resumed from its checkpoint")
               + f" (the actors' logs); {plural(sum(found.values()), 'row')} for {n} "
               f"questions; the summary counts flare n = {summary['summary']['flare']['n']}, "
               f"missing {summary['missing']}, {summary['ray']['duplicates_dropped']} "
               f"duplicate row(s) dropped by the driver; "
               f"{plural(len(checkpointed(database)), 'checkpointed thread')} left",
               lost, duplicated)


def write_row(row: Row, out: Path, note: str) -> str:
    """OUT's text with ROW as row h (replacing an earlier one) and NOTE below the table."""
    from benchmarks.robustness.fault_kit import table

    line = table([row]).splitlines()[-1]
    lines = out.read_text().splitlines() if out.exists() else table([]).splitlines()
    lines = [x for x in lines if not x.startswith(("| h. ", "Row h: "))]
    last = max(i for i, x in enumerate(lines) if x.startswith("|"))
    lines[last + 1:last + 1] = [line, "", f"Row h: {note}"]
    return "\n".join(lines).rstrip("\n").replace("\n\n\n", "\n\n") + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=N, help=f"demo questions in the run ({N})")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "faults.md")
    args = p.parse_args()
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", CORES)
    work = Path(tempfile.mkdtemp(prefix="activerag-fault-h-store-"))
    began = time.monotonic()
    try:
        with realprocs.own_server() as url:
            Corpus(work / "store").ingest(DEMO_CORPUS, dense=False, progress=False)
            try:
                row = fault_ray_eval(url, work / "store", args.n)
            except NotProduced as exc:
                row = Row(NAME, f"NOT PRODUCED: {exc}", "-", "-")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "python -m benchmarks.robustness.fault_ray_eval" + (
        f" --n {args.n}" if args.n != N else "")
    note = (f"`{command}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{time.monotonic() - began:.0f} s: a throwaway PostgreSQL cluster, a 3-node Ray "
            "cluster and a SmolLM2-135M CPU vLLM server of its own, BM25 over the demo corpus, "
            f"the first {args.n} demo questions, FLARE with at most 3 sentences; 2 cores "
            "shared with other work), made apart from the rows above.")
    args.out.write_text(write_row(row, args.out, note))
    print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

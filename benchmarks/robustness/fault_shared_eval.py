"""Fault h of the fault table (issue #22): one worker of an evaluation shared through PostgreSQL
killed with -9.

    python -m benchmarks.robustness.fault_shared_eval [--n 6] [--lease 10] [--out results/faults.md]

Two `activerag eval` processes share one run (the same --run name and ACTIVERAG_DATABASE_URL),
each against its own SmolLM2 CPU vLLM server, as a user spreads an evaluation over two GPU
servers (docs/postgres.md). Worker a is killed with -9 once it has stored a question's row and
holds another under a live lease; worker b must claim a's question again once its lease runs
out, go on from its durable checkpoint and finish the run. The counts are read back from what
the fault left in the database: the claim table's rows (lost: a question of the run with no
row; duplicated: a question with more than one row, and a summary counting more questions
than the run has), the run's stored summary, and the checkpoints still there.

benchmarks/robustness/faults.py calls fault_shared_eval() with its own two servers and store, and a
throwaway PostgreSQL cluster made here (activerag.testing.postgres). Run alone, this script
starts the cluster and two servers of its own on free ports, stops them at the end, and writes
its row into --out: an earlier row h is replaced, else the row goes below the table's last.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activerag.demo import DEMO_CORPUS
from activerag.evaluation.datasets import load_dataset
from activerag.stores.corpus import Corpus
from activerag.testing import processes as realprocs
from activerag.testing.postgres import throwaway_postgres
from benchmarks.robustness.fault_kit import CORES, NotProduced, Row, crash, finish, plural, wait_for

ROOT = Path(__file__).resolve().parents[2]
RUN = "fault-shared"
LEASE = 10
"""Seconds a claim lasts unless renewed: how long the killed worker's question waits."""
N = 6
NAME = "h. one of two `eval` workers sharing a run through PostgreSQL killed -9"


def worker(url: str, store: Path, database: str, n: int, lease: float) -> Any:
    """One `activerag eval` worker of the shared run against the server at URL."""
    return realprocs.cli("eval", "--dataset", "demo", "--methods", "flare", "--n", str(n),
                         "--run", RUN, "--base-url", url, "--store", str(store),
                         "--max-sentences", "3", "--concurrency", "2", "--lease", str(lease),
                         env={"ACTIVERAG_DATABASE_URL": database})


def _query(database: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(database, autocommit=True, connect_timeout=10) as db:
        return list(db.execute(sql, params).fetchall())


def claim_rows(database: str) -> list[tuple[Any, ...]]:
    """The run's claims: (method, id, worker, claims, has a row, finished_by, lease live);
    none while the workers are still making the tables."""
    import psycopg

    try:
        return _query(database, "SELECT method, id, worker, claims, row IS NOT NULL, "
                      "finished_by, lease_until > now() FROM activerag_eval_claims "
                      "WHERE run = %s ORDER BY seq", (RUN,))
    except psycopg.errors.UndefinedTable:
        return []


def checkpoints_of(database: str, prefix: str) -> dict[str, int]:
    """Thread -> checkpoints stored, for the threads whose id starts with PREFIX."""
    import psycopg

    try:
        found = _query(database, "SELECT thread_id, count(*) FROM checkpoints WHERE "
                       "thread_id LIKE %s GROUP BY thread_id", (prefix + "%",))
    except psycopg.errors.UndefinedTable:
        return {}
    return {str(t): int(c) for t, c in found}


def fault_shared_eval(first: str, second: str, store: Path, n: int = N, lease: float = LEASE,
                      database: str | None = None) -> Row:
    """Make fault h with workers against FIRST and SECOND over STORE; a throwaway cluster
    unless DATABASE is given."""
    with contextlib.ExitStack() as stack:
        url = database or stack.enter_context(throwaway_postgres())
        return _fault(first, second, store, n, lease, url)


def _fault(first: str, second: str, store: Path, n: int, lease: float, database: str) -> Row:
    expected = {("flare", str(e.id)) for e in load_dataset("demo", n)}
    a = worker(first, store, database, n, lease)
    b = worker(second, store, database, n, lease)
    mine = f":{a.pid}:"
    held: list[str] = []

    def a_done_and_holding() -> bool:
        rows = claim_rows(database)
        done = [r for r in rows if r[4] and mine in (r[5] or "")]
        held[:] = [r[1] for r in rows if not r[4] and mine in (r[2] or "") and r[6]]
        return bool(done and held)

    try:
        wait_for(a_done_and_holding, a, "worker a stored a row and held another question",
                 every=0.5)
    except NotProduced:
        for proc in (a, b):
            if proc.poll() is None:
                crash(proc)
        raise
    crash(a)
    killed_at = time.monotonic()
    at_kill = claim_rows(database)
    a_rows = sum(1 for r in at_kill if r[4] and mine in (r[5] or ""))
    b_rows_at_kill = sum(1 for r in at_kill if r[4] and mine not in (r[5] or ""))
    steps = checkpoints_of(database, f"{RUN}/")
    held_steps = {i: steps.get(f"{RUN}/flare/{i}", 0) for i in held}
    out, err = finish(b, 900)
    after = time.monotonic() - killed_at
    rows = claim_rows(database)
    stored = [(r[0], r[1]) for r in rows if r[4]]
    lost = len(expected - set(stored))
    retaken = [r[1] for r in rows if r[3] >= 2]
    retaken_by_a = [r[1] for r in rows if r[3] >= 2 and mine in (r[5] or "")]
    resumed = {t.rsplit("/", 1)[-1]: int(k) for t, k in
               re.findall(r"thread (\S+): resuming after (\d+) accepted", err)}
    found = _query(database, "SELECT summary FROM activerag_eval_runs WHERE run = %s", (RUN,))
    summary = json.loads(found[0][0]) if found and found[0][0] else {}
    counted = summary.get("summary", {}).get("flare", {}).get("n", 0)
    printed = re.search(r"\| flare \| (\d+) \|", out)
    left = checkpoints_of(database, f"{RUN}/")
    duplicated = (len(stored) - len(set(stored))) + max(0, counted - n)
    holding = ", ".join(f"{i} ({held_steps[i]} checkpoints in the database)" for i in held)
    return Row(f"{NAME} (two workers against two real vLLM replicas, one each; FLARE, lease "
               f"{lease:g} s)",
               f"a was killed after storing {plural(a_rows, 'row')} (b {b_rows_at_kill}), "
               f"holding {holding}; "
               f"b claimed {plural(len(retaken), 'question')} again once the lease ran out ("
               f"{', '.join(retaken) or 'none'}"
               + (f"; {len(retaken_by_a)} of them finished by a" if retaken_by_a else "")
               + "), resumed "
               + (", ".join(f"{i} after {k} accepted" for i, k in sorted(resumed.items()))
                  or "no thread")
               + f" from its durable checkpoints and ended with exit code {b.returncode} "
               f"{after:.0f} s after the kill; the claim table holds "
               f"{plural(len(stored), 'row')} for {n} questions (a's {a_rows} kept, b answered "
               f"{summary.get('answered_here', '?')}); the run's stored summary counts flare n "
               f"= {counted}, missing {summary.get('missing', '?')}, b printed n = "
               f"{printed.group(1) if printed else 'nothing'}; "
               f"{plural(len(left), 'checkpointed thread')} left", lost, duplicated)


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
    p.add_argument("--lease", type=float, default=LEASE, help=f"seconds ({LEASE})")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "faults.md")
    args = p.parse_args()
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", CORES)
    work = Path(tempfile.mkdtemp(prefix="activerag-fault-h-"))
    began = time.monotonic()
    try:
        with contextlib.ExitStack() as stack, ThreadPoolExecutor(2) as pool:
            starting = [pool.submit(stack.enter_context, realprocs.own_server())
                        for _ in range(2)]
            Corpus(work / "store").ingest(DEMO_CORPUS, dense=False, progress=False)
            first, second = (s.result() for s in starting)
            try:
                row = fault_shared_eval(first, second, work / "store", args.n, args.lease)
            except NotProduced as exc:
                row = Row(NAME, f"NOT PRODUCED: {exc}", "-", "-")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "python -m benchmarks.robustness.fault_shared_eval" + (
        f" --n {args.n}" if args.n != N else "") + (
        f" --lease {args.lease:g}" if args.lease != LEASE else "")
    note = (f"`{command}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{time.monotonic() - began:.0f} s: a throwaway PostgreSQL cluster and two "
            "SmolLM2-135M CPU vLLM servers of its own, BM25 over the demo corpus, the first "
            f"{args.n} demo questions, FLARE with at most 3 sentences; 2 cores shared with "
            "other work), made apart from the rows above.")
    text = write_row(row, args.out, note)
    print(text)
    args.out.write_text(text)
    print(f"written to {args.out}", file=sys.stderr)
    return 0 if not row.happened.startswith("NOT PRODUCED") else 1


if __name__ == "__main__":
    sys.exit(main())

"""Faults against real components, one table (issue #10): results/faults.md.

    python -m benchmarks.robustness.faults [--n 6] [--out results/faults.md] [--keep]

Every fault is done to real processes: `activerag ingest`, `ask` and `eval` run as processes of
their own and are killed with -9; the LM is SmolLM2 on CPU vLLM servers this script starts on
free ports of its own (never a running one) and stops at the end. The store is the demo corpus,
ingested by the ingest fault itself; the questions are the first N demo questions. Each row's
counts are read back from what the faults left: run folders, checkpoint files, the stores,
/proc and the kernel's socket tables.

  a. `ask --thread` (FLARE) killed after its first accepted sentence, then asked again.
  b. `eval` killed while a question is midway, then run again into the same run folder.
  c. `ingest --demo`'s corpus killed once BM25 holds lines, then run again.
  d. the vLLM server killed -9 mid-evaluation and started again on its port.
  e. one of two replicas (comma-separated base_url) killed -9 mid-evaluation.
  f. `serve --stop` given pid files that name live processes that are not its server.
  g. the addresses the servers listen on.
  h. a node of a Ray cluster lost in the middle of `eval --ray` (fault_ray_eval.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from activerag.demo import DEMO_CORPUS
from activerag.evaluation.datasets import load_dataset
from activerag.serving import server
from activerag.serving.replicas import home
from activerag.stores.documents import read_corpus
from activerag.testing import processes as realprocs
from activerag.testing.netcheck import listening_addresses
from benchmarks.publish import publish
from benchmarks.robustness.fault_kit import (  # noqa: F401 (the harness's names, also importable from here)
    CORES,
    NotProduced,
    Row,
    attempt,
    counts,
    crash,
    eval_args,
    finish,
    ids_in,
    plural,
    row_ids,
    table,
    under_way,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[2]

QUESTION = "In which city was the founder of Daeselin Company born?"
RECONNECT = 300
"""ACTIVERAG_LM_RECONNECT of the restart fault: how long the run may wait for its server."""
N = 5
"""Demo questions per evaluation: 2 of the first 5 have the second replica as their home."""


# -- c. ingest ---------------------------------------------------------------------------------

def fault_ingest(store: Path) -> Row:
    expected = {d.id for d in read_corpus(DEMO_CORPUS)}
    bm25 = store / "bm25" / "docs.jsonl"
    first = realprocs.ingest(DEMO_CORPUS, store)
    wait_for(lambda: realprocs.lines(bm25) > 0, first, "BM25 held a line", every=0.05)
    crash(first)
    at_kill_bm25, at_kill_chroma = realprocs.lines(bm25), len(realprocs.chroma_ids(store))
    finish(realprocs.ingest(DEMO_CORPUS, store))
    rows, damaged = ids_in(bm25)
    chroma = realprocs.chroma_ids(store)
    lost = len(expected - set(rows)) + len(expected - set(chroma))
    duplicated = (len(rows) - len(set(rows))) + (len(chroma) - len(set(chroma)))
    foreign = len(set(rows) - expected) + len(set(chroma) - expected)
    return Row("c. `ingest` (demo corpus, BM25 + Chroma) killed -9, run again",
               f"killed with BM25 at {at_kill_bm25} and Chroma at {at_kill_chroma} of "
               f"{len(expected)} passages; after the rerun BM25 holds {len(rows)} lines "
               f"({len(set(rows))} ids), Chroma {len(chroma)} ids ({len(set(chroma))} distinct)"
               + (f"; {foreign} ids not in the corpus" if foreign else "")
               + (f"; {plural(damaged, 'unreadable BM25 line')}" if damaged else ""),
               lost, duplicated)


# -- a. ask --thread ---------------------------------------------------------------------------

def _trace_of(checkpoints: Path) -> list[Any]:
    try:
        return list(realprocs.thread_state(checkpoints)[0].values.get("trace", []))
    except sqlite3.OperationalError:  # the other process is making the tables, or writing
        return []


def fault_ask(url: str, store: Path, work: Path) -> Row:
    checkpoints = work / "threads.sqlite"
    first = realprocs.ask(url, store, checkpoints, QUESTION)
    wait_for(lambda: checkpoints.exists() and bool(_trace_of(checkpoints)), first,
             "an accepted sentence")
    crash(first)
    state, _ = realprocs.thread_state(checkpoints)
    before = json.loads(json.dumps(state.values.get("trace", []), default=str))
    at_kill = state.config["configurable"]["checkpoint_id"]
    out, err = finish(realprocs.ask(url, store, checkpoints, QUESTION))
    after = json.loads(out)["trace"]
    _, history = realprocs.thread_state(checkpoints)  # newest first
    since = []
    for snap in history:
        if snap.config["configurable"]["checkpoint_id"] == at_kill:
            break
        since.append(snap)
    # a rerun that started over writes checkpoints holding fewer sentences than at the kill
    fewest = min((len(s.values.get("trace", [])) for s in since), default=len(before))
    redone = max(0, len(before) - fewest)
    kept = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
                min(len(before), len(after)))
    inputs = [s.metadata.get("source") for s in history].count("input")
    resumed = "resuming after" in err
    return Row("a. `ask --thread` (FLARE, SQLite checkpoints) killed -9 mid-question, asked "
               "again",
               f"killed after {plural(len(before), 'accepted sentence')} (next: "
               f"{', '.join(state.next) or 'nothing'}); the rerun "
               f"{'said it resumed' if resumed else 'did NOT say it resumed'}, kept "
               f"{kept} of them unchanged, redid {redone}, accepted {len(after) - len(before)} "
               f"more; {plural(inputs, 'input checkpoint')} in the thread",
               len(before) - kept, redone)


# -- b. eval killed ----------------------------------------------------------------------------

def fault_eval(url: str, store: Path, work: Path, n: int) -> Row:
    run = work / "eval-run"
    checkpoints = run / "checkpoints.sqlite"
    args = eval_args(url, store, run, n, concurrency=2)
    first = realprocs.cli(*args)

    def midway() -> bool:
        ids = set(row_ids(run)[0])
        try:
            return bool(ids) and any(under_way(checkpoints, ids).values())
        except sqlite3.OperationalError:  # the run is making the tables, or writing
            return False

    wait_for(midway, first, "a kept row and a question midway", every=0.3)
    crash(first)
    kept = row_ids(run)[0]
    midway_at_kill = under_way(checkpoints, set(kept))
    _, err = finish(realprocs.cli(*args))
    resumed = {t: int(k) for t, k in
               re.findall(r"thread (\S+): resuming after (\d+) accepted", err)}
    same = sum(1 for t, k in midway_at_kill.items() if resumed.get(t) == k)
    phrase, lost, twice = counts(run, n)
    left = realprocs.threads(checkpoints)
    return Row("b. `eval` killed -9 mid-run, run again into the same run folder",
               f"killed with {plural(len(kept), 'row')} kept and "
               f"{plural(len(midway_at_kill), 'question')} under way ("
               + ", ".join(f"{t.split('/')[-1]}: {k} accepted" for t, k in
                           sorted(midway_at_kill.items()))
               + f"); the rerun resumed {same} of them from their checkpoints, with those "
               "sentences"
               f"{'' if len(resumed) == same else f' ({len(resumed)} resumed in all)'}; "
               f"{phrase}; {plural(len(left), 'checkpointed thread')} left", lost, twice)


# -- d. the server restarted -------------------------------------------------------------------

def fault_restart(url: str, store: Path, work: Path, n: int) -> tuple[Row, set[str]]:
    run = work / "restart-run"
    proc = realprocs.cli(*eval_args(url, store, run, n, concurrency=2),
                         env={"ACTIVERAG_LM_RECONNECT": str(RECONNECT)})
    wait_for(lambda: len(row_ids(run)[0]) >= 2, proc, "two kept rows")
    kept = len(row_ids(run)[0])
    killed_at = time.monotonic()
    pgid = realprocs.kill_server(url)
    settings = realprocs.settings_of(url)
    server.pid_path(settings).unlink()
    wait_for(lambda: not realprocs.group_alive(pgid), None, "the server's death", 60)
    time.sleep(3)
    waited = proc.poll() is None
    realprocs.start(settings)
    down = time.monotonic() - killed_at
    addresses = listening_addresses(settings.port)
    _, err = finish(proc)
    retries = len(re.findall(r"waiting \d+ s for a server to come back", err))
    phrase, lost, twice = counts(run, n)
    row = Row("d. the vLLM server killed -9 mid-evaluation and started again",
              f"killed with {plural(kept, 'row')} kept; 3 s later the run "
              f"{'was still waiting' if waited else 'had ENDED'}; the server answered again "
              f"after {down:.0f} s, in which the run's requests logged {retries} retries "
              f"(backoff 1-10 s, bounded by ACTIVERAG_LM_RECONNECT={RECONNECT} s); the run "
              f"went on and ended with exit code {proc.returncode}; {phrase}", lost, twice)
    return row, addresses


# -- e. a replica killed -----------------------------------------------------------------------

def fault_replica(first: str, second: str, store: Path, work: Path, n: int) -> Row:
    run = work / "replica-run"
    ids = [e.id for e in load_dataset("demo", n)]
    homed = sum(1 for i in ids if home(i, 2) == 1)
    base = realprocs.requests_logged(second)
    proc = realprocs.cli(*eval_args(f"{first},{second}", store, run, n, concurrency=4))
    wait_for(lambda: realprocs.requests_logged(second) - base >= 2, proc,
             "two requests to the second replica", every=0.5)
    realprocs.kill_server(second)
    asked = realprocs.requests_logged(second) - base
    at_kill = realprocs.requests_logged(first)
    kept = len(row_ids(run)[0])
    _, err = finish(proc)
    after = realprocs.requests_logged(first) - at_kill
    failures = len(re.findall(r"replica \S+ failed", err))
    phrase, lost, twice = counts(run, n)
    return Row("e. one of two replicas (two CPU vLLM servers, comma-separated base_url) killed "
               "-9 mid-evaluation",
               f"{homed} of {n} questions had the killed replica as home; it was killed once "
               f"it had been sent {asked} requests, with {plural(kept, 'row')} kept; the client "
               f"logged {plural(failures, 'failed request')} there, and the other replica was "
               f"sent {after} requests after the kill; {phrase}", lost, twice)


# -- f. stale pid files ------------------------------------------------------------------------

def fault_stale_pid(url: str, work: Path) -> Row:
    cache = work / "stale-home"
    cache.mkdir()
    env = {"ACTIVERAG_HOME": str(cache)}
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        port = realprocs.free_port()
        (cache / f"vllm-{port}.pid").write_text(f"{bystander.pid}\n{port}\n")
        said = finish(realprocs.cli("serve", "--stop", "--port", str(port), env=env), 120)[0]
        sleep_alive = bystander.poll() is None
        gone = not (cache / f"vllm-{port}.pid").exists()
        # our own vLLM server, named by the pid file of another port
        pgid = realprocs.server_pgid(realprocs.settings_of(url))
        assert pgid is not None
        other = realprocs.free_port()
        (cache / f"vllm-{other}.pid").write_text(f"{pgid}\n{other}\n")
        said2 = finish(realprocs.cli("serve", "--stop", "--port", str(other), env=env), 120)[0]
        vllm_alive = realprocs.group_alive(pgid) and bool(server.server_models(url))
    finally:
        bystander.kill()
        bystander.wait()
    return Row("f. `serve --stop` given a stale pid file that names a live unrelated process",
               f"a pid file naming a live `sleep` (pid {bystander.pid}): `serve --stop --port "
               f"{port}` printed \"{said.strip()}\", the sleep "
               f"{'still ran' if sleep_alive else 'was KILLED'}, the file was "
               f"{'removed' if gone else 'left'}; a pid file for port {other} naming our live "
               f"vLLM server of port {urlparse(url).port}: \"{said2.strip()}\", that server "
               f"{'still answered' if vllm_alive else 'DIED'}",
               int(not sleep_alive) + int(not vllm_alive), "-")


# -- the table ---------------------------------------------------------------------------------

def loopback_row(addresses: dict[str, set[str]]) -> Row:
    wide = [k for k, v in addresses.items() if v != {"127.0.0.1"}]
    return Row("g. the servers' listening addresses (kernel socket tables, "
               "activerag/testing/netcheck.py)",
               "; ".join(f"vLLM {k}: {', '.join(sorted(v)) or 'nothing'}"
                         for k, v in addresses.items())
               + (f"; {len(wide)} listened beyond 127.0.0.1" if wide else
                  "; none beyond 127.0.0.1"), "-", "-")


def faults(work: Path, n: int) -> list[Row]:
    """Make every fault; the rows in the order made."""
    store = work / "store"
    rows: list[Row] = []
    addresses: dict[str, set[str]] = {}
    # the stack stops both servers after the pool has finished starting them
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        starting = [pool.submit(stack.enter_context, realprocs.own_server()) for _ in range(2)]
        attempt("c", rows, lambda: fault_ingest(store))  # while the servers start
        url, second = (s.result() for s in starting)
        for u in (url, second):
            addresses[f":{urlparse(u).port}"] = listening_addresses(urlparse(u).port or 0)
        attempt("f", rows, lambda: fault_stale_pid(url, work))
        attempt("a", rows, lambda: fault_ask(url, store, work))
        attempt("b", rows, lambda: fault_eval(url, store, work, n))

        def restart() -> Row:
            row, again = fault_restart(url, store, work, n)
            addresses[f":{urlparse(url).port} restarted"] = again
            return row

        attempt("d", rows, restart)
        from benchmarks.robustness.fault_ray_eval import (
            fault_ray_eval,  # it imports this module's parts
        )

        attempt("h", rows, lambda: fault_ray_eval(url, store, n))  # before e kills
        attempt("e", rows, lambda: fault_replica(url, second, store, work, n))
    rows.append(loopback_row(addresses))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=N, help=f"demo questions per evaluation ({N})")
    p.add_argument("--out", default=str(ROOT / "results" / "faults.md"))
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args()
    # our servers' workers (and nothing else of ours runs vLLM) go on core CORES
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", CORES)
    work = Path(tempfile.mkdtemp(prefix="activerag-faults-"))
    began = time.monotonic()
    try:
        rows = sorted(faults(work, args.n), key=lambda r: r.fault)
    finally:
        if args.keep:
            print(f"work folder: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    command = "python -m benchmarks.robustness.faults" + (f" --n {args.n}" if args.n != N else "")
    text = (f"`{command}` ({time.monotonic() - began:.0f} s: SmolLM2-135M on two CPU vLLM "
            f"servers of its own, the demo corpus, the first {args.n} demo questions per "
            "evaluation, FLARE with at most 3 sentences; 2 cores shared with other work)\n\n"
            + table(rows))
    publish(text, args.out)
    return 0 if all(not r.happened.startswith("NOT PRODUCED") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

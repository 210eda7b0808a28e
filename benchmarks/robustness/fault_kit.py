"""The fault harness's parts (benchmarks/robustness/faults.py, fault_ray_eval.py): a fault's
table row,
waiting for a process to reach a state, killing and reaping it, and reading what a run folder
and its checkpoints say was lost or done twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from activerag.evaluation.datasets import load_dataset
from activerag.testing import processes as realprocs

CORES = "1"
"""Where our servers' workers run: off core 0, where a running vLLM pins its own by default."""


@dataclass
class Row:
    fault: str
    happened: str
    lost: int | str
    duplicated: int | str


class NotProduced(RuntimeError):
    """The fault could not be made (the process ended before it could be killed, ...)."""


def wait_for(ready: Callable[[], bool], proc: subprocess.Popen[str] | None, what: str,
             timeout: float = 600.0, every: float = 0.2) -> None:
    """Poll READY until true; NotProduced if PROC ends first or TIMEOUT passes."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc is not None and proc.poll() is not None:
            raise NotProduced(f"the process ended before {what}: {proc.stderr.read()[-500:]}"
                              if proc.stderr else f"the process ended before {what}")
        if time.monotonic() > deadline:
            raise NotProduced(f"no {what} within {timeout:.0f} s")
        time.sleep(every)


def crash(proc: subprocess.Popen[str]) -> None:
    """kill -9 PROC (a process this script started) and reap it."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()


def finish(proc: subprocess.Popen[str], timeout: float = 600.0) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise NotProduced(f"the rerun failed ({proc.returncode}): {err[-800:]}")
    return out, err


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def eval_args(url: str, store: Path, run: Path, n: int, concurrency: int) -> list[str]:
    return ["eval", "--dataset", "demo", "--methods", "flare", "--n", str(n), "--run", str(run),
            "--base-url", url, "--store", str(store), "--max-sentences", "3",
            "--concurrency", str(concurrency)]


def row_ids(run: Path) -> tuple[list[str], int]:
    """The ids of the rows in RUN's examples.jsonl, every line counted, and the lines that are
    not rows."""
    return ids_in(run / "examples.jsonl")


def ids_in(file: Path) -> tuple[list[str], int]:
    """The "id" of every JSON line of FILE, repeats kept, and the lines that hold none."""
    ids, damaged = [], 0
    for line in file.read_text().splitlines() if file.exists() else []:
        try:
            ids.append(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError):
            damaged += 1
    return ids, damaged


def counts(run: Path, n: int) -> tuple[str, int, int]:
    """What RUN's rows say against the first N demo questions: a phrase, lost, duplicated."""
    expected = {e.id for e in load_dataset("demo", n)}
    ids, damaged = row_ids(run)
    twice = sum(c - 1 for c in Counter(ids).values() if c > 1)
    phrase = (f"{plural(len(ids), 'row')} for {n} examples"
              + (f", {plural(damaged, 'unreadable line')}" if damaged else ""))
    return phrase, len(expected - set(ids)), twice


def under_way(checkpoints: Path, done: set[str]) -> dict[str, int]:
    """The unfinished questions in an evaluation's CHECKPOINTS: thread -> sentences accepted."""
    out = {}
    for thread in realprocs.threads(checkpoints):
        if thread.split("/", 1)[-1] in done:
            continue
        state = realprocs.thread_state(checkpoints, thread)[0]
        if state.next:
            out[thread] = len(state.values.get("trace", []))
    return out


def table(rows: list[Row]) -> str:
    lines = ["| fault | what happened | lost | duplicated |", "|---|---|---|---|"]
    lines += [f"| {r.fault} | {r.happened} | {r.lost} | {r.duplicated} |" for r in rows]
    return "\n".join(lines) + "\n"


def attempt(name: str, rows: list[Row], run: Callable[[], Row]) -> None:
    start = time.monotonic()
    try:
        rows.append(run())
    except NotProduced as exc:
        rows.append(Row(name, f"NOT PRODUCED: {exc}", "-", "-"))
    print(f"{name}: {time.monotonic() - start:.0f} s\n{table(rows[-1:])}", file=sys.stderr,
          flush=True)

"""Concurrent FLARE runs through the LangGraph dev server (what Studio talks to), checked for
crosstalk.

    python -m benchmarks.cost.dev_server_load [--runs 32] [--jobs N] [--base-url URL] [--store DIR]
                                         [--out results/dev-server-load.md]

Starts `langgraph dev` as the integration tests do (activerag.testing.dev_server), over a BM25
store of the demo corpus made for the run (or --store), and the vLLM server of
ACTIVERAG_BASE_URL / --base-url (`activerag serve`). One warm-up run of a question outside the
set goes first and alone; then RUNS distinct demo questions are sent at once through
langgraph_sdk, each on a thread of its own, with the server allowed to execute JOBS runs at
once (default: RUNS). Latency is each run's wall time from its request to its answer, as the
client sees it.

Crosstalk is checked per run from the thread's state and history (the server's checkpointer):
the final state's question is the one sent and its answer and trace are the run's output; and
every query-formulation and retrieval node of the run is replayed here on the state its
checkpoint recorded, with the same code and store, and must give exactly the queries and
documents the server recorded. Runs that failed count as errors; the checks count apart.
Writes a Markdown report; nothing is asserted.

With --postgres the server keeps its threads in PostgreSQL instead of its own in-memory store:
langgraph.json's `checkpointer` names activerag.durable.postgres.dev_checkpointer, and the database
is ACTIVERAG_DATABASE_URL, else a throwaway cluster this script starts and stops
(activerag.testing.postgres); the default report is then results/dev-server-load-postgres.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langgraph.runtime import Runtime
from langgraph_sdk import get_client

from activerag.context import FlareContext
from activerag.demo import DEMO_CORPUS, load_demo_questions
from activerag.nodes import loop
from activerag.nodes.flare import steps as flare_nodes
from activerag.nodes.parts import Parts
from activerag.serving import server
from activerag.settings import Settings
from activerag.stores.corpus import Corpus
from activerag.testing.dev_server import dev_server
from benchmarks.publish import publish

ROOT = Path(__file__).resolve().parents[2]
KEPT = {False: "the server's in-memory runtime",
        True: "PostgreSQL (activerag.durable.postgres.dev_checkpointer)"}


@dataclass
class Run:
    """One question's run through the server and what its checks found."""

    qid: str
    question: str
    seconds: float = 0.0
    error: str = ""
    answer: str = ""
    sentences: int = 0
    retrievals: int = 0
    lm_calls: int = 0
    replayed: int = 0
    problems: list[str] = field(default_factory=list)


def _ids(value: Any) -> Any:
    """VALUE with every document (a Document or its JSON) replaced by its id."""
    if isinstance(value, Document):
        return value.id
    if isinstance(value, dict):
        if "page_content" in value:
            return value.get("id")
        return {k: _ids(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_ids(v) for v in value]
    return value


async def ask(client: Any, run: Run, context: dict[str, Any]) -> Run:
    """Send RUN's question on a thread of its own and wait for its answer."""
    thread = await client.threads.create(metadata={"qid": run.qid})
    start = time.perf_counter()
    try:
        out = await client.runs.wait(thread["thread_id"], "flare",
                                     input={"question": run.question}, context=context)
    except Exception as exc:  # a failed run is counted and reported, not raised
        run.seconds = time.perf_counter() - start
        run.error = f"{type(exc).__name__}: {exc}"[:300]
        return run
    run.seconds = time.perf_counter() - start
    run.answer, run.sentences = out.get("answer", ""), len(out.get("trace", []))
    run.retrievals, run.lm_calls = out.get("retrieval_steps", 0), out.get("lm_calls", 0)
    await check(client, thread["thread_id"], run, out, context)
    return run


async def check(client: Any, thread_id: str, run: Run, out: dict[str, Any],
                context: dict[str, Any]) -> None:
    """Check that RUN's thread holds its own question, answer and trace, and that every query
    and every retrieval it recorded is what its own state gives when replayed here."""
    state = (await client.threads.get_state(thread_id))["values"]
    if state.get("question") != run.question:
        run.problems.append(f"final state's question is {state.get('question')!r}")
    for key in ("answer", "trace"):
        if state.get(key) != out.get(key):
            run.problems.append(f"final state's {key} differs from the run's output")
    ctx = FlareContext(**context)
    runtime = Runtime(context=ctx)
    parts = Parts()
    nodes = {"retrieve_input": loop.make_retrieve_input(parts),
             "formulate_query": flare_nodes.make_formulate_query(parts),
             "retrieve": loop.make_retrieve(parts)}
    history = await client.threads.get_history(thread_id, limit=1000)
    formulated: list[list[str]] = []
    for checkpoint in reversed(history):
        for task in checkpoint["tasks"]:
            if task["name"] not in nodes or task.get("result") is None:
                continue
            if checkpoint["values"].get("question") != run.question:
                run.problems.append(f"{task['name']} ran on another question's state")
            replay = await nodes[task["name"]](checkpoint["values"], runtime)  # type: ignore[arg-type]
            run.replayed += 1
            if _ids(replay) != _ids(task["result"]):
                run.problems.append(f"{task['name']} (step {checkpoint['metadata']['step']}) "
                                    f"wrote {_ids(task['result'])}, replayed {_ids(replay)}")
            if task["name"] == "formulate_query":
                formulated.append(task["result"]["step"]["queries"])
    fired = [step["queries"] for step in out.get("trace", []) if step["retrieved"]]
    if fired != formulated:
        run.problems.append(f"trace's queries {fired} are not the formulated {formulated}")


def percentile(values: list[float], q: float) -> float:
    """The Q-th percentile (0-100) of VALUES, interpolated between closest ranks."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def report(args: argparse.Namespace, runs: list[Run], warm: Run, wall: float,
           model: str, loads: tuple[float, float]) -> str:
    ok = [r for r in runs if not r.error]
    errors = [r for r in runs if r.error]
    crossed = [r for r in ok if r.problems]
    secs = [r.seconds for r in ok]
    stats = (f"{statistics.median(secs):.1f} s | {percentile(secs, 95):.1f} s | "
             f"{min(secs):.1f} s | {max(secs):.1f} s" if secs else "- | - | - | -")
    command = "python -m benchmarks.cost.dev_server_load " + " ".join(sys.argv[1:])
    lines = [
        "# FLARE through the LangGraph dev server under load",
        "",
        f"`{command.strip()}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{_cores()} cores shared with other work: 1-minute load average {loads[0]:.1f} "
        f"before the runs, {loads[1]:.1f} after; Python {platform.python_version()})",
        "",
        f"{len(runs)} FLARE runs sent at once through `langgraph dev` with langgraph_sdk, each "
        f"on its own thread, distinct demo questions; the server executes up to {args.jobs} "
        f"runs at once. LM: {model} on vLLM (CPU) at {args.base_url}; BM25 over the demo "
        f"corpus; FLARE's default settings (θ 0.8, β 0.4, k 2, 256 answer tokens). Threads "
        f"kept in {KEPT[args.postgres]}. A warm-up "
        f"run of another question went first, alone: {warm.seconds:.1f} s"
        f"{' (failed: ' + warm.error + ')' if warm.error else ''}.",
        "",
        "| runs | errors | crosstalk | p50 | p95 | min | max | all done after | runs/min |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {len(runs)} | {len(errors)} | {len(crossed)} | {stats} | {wall:.1f} s | "
        f"{60 * len(ok) / wall:.1f} |",
        "",
        "Crosstalk: a run whose final state holds another question, answer or trace, or one of "
        "whose query-formulation or retrieval nodes, replayed here on the state its checkpoint "
        f"recorded, gives other queries or documents than the server recorded. "
        f"{sum(r.replayed for r in ok)} node runs were replayed.",
        "",
        "| question | latency | sentences | retrievals | LM calls | replayed | check |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        verdict = r.error or ("; ".join(r.problems) if r.problems else "own question, "
                                                                      "queries and documents")
        lines.append(f"| {r.qid} | {r.seconds:.1f} s | {r.sentences} | {r.retrievals} | "
                     f"{r.lm_calls} | {r.replayed} | {verdict} |")
    return "\n".join(lines) + "\n"


def _cores() -> int:
    return len(os.sched_getaffinity(0))


async def load(url: str, args: argparse.Namespace, context: dict[str, Any]
               ) -> tuple[list[Run], Run, float]:
    # (connect, read, write, pool): a run under load may take many minutes
    client = get_client(url=url, timeout=(30, 3600, 60, 3600))
    questions = load_demo_questions()
    warm = await ask(client, Run(questions[-1]["id"], questions[-1]["question"]), context)
    runs = [Run(q["id"], q["question"]) for q in questions[:args.runs]]
    start = time.perf_counter()
    done = await asyncio.gather(*[ask(client, r, context) for r in runs])
    return list(done), warm, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--jobs", type=int, default=None,
                        help="runs the server executes at once (default: --runs)")
    parser.add_argument("--base-url", default=Settings.from_env().url)
    parser.add_argument("--store", type=Path, default=None,
                        help="a corpus folder (default: the demo corpus, BM25 only, made now)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the report (default: results/dev-server-load.md, or "
                             "dev-server-load-postgres.md with --postgres)")
    parser.add_argument("--postgres", action="store_true",
                        help="keep the server's threads in PostgreSQL (see above)")
    args = parser.parse_args()
    args.out = args.out or ROOT / "results" / (
        "dev-server-load-postgres.md" if args.postgres else "dev-server-load.md")
    questions = load_demo_questions()
    if not 1 <= args.runs < len(questions):
        parser.error(f"--runs must lie in 1..{len(questions) - 1} (distinct demo questions "
                     f"and one more for the warm-up)")
    args.jobs = args.jobs or args.runs
    model = server.server_models(args.base_url)[0]
    with tempfile.TemporaryDirectory(prefix="dev-server-load-") as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "store"
            Corpus(store).ingest(DEMO_CORPUS, dense=False, progress=False)
        context = {"base_url": args.base_url, "store_dir": str(store.resolve())}
        env = {"ACTIVERAG_BASE_URL": args.base_url, "ACTIVERAG_STORE_DIR": context["store_dir"]}
        with contextlib.ExitStack() as stack:
            root = ROOT
            if args.postgres:
                root = Path(tmp) / "root"
                root.mkdir()
                env["ACTIVERAG_DATABASE_URL"] = stack.enter_context(_database())
                config = json.loads((ROOT / "langgraph.json").read_text())
                config["checkpointer"] = {"path": "activerag.durable.postgres.dev_checkpointer"}
                (root / "langgraph.json").write_text(json.dumps(config))
            url = stack.enter_context(dev_server(root, Path(tmp) / "dev.log", env,
                                                 jobs=args.jobs))
            before = os.getloadavg()[0]
            runs, warm, wall = asyncio.run(load(url, args, context))
            after = os.getloadavg()[0]
    publish(report(args, runs, warm, wall, model, (before, after)), args.out)


@contextlib.contextmanager
def _database() -> Any:
    """ACTIVERAG_DATABASE_URL, else a throwaway PostgreSQL cluster's URL for the block."""
    if url := os.environ.get("ACTIVERAG_DATABASE_URL"):
        yield url
        return
    from activerag.testing.postgres import throwaway_postgres

    with throwaway_postgres() as url:
        yield url


if __name__ == "__main__":
    main()

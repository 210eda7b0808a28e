"""`activerag eval --ray`: one evaluation over the actor pool of a Ray cluster.

Each (method, question) key is one row of a Ray Dataset. The rows flow through `map_batches`
into a pool of actors (`Answerer`): each builds its methods' graphs, LM clients and store once,
then answers several questions at once on an event loop of its own. The driver writes each
answered row to the run folder as it arrives, as a local `eval` does, and summarises the folder
at the end: the same config.json, examples.jsonl and summary, so a run started one way
resumes the other.

Exactly once:
- the driver sends only the keys the run folder does not hold, and keeps the first row that
  comes back for a key (a task Ray retried after a node died may answer a key twice: the second
  row is dropped and counted);
- with ACTIVERAG_DATABASE_URL, every question is checkpointed after each step in PostgreSQL
  under an advisory lock of its own: a question whose actor died goes on from its last step on
  another actor, and a stray duplicate waits for the lock and then reads the finished state back
  instead of asking the LM again. At its end the driver drops the checkpoints of every question
  whose row is in the folder (a killed driver's included). Without a database, a question cut
  off starts again.

Ray is the `activerag[ray]` extra; nothing imports it until a run asks for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict
from functools import partial
from typing import Any

from tqdm import tqdm

from activerag import durable
from activerag.context import ServingContext
from activerag.errors import ActiveRagError, SettingError
from activerag.evaluation.datasets import Example
from activerag.evaluation.evaluate import DISAMBIG_NOTE, Run, run_config
from activerag.evaluation.rows import row_of
from activerag.serving.replicas import sticky

Runs = dict[str, tuple[Any, ServingContext]]
RAY_EXTRA = "pip install 'activerag[ray]'"
MAX_BLOCKS = 10_000
"""Keys per run beyond which several share one block (one Ray task answers a block's keys in
turn; below it every key is a task of its own, so a slow question holds up no other)."""
LOCK_POLL = 0.5
"""Seconds between tries for a question's lock held by another actor."""


def need_ray() -> Any:
    """The ray module, or one line that names the extra to install."""
    try:
        import ray
        import ray.data  # noqa: F401 -- the actor pool
    except ImportError as exc:
        raise ActiveRagError(f"eval --ray needs Ray, which is not installed here; install the "
                             f"extra: {RAY_EXTRA}") from exc
    return ray


def parse_actors(text: str) -> tuple[int, int]:
    """--actors: MIN:MAX (the pool grows from MIN to MAX actors while rows wait) or N."""
    lo, colon, hi = text.partition(":")
    try:
        low, high = int(lo), int(hi if colon else lo)
    except ValueError:
        low = high = 0
    if not 1 <= low <= high:
        raise SettingError(f"--actors {text!r} is not MIN:MAX with 1 <= MIN <= MAX (or one "
                           "number N for a pool of N actors); e.g. --actors 1:8")
    return low, high


def _answers(address: str) -> None:
    """Refuse in one line a HOST:PORT (or ray://HOST:PORT) where nothing listens."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise SettingError(f"--ray {address!r} is not an address; give HOST:PORT of the head "
                           "node (as `ray start --head` prints it), ray://HOST:PORT, auto, or "
                           "nothing for a cluster on this machine")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ActiveRagError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); "
                             "start one with `ray start --head`, or leave out the address "
                             "for a cluster on this machine") from exc


@contextmanager
def connected(address: str | None) -> Iterator[Any]:
    """Ray connected to ADDRESS for the block: "auto" (RAY_ADDRESS, else the cluster `ray
    start` made on this machine), HOST:PORT of a head node, ray://HOST:PORT (Ray Client), or
    None: a Ray of this process's own on this machine, bound to 127.0.0.1 and stopped at the
    end. A `ray job submit` run connects to its own cluster with "auto"."""
    ray = need_ray()
    if address not in (None, "auto"):
        _answers(address)
    quiet = {"logging_level": logging.WARNING, "configure_logging": True}
    try:
        if address is None:
            ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False,
                     **quiet)
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ActiveRagError(f"no Ray cluster to join at {address} ({first}); start one with "
                             "`ray start --head`, or leave out the address for a cluster on "
                             "this machine") from exc
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


def registry_runs(contexts: Mapping[str, ServingContext],
                  text_only: frozenset[str] = frozenset()) -> Runs:
    """Each method's registered graph under its context; those named in TEXT_ONLY with a client
    that asks for no logprobs (a server without them, `check_needs`)."""
    from activerag.graphs.registry import METHODS
    from activerag.graphs.registry import text_only as without_logprobs

    return {name: (without_logprobs(name, ctx) if name in text_only else METHODS[name].graph,
                   ctx) for name, ctx in contexts.items()}


def example_row(example: Example) -> str:
    return json.dumps(asdict(example))


def example_of(text: str) -> Example:
    data = json.loads(text)
    data["gold_spans"] = [tuple(span) for span in data["gold_spans"]]
    return Example(**data)


def thread_of(prefix: str, method: str, id_: str) -> str:
    """The durable thread of one key of the run whose threads start with PREFIX."""
    return f"{prefix}/{method}/{id_}"


class Answerer:
    """One actor of the pool. Made once: the driver's LM caches (CACHES, `cache.state()`), its
    methods' graphs (BUILD), an event loop in a thread of its own and, with DATABASE, a
    checkpointer and a connection for the questions' locks.
    Each call answers one batch of keys, all at once; Ray runs several calls at a time."""

    def __init__(self, build: Callable[[], Runs], database: str | None, prefix: str,
                 caches: tuple[Any, Any] = (None, None)) -> None:
        from activerag.serving import cache

        cache.restore(caches)  # the driver's --cache and --cache-samples, on this node's disk
        self.runs, self.prefix = build(), prefix
        self.where = f"the Ray worker on {socket.gethostname()} (pid {os.getpid()})"
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="answerer", daemon=True).start()
        self.saver: Any = None
        self.locks: Any = None
        self._held_here: dict[str, list[Any]] = {}
        if database is not None:
            self._call(self._open(database))

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def _open(self, url: str) -> None:
        import psycopg

        from activerag.durable.postgres import pg_checkpoints

        self._held = pg_checkpoints(url)
        self.saver = await self._held.__aenter__()
        self.locks = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                           connect_timeout=10)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[str]]:
        calls = [asyncio.run_coroutine_threadsafe(self._row(str(m), str(e)), self.loop)
                 for m, e in zip(batch["method"], batch["example"], strict=True)]
        rows = [call.result() for call in calls]
        return {"method": [r["method"] for r in rows], "id": [str(r["id"]) for r in rows],
                "row": [json.dumps(r) for r in rows]}

    async def _row(self, method: str, text: str) -> dict[str, Any]:
        example = example_of(text)
        graph, ctx = self.runs[method]
        given = {"question": example.question,
                 **({"context": example.context} if example.context else {})}
        begun = time.perf_counter()
        try:
            with sticky(example.id):  # one replica per question keeps its prefix cache warm
                if self.saver is None:
                    out = await graph.ainvoke(given, context=ctx)
                else:
                    thread = thread_of(self.prefix, method, example.id)
                    async with self._lock(thread):
                        out = await durable.final(graph, given, ctx, self.saver, thread)
        except ActiveRagError as exc:
            raise ActiveRagError(f"{self.where}: {exc}") from None
        return row_of(method, example, out, time.perf_counter() - begun)

    @asynccontextmanager
    async def _lock(self, thread: str) -> AsyncIterator[None]:
        """THREAD's locks for the block: a duplicate of a question another actor is answering
        waits on the advisory lock, one this actor is answering (a retried task sent here
        too) on the local one, since a session's advisory locks let that session in again;
        either then finds the finished state in the checkpoints."""
        held = self._held_here.setdefault(thread, [asyncio.Lock(), 0])
        held[1] += 1
        try:
            async with held[0]:
                take = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
                while not (await (await self.locks.execute(take, (thread,))).fetchone())[0]:
                    await asyncio.sleep(LOCK_POLL)
                try:
                    yield
                finally:
                    await self.locks.execute(
                        "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (thread,))
        finally:
            held[1] -= 1
            if not held[1]:  # nobody else wants it: forget the thread's local lock
                del self._held_here[thread]


def _user_error(exc: BaseException) -> ActiveRagError | None:
    """The ActiveRagError a failed Ray task carries, however Ray wrapped it (RayTaskError keeps
    the original as `cause`; Ray Data chains its own errors on it)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        cause = getattr(seen, "cause", None)
        if isinstance(cause, ActiveRagError):
            return cause
        if isinstance(seen, ActiveRagError) and cause is None:
            return seen
        seen = cause if isinstance(cause, BaseException) else seen.__cause__
    return None


def evaluate_on_ray(run: Run, dataset: str, runs: Runs, examples: list[Example], *,
                    address: str | None = None, actors: tuple[int, int] = (1, 4),
                    concurrency: int = 4, database: str | None = None,
                    build: Callable[[], Runs] | None = None, actor_cpus: float = 1.0,
                    progress: bool = True) -> dict[str, Any]:
    """Answer every key of RUNS × EXAMPLES not in RUN's folder on the Ray cluster at ADDRESS
    (None: one on this machine), ACTORS (min, max) actors answering CONCURRENCY questions each;
    the run's summary. Each actor calls BUILD (default: `registry_runs` of RUNS's contexts)
    for its graphs; DATABASE (ACTIVERAG_DATABASE_URL) checkpoints the questions under way."""
    if concurrency < 1:
        raise SettingError(f"--concurrency {concurrency} must be at least 1")
    if not 0 < actor_cpus < float("inf"):
        raise SettingError(f"--actor-cpus {actor_cpus} is not a number of CPUs above 0; give "
                           "e.g. 1, or 0.25 for actors that mostly wait on a remote LM")
    with run.writing():
        run.start(run_config(dataset, runs, examples))
        done = {(r["method"], str(r["id"])) for r in run.rows()}
        todo = [{"method": m, "example": example_row(e)} for m in runs for e in examples
                if (m, str(e.id)) not in done]
        prefix = f"ray:{run.path.resolve()}"
        begun, dropped, nodes, first = time.perf_counter(), 0, 0, None
        resumed_from = len(done)
        try:
            if todo:
                from activerag.serving import cache

                with connected(address) as ray:
                    nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
                    pool = ray.data.ActorPoolStrategy(
                        min_size=actors[0], max_size=actors[1],
                        max_tasks_in_flight_per_actor=2 * concurrency,
                        max_concurrent_calls_per_actor=concurrency,
                        enable_true_multi_threading=True)
                    rows = ray.data.from_items(
                        todo, override_num_blocks=min(len(todo), MAX_BLOCKS)).map_batches(
                        Answerer, batch_size=1, compute=pool, num_cpus=actor_cpus,
                        fn_constructor_kwargs={"build": build or partial(registry_runs, {
                            m: ctx for m, (_, ctx) in runs.items()}), "database": database,
                            "prefix": prefix, "caches": cache.state()})
                    with tqdm(total=len(runs) * len(examples), initial=len(done),
                              desc="eval --ray", disable=not progress, file=sys.stderr) as bar:
                        for item in _iterate(rows):
                            key = (str(item["method"]), str(item["id"]))
                            if key in done:
                                dropped += 1
                                continue
                            run.append(json.loads(item["row"]))
                            first = first or time.perf_counter() - begun
                            done.add(key)
                            bar.update(1)
        finally:
            if database is not None and done:  # a killed driver's rows' threads too
                from activerag.durable.postgres import forget_threads

                forget_threads(database, [thread_of(prefix, m, i) for m, i in done])
        context = next(iter(runs.values()))[1]
        extra = {"dataset": dataset, "n": len(examples), "context": asdict(context),
                 "wall_seconds": time.perf_counter() - begun, "resumed_from": resumed_from,
                 "ray": {"address": address or "local", "actors": list(actors),
                                       "concurrency": concurrency, "nodes": nodes,
                                       "duplicates_dropped": dropped,
                                       "first_row_seconds": first}}
        if any(e.kind == "long" for e in examples):
            extra["note"] = DISAMBIG_NOTE
        return run.write_summary(extra)


def _iterate(rows: Any) -> Iterator[dict[str, Any]]:
    """ROWS as they come, a failed task's ActiveRagError raised as itself (one line)."""
    try:
        yield from rows.iter_rows()
    except Exception as exc:
        found = _user_error(exc)
        if found is None:
            raise
        raise found from None

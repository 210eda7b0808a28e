"""`activerag eval --ray` on real Ray clusters of this session's own (issue #57).

Every Ray process binds to 127.0.0.1 and carries a token of the session's own
(activerag.testing.ray_nodes.isolate); each cluster is stopped by its own processes' ids, never
by `ray stop`. The LM is the real llama-server where its answers are compared, else the fake
vLLM of activerag.testing.fake_lm with a fixed latency, whose request log says which question
asked what.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from activerag.context import FlareContext
from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.evaluate import Run, evaluate, method_runs
from activerag.evaluation.on_ray import evaluate_on_ray
from activerag.testing import processes as realprocs
from activerag.testing.fake_lm import Backend, backend
from activerag.testing.postgres import checkpointed as in_database
from activerag.testing.ray_nodes import (
    actor_node,
    descendants,
    isolate,
    listening_hosts,
    local_cluster,
    ray_head,
)

pytestmark = pytest.mark.integration
isolate()


def wait_for(ready: Callable[[], bool], what: str, timeout: float = 300.0,
              process: subprocess.Popen[str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if process is not None and process.poll() is not None:
            pytest.fail(f"the driver ended ({process.returncode}) before {what}: "
                        f"{process.stderr.read() if process.stderr else ''}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen in {timeout:.0f} s")
        time.sleep(0.3)


def keys(run: Path) -> Counter[tuple[str, str]]:
    """(method, id) of every line of the run folder's rows file, counted."""
    rows = run / "examples.jsonl"
    if not rows.exists():
        return Counter()
    return Counter((r["method"], str(r["id"])) for r in
                   (json.loads(line) for line in rows.read_text().splitlines() if line.strip()))


def answered(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows, less the seconds each took."""
    return {(r["method"], str(r["id"])): {k: v for k, v in r.items() if k != "seconds"}
            for r in map(json.loads, (run / "examples.jsonl").read_text().splitlines())}


def cached(path: Path) -> int:
    """Entries in every table of the LM cache file at PATH."""
    with sqlite3.connect(path) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables)


def test_the_rows_of_eval_ray_are_the_rows_of_a_local_eval(tmp_path, llama_url, demo_store):
    """The real llama-server, and the LM cache on (`--cache`): a local eval fills it; the same
    run answered by the actors of a Ray of its own (--ray with no address) asks the LM nothing
    new, which it could only do by sending byte for byte the same requests, and its rows are the
    local rows. (llama-server itself is not batch-invariant: two live runs at concurrency 2 gave
    other FLARE answers for 2 of 3 questions, here as well as between two local runs.)"""
    from activerag.serving import cache

    saved = cache.state()
    cache.enable(tmp_path / "lm-cache.sqlite")
    try:
        ctx = FlareContext(base_url=llama_url, store_dir=str(demo_store), max_answer_tokens=48)
        runs = method_runs(["single", "flare"], ctx)
        examples = load_dataset("demo", 3)
        asyncio.run(evaluate(Run(tmp_path / "local"), "demo", runs, examples, 2,
                             progress=False))
        filled = cached(tmp_path / "lm-cache.sqlite")
        summary = evaluate_on_ray(Run(tmp_path / "ray"), "demo", runs, examples, address=None,
                                  actors=(1, 1), concurrency=2, progress=False)
    finally:
        cache.restore(saved)
    assert summary["finished"] == 6 and summary["missing"] == 0
    assert filled > 6 and cached(tmp_path / "lm-cache.sqlite") == filled  # nothing new asked
    assert answered(tmp_path / "ray") == answered(tmp_path / "local")
    assert json.loads((tmp_path / "ray" / "config.json").read_text()) == json.loads(
        (tmp_path / "local" / "config.json").read_text())


def test_a_worker_node_lost_mid_run_leaves_every_key_once(tmp_path, demo_store):
    """A 3-node cluster (a head without CPUs, two workers of one actor each): the node of one
    actor is killed with its processes mid-run, then a node added. Every key is in the run
    folder once, none is missing, and the summary counts each once."""
    examples = load_dataset("demo", 24)
    fake = Backend(latency=0.3)
    with backend(fake) as url, local_cluster(workers=2, worker_cpus=1) as cluster:
        runs = method_runs(["single"], FlareContext(base_url=url, store_dir=str(demo_store)))
        run = tmp_path / "run"
        out: dict[str, Any] = {}

        def drive() -> None:
            try:
                out["summary"] = evaluate_on_ray(Run(run), "demo", runs, examples,
                                                 address=cluster.address, actors=(2, 2),
                                                 concurrency=2, progress=False)
            except BaseException as exc:  # noqa: BLE001 -- shown by the test
                out["error"] = exc

        driver = threading.Thread(target=drive)
        driver.start()
        wait_for(lambda: sum(keys(run).values()) >= 3 and actor_node(cluster) is not None,
                 "3 rows written and an actor on a worker node")
        before = sum(keys(run).values())
        hosts = listening_hosts(descendants(os.getpid()))
        cluster.remove_node(actor_node(cluster), allow_graceful=False)
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=1)
        driver.join(600)
    assert "error" not in out, out.get("error")
    assert hosts == {"127.0.0.1"}  # every node's listeners, and nothing on another address
    assert before < len(examples)  # the node was lost mid-run
    found = keys(run)
    assert set(found) == {("single", str(e.id)) for e in examples}
    assert set(found.values()) == {1}
    assert out["summary"]["finished"] == 24 and out["summary"]["summary"]["single"]["n"] == 24


def prompt_of(fake: Backend, body: dict[str, Any]) -> str:
    prompt = body.get("prompt", "")
    return "".join(fake.word(i) for i in prompt) if isinstance(prompt, list) else str(prompt)


def checkpointed(database: str) -> dict[str, int]:
    """The run's threads that hold checkpoints, and how many each."""
    return in_database(database, "ray:")


@pytest.mark.parametrize("database", [None, "postgres"])
def test_the_driver_killed_and_run_again(tmp_path, demo_store, database, request):
    """`ray start --head` of the test's own; `activerag eval --ray ADDRESS` killed with SIGKILL
    while questions are under way, then run again: it asks the LM nothing for a question
    already in the run folder (without a database the folder is all that says so) and every key
    is there once. With PostgreSQL, a question cut off goes on from its last step, and no
    checkpoint is left behind."""
    url_db = request.getfixturevalue("postgres_url") if database else None
    examples = load_dataset("demo", 8)
    question = {str(e.id): e.question for e in examples}
    run = tmp_path / "run"
    fake = Backend(latency=0.25)
    with backend(fake) as url, ray_head(tmp_path / "ray", cpus=2) as (address, head):
        argv = ["eval", "--ray", address, "--dataset", "demo", "--methods", "flare",
                "--n", "8", "--run", str(run), "--base-url", url, "--store", str(demo_store),
                "--max-sentences", "3", "--concurrency", "2", "--actors", "1:1"]
        env = {"ACTIVERAG_DATABASE_URL": url_db} if url_db else {}
        first = realprocs.cli(*argv, env=env)

        def midway() -> list[str]:
            if url_db is None:
                return ["-"]
            done = {f"/flare/{i}" for _, i in keys(run)}
            return [t for t in checkpointed(url_db) if not t.endswith(tuple(done))]

        wait_for(lambda: sum(keys(run).values()) >= 2 and bool(midway()),
                 "2 rows written and a question under way", process=first)
        hosts = listening_hosts(descendants(head.pid) | descendants(first.pid))
        first.kill()
        first.wait()
        finished = {i for _, i in keys(run)}
        cut = {t.rsplit("/", 1)[1] for t in midway()} if url_db else set()
        time.sleep(5)  # the dead driver's job and its actors go
        seen = len(fake.requests)
        second = realprocs.cli(*argv, env=env)
        stdout, stderr = second.communicate(timeout=600)
        assert head.poll() is None  # the head outlived both drivers
    assert second.returncode == 0, stderr
    assert hosts == {"127.0.0.1"}  # the head, its actors and the driver
    later = [prompt_of(fake, body) for path, body in fake.requests[seen:]
             if path == "/v1/completions"]
    asked_again = {i for i in finished if any(question[i] in p for p in later)}
    assert finished and not asked_again, f"finished questions asked again: {asked_again}"
    assert len(finished) < len(examples) and later  # the rerun had questions left to ask
    found = keys(run)
    assert set(found) == {("flare", str(e.id)) for e in examples} and set(found.values()) == {1}
    assert "| flare | 8 |" in stdout
    if url_db is not None:
        assert cut - finished, "a question was under way at the kill"
        assert "resuming after" in stderr
        assert checkpointed(url_db) == {}


def test_the_bad_inputs_of_eval_ray_get_one_line(tmp_path, demo_store):
    """No Ray installed: the extra to install. An address where nothing listens: said in one
    line, after the servers are checked and before anything runs."""
    no_ray = tmp_path / "no-ray" / "ray"
    no_ray.mkdir(parents=True)
    (no_ray / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    fake = Backend()
    with backend(fake) as url:
        common = ["--dataset", "demo", "--methods", "single", "--n", "1", "--base-url", url,
                  "--store", str(demo_store), "--run", str(tmp_path / "run")]
        missing = subprocess.run(
            [sys.executable, "-m", "activerag.cli", "eval", "--ray", *common],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(no_ray.parent)})
        from activerag.testing.dev_server import free_port

        port = free_port()
        nobody = subprocess.run(
            [sys.executable, "-m", "activerag.cli", "eval", "--ray", f"127.0.0.1:{port}",
             *common], capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "pip install 'activerag[ray]'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert nobody.returncode != 0 and "Traceback" not in nobody.stderr
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in nobody.stderr
    assert len(nobody.stderr.strip().splitlines()) == 1
    asked = load_dataset("demo", 1)[0].question  # the probe's requests are not questions
    assert not any(asked in prompt_of(fake, body) for _, body in fake.requests)

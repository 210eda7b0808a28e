"""Two real CPU vLLM servers as replicas of one model: an evaluation spreads its questions over
both, and goes on when one of them is killed -9 midway; an evaluation on one server waits for
its restart. No question is lost or scored twice."""

import asyncio

import pytest

from activerag.context import FlareContext
from activerag.evaluation.datasets import load_dataset
from activerag.evaluation.evaluate import Run, evaluate, method_runs
from activerag.nodes import parts
from activerag.serving import server
from activerag.serving.replicas import Replicas
from activerag.testing.processes import kill_server, settings_of, start

pytestmark = pytest.mark.integration


async def test_an_evaluation_waits_for_its_server_to_restart(replica_url, demo_store, tmp_path,
                                                             monkeypatch):
    """Runs first: it leaves the module's server running again for the next test."""
    monkeypatch.setenv("ACTIVERAG_LM_RECONNECT", "600")
    ctx = FlareContext(base_url=replica_url, store_dir=str(demo_store), max_sentences=2)
    examples = load_dataset("demo", 6)
    run = Run(tmp_path / "run")
    task = asyncio.create_task(evaluate(run, "demo", method_runs(["flare"], ctx), examples,
                                        concurrency=2, progress=False))
    for _ in range(1200):
        if len(run.rows()) >= 2 or task.done():
            break
        await asyncio.sleep(0.5)
    assert not task.done() and len(run.rows()) >= 2
    settings = settings_of(replica_url)
    kill_server(replica_url)
    server.pid_path(settings).unlink()
    await asyncio.sleep(2)
    assert not task.done(), "the run gave up instead of waiting for the server"
    await asyncio.to_thread(start, settings, cores="1")  # pinned as replica_url started it
    result = await asyncio.wait_for(task, timeout=900)
    assert sorted(r["id"] for r in run.rows()) == sorted(e.id for e in examples)
    assert result["summary"]["flare"]["n"] == 6


async def test_an_evaluation_goes_on_when_a_replica_is_killed(vllm_url, replica_url, demo_store,
                                                              tmp_path):
    both = f"{vllm_url},{replica_url}"
    ctx = FlareContext(base_url=both, store_dir=str(demo_store), max_sentences=2)
    examples = load_dataset("demo", 8)
    def replica_answers() -> int:
        lm = parts._lms.get((both, "", "None"))
        return lm.served[1] if isinstance(lm, Replicas) else 0

    task = asyncio.create_task(evaluate(Run(tmp_path / "run"), "demo",
                                        method_runs(["flare"], ctx), examples, concurrency=4,
                                        progress=False, metrics_url=both))
    for _ in range(600):
        if replica_answers() >= 2 or task.done():
            break
        await asyncio.sleep(0.5)
    assert not task.done(), "the run ended before the replica was killed"
    assert replica_answers() >= 2, "the second replica never answered"
    kill_server(replica_url)
    result = await asyncio.wait_for(task, timeout=900)
    rows = Run(tmp_path / "run").rows()
    assert sorted(r["id"] for r in rows) == sorted(e.id for e in examples)  # none lost, none twice
    assert result["summary"]["flare"]["n"] == 8
    lm = parts._lms[(both, "", "None")]
    assert isinstance(lm, Replicas)
    assert lm.served[0] > 0 and lm.served[1] > 0
    assert 1 in lm.down_until  # the killed replica is resting

"""One evaluation shared through a real PostgreSQL by two `activerag eval` processes, each
against its own real vLLM replica (SmolLM2): one worker is killed with -9 while it holds
questions, the other takes them over once their leases run out, and every question is
answered once (lost 0, duplicated 0)."""

import json
import os
import signal
import time
from pathlib import Path

import psycopg
import pytest

from activerag.testing import processes as realprocs

pytestmark = pytest.mark.integration
N = 6
LEASE = 10
RUN = "shared-int"
ROOT = Path(__file__).resolve().parents[2]


def worker(base_url, store, database):
    return realprocs.cli("eval", "--dataset", "demo", "--n", str(N), "--methods", "flare",
                         "--run", RUN, "--base-url", base_url, "--store", str(store),
                         "--max-sentences", "2", "--concurrency", "2", "--lease", str(LEASE),
                         env={"ACTIVERAG_DATABASE_URL": database})


def claims(database):
    with psycopg.connect(database, autocommit=True) as db:
        return db.execute("SELECT id, worker, claims, row IS NOT NULL, finished_by, "
                          "lease_until > now() FROM activerag_eval_claims WHERE run = %s "
                          "ORDER BY seq", (RUN,)).fetchall()


def test_a_worker_killed_mid_run_leaves_its_questions_to_the_other(
        postgres_url, vllm_url, replica_url, demo_store):
    a = worker(vllm_url, demo_store, postgres_url)
    b = worker(replica_url, demo_store, postgres_url)
    mine = f":{a.pid}:"
    deadline = time.monotonic() + 600
    held: list[str] = []
    while not held:  # until a, frozen, has finished a question and holds another unstored
        assert a.poll() is None, f"worker a ended before it was killed: {a.stderr.read()}"
        assert time.monotonic() < deadline, "worker a finished no question within 600 s"
        time.sleep(0.5)
        try:
            rows = claims(postgres_url)
        except psycopg.errors.UndefinedTable:  # not made yet
            continue
        if not any(r[3] and mine in (r[4] or "") for r in rows):
            continue
        # Frozen, a can neither store nor give up what it holds: what is held now is what the
        # kill leaves behind (a question finished between a poll and the kill is not).
        realprocs.freeze(a.pid)
        held = [r[0] for r in claims(postgres_url)
                if not r[3] and mine in (r[1] or "") and r[5]]
        if not held:
            os.kill(a.pid, signal.SIGCONT)
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    out, err = b.communicate(timeout=900)
    assert b.returncode == 0, err[-2000:]
    rows = claims(postgres_url)
    assert len(rows) == N and all(r[3] for r in rows)  # lost 0
    ids = sorted(r[0] for r in rows)
    assert ids == sorted(set(ids))  # one row per question: duplicated 0
    retaken = [r for r in rows if r[2] >= 2]  # claimed again after a's lease ran out
    assert retaken and all(mine not in r[4] for r in retaken), rows
    assert set(held) <= {r[0] for r in retaken}, (held, rows)  # what a held, b answered
    assert any(mine in (r[4] or "") for r in rows)  # a's finished rows were kept
    assert f"| flare | {N} |" in out
    with psycopg.connect(postgres_url, autocommit=True) as db:
        (summary,), = db.execute("SELECT summary FROM activerag_eval_runs WHERE run = %s",
                                 (RUN,)).fetchall()
    result = json.loads(summary)
    assert result["finished"] == result["expected"] == N and result["missing"] == 0
    assert result["summary"]["flare"]["n"] == N
    print(f"killed worker a (pid {a.pid}) holding {held}; b retook {len(retaken)}; "
          f"b answered {result['answered_here']} of {N}; resumed threads: "
          f"{err.count('resuming after')}")


async def test_the_dev_server_keeps_its_threads_in_postgres(postgres_url, vllm_url, demo_store,
                                                            tmp_path):
    """`langgraph dev` (the in-memory runtime) with activerag's checkpointer named in
    langgraph.json: a FLARE run's checkpoints are rows of the database, read back through the
    server's own thread API."""
    from langgraph_sdk import get_client

    from activerag.demo import load_demo_questions
    from activerag.testing.dev_server import dev_server

    config = json.loads((ROOT / "langgraph.json").read_text())
    config["checkpointer"] = {"path": "activerag.durable.postgres.dev_checkpointer"}
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    env = {"ACTIVERAG_BASE_URL": vllm_url, "ACTIVERAG_STORE_DIR": str(demo_store),
           "ACTIVERAG_DATABASE_URL": postgres_url}
    with dev_server(tmp_path, tmp_path / "dev.log", env) as url:
        client = get_client(url=url)
        thread = (await client.threads.create())["thread_id"]
        question = load_demo_questions()[0]["question"]
        out = await client.runs.wait(thread, "flare", input={"question": question},
                                     context={"theta": 1.0, "max_sentences": 2})
        history = await client.threads.get_history(thread, limit=100)
    assert out["answer"].strip() and history[0]["values"]["question"] == question
    assert "Using custom checkpointer" in (tmp_path / "dev.log").read_text()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        (stored,), = db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s",
                                (thread,)).fetchall()
    assert stored >= len(history) >= 4  # every step the server shows is a row in the database

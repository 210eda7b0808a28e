"""The dev server keeps its threads in a real PostgreSQL (ACTIVERAG_DATABASE_URL) while it answers
over a real vLLM (SmolLM2). An evaluation over several machines is `eval --ray`
(tests/integration/test_ray_eval.py)."""

import json
from pathlib import Path

import psycopg
import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


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

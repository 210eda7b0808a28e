"""The LangGraph dev server (what Studio connects to) runs the FLARE graph over HTTP."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from activerag.demo import load_demo_questions

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dev_server(vllm_url, demo_store, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("langgraph") / "dev.log"
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1",
           "LANGSMITH_TRACING": "false", "ACTIVERAG_BASE_URL": vllm_url,
           "ACTIVERAG_STORE_DIR": str(demo_store)}
    cli = Path(sys.executable).parent / "langgraph"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(cli), "dev", "--no-browser", "--no-reload", "--host",
                                 "127.0.0.1", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        else:
            pytest.fail(f"langgraph dev did not answer on {url}:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


async def test_dev_server_runs_flare(dev_server):
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    registered = {a["graph_id"] for a in await client.assistants.search(limit=50)}
    assert registered == {"flare", "next_sentence", "previous_sentence", "previous_window",
                          "self_ask", "flare_instruct", "single", "no_retrieval", "replug",
                          "flare_replug", "fb_rag", "long_context", "vanilla_rag", "op_rag",
                          "self_route"}
    fb_nodes = {n["id"] for n in (await client.assistants.get_graph("fb_rag"))["nodes"]}
    assert {"prepare", "recall_retrieve", "sample", "rerank", "generate"} <= fb_nodes
    route = await client.assistants.get_graph("self_route")
    assert {"select", "generate", "long_context"} <= {n["id"] for n in route["nodes"]}
    graph = await client.assistants.get_graph("flare")
    nodes = {n["id"] for n in graph["nodes"]}
    assert {"draft", "confidence_gate", "formulate_query", "retrieve", "regenerate",
            "accept"} <= nodes
    question = load_demo_questions()[0]["question"]
    out = await client.runs.wait(None, "flare", input={"question": question},
                                 context={"theta": 1.0, "max_sentences": 2})
    assert out["answer"].strip()
    assert 1 <= len(out["trace"]) <= 2
    assert all(step["retrieved"] for step in out["trace"])


async def test_two_runs_on_one_thread_start_clean(dev_server):
    """Studio runs a graph again on the same thread: the second run must not inherit the
    first one's trace and counters (nor stop early on its sentence count)."""
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    thread = await client.threads.create()
    question = load_demo_questions()[1]["question"]
    context = {"theta": 0.0, "max_sentences": 2}
    runs = [await client.runs.wait(thread["thread_id"], "flare", input={"question": question},
                                   context=context) for _ in range(2)]
    first, second = runs
    assert len(second["trace"]) == len(first["trace"]) >= 1
    for key in ("answer", "lm_calls", "generated_tokens", "retrievals", "retrieved_titles"):
        assert second[key] == first[key], key


def test_the_servers_the_tests_start_listen_on_loopback_only(dev_server, vllm_url):
    from urllib.parse import urlparse

    from netcheck import listening_addresses

    for url in (dev_server, vllm_url):
        port = urlparse(url).port
        assert listening_addresses(port) == {"127.0.0.1"}, url

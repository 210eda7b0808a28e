"""The LangGraph dev server (what Studio connects to): it draws every graph, describes every
setting, runs FLARE over HTTP, streams each sentence as it is accepted, and keeps the state
after every node in the thread's history."""

import importlib
import json
from collections import deque
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from activerag.demo import load_demo_questions
from activerag.state import COUNTERS
from activerag.testing.dev_server import dev_server as running_dev_server

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
GRAPHS: dict[str, str] = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
START, END = "__start__", "__end__"


@pytest.fixture(scope="module")
def dev_server(vllm_url, demo_store, tmp_path_factory):
    log = tmp_path_factory.mktemp("langgraph") / "dev.log"
    env = {"ACTIVERAG_BASE_URL": vllm_url, "ACTIVERAG_STORE_DIR": str(demo_store)}
    with running_dev_server(ROOT, log, env) as url:
        yield url


def _local(spec: str) -> Any:
    """The compiled graph langgraph.json's SPEC ("module:attribute") names, imported here."""
    module, attr = spec.split(":")
    return getattr(importlib.import_module(module), attr)


async def _assistant_ids(client) -> dict[str, str]:
    return {a["graph_id"]: a["assistant_id"] for a in await client.assistants.search(limit=100)}


async def test_dev_server_runs_flare(dev_server):
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    registered = set(await _assistant_ids(client))
    assert registered == set(GRAPHS)
    assert {"flare", "next_sentence", "previous_sentence", "previous_window", "self_ask",
            "flare_instruct", "single", "no_retrieval", "replug", "flare_replug", "fb_rag",
            "long_context", "vanilla_rag", "op_rag", "self_route"} <= registered
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

    from activerag.testing.netcheck import listening_addresses

    for url in (dev_server, vllm_url):
        port = urlparse(url).port
        assert listening_addresses(port) == {"127.0.0.1"}, url


def _described(schema: dict, where: str) -> list[str]:
    """The fields of SCHEMA, and of the object schemas it defines, that have no description."""
    objects = [(where, schema)] + [(f"{where}.$defs.{name}", sub)
                                   for name, sub in schema.get("$defs", {}).items()]
    return [f"{place}.{field}" for place, obj in objects
            for field, prop in obj.get("properties", {}).items()
            if not str(prop.get("description", "")).strip()]


async def test_every_setting_studio_shows_says_what_it_means(dev_server):
    """Studio renders a graph's context schema as its settings form: every field, the nested
    ones too, carries its attribute docstring as its description."""
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    ids = await _assistant_ids(client)
    undescribed: list[str] = []
    for graph_id, spec in GRAPHS.items():
        schema = (await client.assistants.get_schemas(ids[graph_id]))["context_schema"]
        assert schema, f"{graph_id} publishes no context schema"
        expected = _local(spec).context_schema
        # dataclasses.fields: the settings, without class variables (EtcContext's
        # reads_alternatives), which __dataclass_fields__ also lists and no form shows
        assert set(schema["properties"]) == {f.name for f in fields(expected)}, graph_id
        undescribed += _described(schema, graph_id)
    assert not undescribed, f"settings without a description: {undescribed}"
    flare = (await client.assistants.get_schemas(ids["flare"]))["context_schema"]["properties"]
    # one line each, from the docstrings: the subclass's own k, the base class's base_url
    assert flare["theta"]["description"] == (
        "Retrieve when any draft token has probability below theta (0: never, 1: always).")
    assert flare["k"]["description"].startswith("Documents retrieved per step")
    assert flare["base_url"]["description"] == (
        "OpenAI-compatible (vLLM) endpoint (default: where `activerag serve` serves the default "
        "model).")
    assert "\n" not in flare["span_merge_gap"]["description"]
    replug = (await client.assistants.get_schemas(ids["replug"]))["context_schema"]
    assert replug["properties"]["k"]["description"] == "Documents ensembled (the paper's top-10)."


@pytest.fixture(scope="module")
async def streamed_flare(dev_server):
    """One FLARE run on a thread, streamed as Studio watches it: every event in arrival order,
    and the thread's history afterwards."""
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    thread = await client.threads.create()
    question = load_demo_questions()[2]["question"]
    events = [(part.event, part.data) async for part in client.runs.stream(
        thread["thread_id"], "flare", input={"question": question},
        context={"max_sentences": 3}, stream_mode=["custom", "tasks", "values"])]
    history = await client.threads.get_history(thread["thread_id"], limit=500)
    return question, events, list(reversed(history))


def _norm(text: str) -> str:
    return " ".join(text.split())


async def test_each_sentence_streams_as_it_is_accepted(streamed_flare):
    """stream_mode "custom" yields one event per accepted sentence, in order, while the run
    goes on (each before its accept step has finished, after the previous one had); the events
    are the final trace, and their sentences make the answer."""
    _, events, _ = streamed_flare
    assert not [d for e, d in events if e == "error"]
    sentences = [(i, d["sentence"]) for i, (e, d) in enumerate(events)
                 if e == "custom" and "sentence" in d]
    accepted = [i for i, (e, d) in enumerate(events)
                if e == "tasks" and d.get("name") == "accept" and "result" in d]
    assert 1 <= len(sentences) <= 3
    assert len(accepted) == len(sentences)
    for k, (at, _) in enumerate(sentences):
        assert at < accepted[k] and (k == 0 or at > accepted[k - 1]), k
    final = [d for e, d in events if e == "values"][-1]
    entries = [s for _, s in sentences]
    assert [s["index"] for s in entries] == list(range(len(entries)))
    assert entries == final["trace"]
    assert _norm(" ".join(s["sentence"] for s in entries)) == _norm(final["answer"])
    for entry in entries:
        assert entry["sentence"].strip()
        assert isinstance(entry["retrieved"], bool) and isinstance(entry["queries"], list)
        if entry["retrieved"]:
            assert entry["queries"] and all(q.strip() for q in entry["queries"])
            assert entry["doc_ids"]


def _overwritten(write: Any) -> bool:
    return isinstance(write, dict) and write.get("type") == "__overwrite__"


ADDED = {*COUNTERS, "trace", "retrieved_titles"}
"""FlareState's keys whose writes are added to what they hold (operator.add)."""


def _after(before: dict, key: str, write: Any) -> Any:
    """What KEY holds after a node wrote WRITE to it (FlareState's reducers)."""
    if _overwritten(write):
        return write["value"]
    if key in ADDED:
        return before.get(key, [] if key in ("trace", "retrieved_titles") else 0) + write
    if key == "step":
        if not write or write.get("new"):
            return {k: v for k, v in (write or {}).items() if k != "new"}
        return {**(before.get("step") or {}), **write}
    return write


async def test_state_after_each_node_holds_what_it_wrote(streamed_flare):
    """The thread's history (what Studio shows per step) has one checkpoint after every node,
    holding the whole internal state, not just the output: the keys the node wrote, with
    exactly the values it wrote folded in (after draft the draft and its tokens, after
    retrieve the documents)."""
    question, events, history = streamed_flare
    streamed = [d["name"] for e, d in events if e == "tasks" and "result" in d]
    ran = []
    for before, after in zip(history, history[1:], strict=False):
        (task,) = before["tasks"]
        ran.append(task["name"])
        writes = task["result"] or {}
        old, new = before["values"], after["values"]
        for key, write in writes.items():
            assert new.get(key) == _after(old, key, write), (task["name"], key)
        untouched = set(old) - set(writes)
        assert {k: new.get(k) for k in untouched} == {k: old[k] for k in untouched}, task
        if task["name"] == "draft":
            step = new["step"]
            assert step["draft"].strip() and step["tokens"]
            assert all(isinstance(t, str) and 0.0 <= p <= 1.0 and isinstance(at, int)
                       for t, p, at in step["tokens"])
        if task["name"] in ("retrieve", "retrieve_input"):
            docs = new["documents"]
            assert docs and docs == new["step"]["documents"]
            assert all(d["page_content"] and d["metadata"]["title"] for d in docs)
        if task["name"] == "retrieve_input":
            assert new["input_documents"] == docs and new["step"]["queries"] == [question]
        if task["name"] == "accept":
            assert len(new["trace"]) == len(old.get("trace", [])) + 1
            assert new["answer"].endswith(new["trace"][-1]["sentence"])
    assert ran[1:] == streamed  # the history's first step is the input, then every node
    assert ran[:3] == ["__start__", "begin", "retrieve_input"]
    assert {"draft", "confidence_gate", "accept"} <= set(ran)
    final = history[-1]
    assert final["next"] == [] and final["values"]["question"] == question
    assert final["values"]["done"] is True


def _edges(drawing: dict) -> set[tuple[str, str, bool]]:
    return {(e["source"], e["target"], bool(e.get("conditional"))) for e in drawing["edges"]}


def _reaches_end(drawing: dict) -> bool:
    nodes = {n["id"] for n in drawing["nodes"]}
    nexts: dict[str, set[str]] = {}
    for source, target, _ in _edges(drawing):
        assert source in nodes and target in nodes, (source, target)
        nexts.setdefault(source, set()).add(target)
    seen, todo = {START}, deque([START])
    while todo:
        for nxt in nexts.get(todo.popleft(), set()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return END in seen


async def test_every_graph_has_a_drawing(dev_server):
    """Every graph of langgraph.json is drawn by the server as it is compiled here, plain and
    with xray: its nodes and edges, a path from START to END, every edge between drawn nodes."""
    from langgraph_sdk import get_client

    client = get_client(url=dev_server)
    for graph_id, spec in GRAPHS.items():
        local = _local(spec)
        for xray in (False, True):
            drawing = await client.assistants.get_graph(graph_id, xray=xray)
            here = local.get_graph(xray=xray).to_json()
            assert [n["id"] for n in drawing["nodes"]] == [n["id"] for n in here["nodes"]], (
                graph_id, xray)
            assert _edges(drawing) == _edges(here), (graph_id, xray)
            assert _reaches_end(drawing), (graph_id, xray)
        plain = {n["id"] for n in (await client.assistants.get_graph(graph_id))["nodes"]}
        assert set(local.nodes) - {START} <= plain, graph_id


async def test_the_app_draws_its_method_graphs_inside_it(dev_server):
    """The app's nodes are method graphs run as subgraphs: with xray the server draws each
    one's nodes inside the app (as "subgraph:node"), without it one node per method graph, and
    Studio's subgraph listing names them."""
    from langgraph_sdk import get_client

    assert "app" in GRAPHS, "langgraph.json serves no 'app' graph"
    app = _local(GRAPHS["app"])
    subgraphs = dict(app.get_subgraphs())
    assert {"single", "flare", "fb_rag"} <= set(subgraphs)
    client = get_client(url=dev_server)
    xray = {n["id"] for n in (await client.assistants.get_graph("app", xray=True))["nodes"]}
    plain = {n["id"] for n in (await client.assistants.get_graph("app"))["nodes"]}
    for name, sub in subgraphs.items():
        inner = {n["id"] for n in sub.get_graph(xray=True).to_json()["nodes"]} - {START, END}
        assert inner, name
        assert {f"{name}:{node}" for node in inner} <= xray, name
        assert name not in xray and name in plain
        assert not any(node.startswith(f"{name}:") for node in plain)
    assert {f"flare:{n}" for n in ("draft", "confidence_gate", "formulate_query", "retrieve",
                                   "regenerate", "accept")} <= xray
    assert {"fb_rag:sample", "fb_rag:rerank", "single:generate"} <= xray
    listed = await client.assistants.get_subgraphs((await _assistant_ids(client))["app"])
    assert set(subgraphs) <= set(listed)

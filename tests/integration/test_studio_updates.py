"""What Studio shows of a FLARE run through the LangGraph dev server, over a real SmolLM2
server: every node's update says what it decided, the tokens stream before the sentence they
make is accepted, and the output cites its sources."""

import json
from pathlib import Path
from typing import Any

import pytest

from activerag.demo import load_demo_questions
from activerag.testing.dev_server import dev_server as running_dev_server

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FLARE_NODES = {"begin", "retrieve_input", "draft", "confidence_gate", "formulate_query",
               "retrieve", "regenerate", "accept"}


@pytest.fixture(scope="module")
async def streamed(vllm_url, demo_store, tmp_path_factory):
    """One FLARE run streamed as Studio streams it (updates, custom, values), retrieving for
    every sentence (theta 1), two sentences at most."""
    from langgraph_sdk import get_client

    log = tmp_path_factory.mktemp("langgraph") / "dev.log"
    env = {"ACTIVERAG_BASE_URL": vllm_url, "ACTIVERAG_STORE_DIR": str(demo_store)}
    with running_dev_server(ROOT, log, env) as url:
        client = get_client(url=url)
        question = load_demo_questions()[0]["question"]
        events = [(part.event, part.data) async for part in client.runs.stream(
            None, "flare", input={"question": question},
            context={"theta": 1.0, "beta": 0.4, "max_sentences": 2},
            stream_mode=["updates", "custom", "values"])]
    assert not [d for e, d in events if e == "error"], events[-1]
    return question, events


def _updates(events: list[tuple[str, Any]]) -> list[tuple[str, dict]]:
    return [(node, update) for e, d in events if e == "updates"
            for node, update in d.items()]


async def test_every_node_update_says_what_it_decided(streamed):
    question, events = streamed
    updates = _updates(events)
    assert {n for n, _ in updates} == FLARE_NODES
    nulls = [n for n, u in updates if not u or "decision" not in u]
    assert not nulls, f"updates that show no decision: {nulls}"
    assert all(u["decision"]["node"] == n for n, u in updates)
    shown = [(n, u["decision"]) for n, u in updates]
    begin = shown[0][1]
    assert shown[0][0] == "begin" and begin["question"] == question
    assert begin["retrieve_first"] is True and "sources" in begin["reset"]
    print(json.dumps(shown, indent=1)[:6000])
    for i, (node, d) in enumerate(shown):
        if node == "confidence_gate":
            assert d["trigger"] == "min_prob" and d["fire"] is True and d["threshold"] == 1.0
            assert 0.0 < d["value"] <= 1.0
        if node == "formulate_query":
            assert d["formulation"] == "implicit" and d["beta"] == 0.4
            assert "~~" in d["marked"] or not d["masked"]
            assert all(p < 0.4 for _, p in d["masked"])
            nxt, found = shown[i + 1]
            assert nxt == "retrieve" and found["queries"] == d["queries"]
        if node in ("retrieve", "retrieve_input"):
            assert d["documents"] and all(
                set(doc) == {"id", "title", "text"} and doc["id"] and doc["text"].strip()
                for doc in d["documents"])
        if node in ("draft", "regenerate"):
            assert d["text"].strip() and 0.0 < d["min_prob"] <= 1.0


async def test_tokens_stream_before_the_sentence_they_make_is_accepted(streamed):
    _, events = streamed
    sentences = [i for i, (e, d) in enumerate(events) if e == "custom" and "sentence" in d]
    accepted = [i for i, (e, d) in enumerate(events) if e == "updates" and "accept" in d]
    assert sentences and len(sentences) == len(accepted)
    start = 0
    for at, done in zip(sentences, accepted, strict=True):
        assert at < done
        pieces = [(d["node"], d["text"]) for e, d in events[start:at]
                  if e == "custom" and d.get("kind") == "token"]
        written = [n for n, _ in pieces]
        # FLARE with theta 1: the draft streams, then the regenerated sentence
        assert written and written[0] == "draft" and written[-1] == "regenerate"
        regenerated = "".join(t for n, t in pieces if n == "regenerate")
        sentence = events[at][1]["sentence"]
        assert regenerated.strip() == sentence["sentence"]
        drafted = "".join(t for n, t in pieces if n == "draft")
        assert drafted.strip() == sentence["draft"].strip()
        start = done


async def test_the_output_cites_each_retrieved_document_once(streamed):
    _, events = streamed
    final = [d for e, d in events if e == "values"][-1]
    sources = final["sources"]
    ids = [s["id"] for s in sources]
    assert sources and len(ids) == len(set(ids))
    assert {i for step in final["trace"] for i in step["doc_ids"]} <= set(ids)
    assert [s["title"] for s in sources] == list(dict.fromkeys(final["retrieved_titles"]))
    assert final["decision"]["node"] == "accept" and final["decision"]["done"] is True

"""The run page's model and server, wall times, β and the masked tokens, whether a regenerated
sentence changed, and the path cut into sentences: the pure logic, pages of literal records,
and the recorder timing a streamed run."""

import asyncio
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from page_dom import Element, draft_tokens, elements, having
from test_graph_routing import graph
from test_page import LOOP, LOW_DRAFT
from test_page_logic import PATH, QUESTION, TRACE
from typing_extensions import TypedDict

from activerag.context import FlareContext
from activerag.drawing import Edge, Shape
from activerag.page import render_page
from activerag.page.record import RunRecord, record_run
from activerag.testing.scripted import ScriptedLM

FLARE = Shape(("begin", "retrieve_input", "draft", "confidence_gate", "formulate_query",
               "retrieve", "regenerate", "accept"),
              (Edge(START, "begin"), Edge("begin", "retrieve_input", True),
               Edge("retrieve_input", "draft"), Edge("draft", "confidence_gate"),
               Edge("confidence_gate", "formulate_query", True),
               Edge("confidence_gate", "accept", True), Edge("formulate_query", "retrieve"),
               Edge("retrieve", "regenerate"), Edge("regenerate", "accept"),
               Edge("accept", "draft", True), Edge("accept", END, True)))
def record(**changes: Any) -> RunRecord:
    """A finished three-sentence FLARE run: the first and last sentences retrieved."""
    seconds = [0.01, 0.5, 1.0, 0.01, 0.01, 0.2, 2.0, 0.01, 1.5, 0.01, 0.01,
               0.75, 0.01, 0.01, 0.1, 3.0, 0.01]
    made = RunRecord(QUESTION, "flare", {"theta": 0.8, "beta": 0.4}, list(PATH), {},
                     {"answer": "Alpha Beta was born in Kelmor.", "trace": TRACE}, True,
                     [("the LM server", "http://127.0.0.1:8765/v1", "Qwen/<b>Coder</b>")],
                     seconds, [0] * 7 + [1] + [0] * 2 + [1] + [0] * 5 + [1], 12.5)
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def page(made: RunRecord, shape: Shape = FLARE) -> list[Element]:
    return elements(render_page(made, shape))


def test_the_page_takes_the_masks_and_the_gate_from_the_nodes_decisions():
    decision = {"node": "formulate_query", "formulation": "implicit", "beta": 0.4,
                "masked": [[" in", 0.7], [" Ge", 0.2]]}
    made = record(decisions={0: {"formulate_query": decision, "confidence_gate": {
        "node": "confidence_gate", "trigger": "min_prob", "fire": True, "value": 0.2,
        "threshold": 0.8, "measure": "lowest token probability <b>"}}})
    found = page(made)
    assert [t.text for t in draft_tokens(found) if "masked" in t.classes] == [
        " in", " Ge", " <Kel>"]
    [gate] = having(found, "div", "gate")
    assert gate.text == "gatemin_prob: lowest token probability <b> = 0.200 against 0.800 ⇒ fire"


def test_the_model_and_server_are_shown_and_escaped():
    [servers] = having(page(record()), "p", "servers")
    assert servers.text == ("model Qwen/<b>Coder</b> at http://127.0.0.1:8765/v1 "
                            "(the LM server)")
    assert "Qwen/&lt;b&gt;Coder&lt;/b&gt;" in render_page(record(), FLARE)
    assert not having(page(record(servers=[])), "p", "servers")


def test_wall_times_per_step_per_sentence_and_in_total():
    found = page(record())
    assert [e.text for e in found if e.tag == "li"][:3] == [
        "begin 0.01 s", "retrieve_input 0.50 s", "draft 1.00 s"]
    assert "wall time 12.50 s" in having(found, "p", "settings")[0].text
    [total] = [e for e in found if e.attrs.get("data-key") == "wall_seconds"]
    assert total.text == "wall time (s)12.50"
    assert [t.text for t in having(found, "span", "time")] == ["3.23 s", "1.52 s", "3.88 s"]
    # a record that was not timed shows no times
    untimed = page(record(seconds=[], total_seconds=None))
    assert not having(untimed, "span", "time") and "wall time" not in render_page(
        record(seconds=[], total_seconds=None), FLARE)


def test_beta_is_on_the_colour_bar_and_the_masked_tokens_are_struck():
    found = page(record())
    [beta] = having(found, "span", "beta")
    assert beta.text == "β = 0.4" and beta.attrs["style"] == "left:40.0%"
    assert having(found, "span", "theta")[0].text == "θ = 0.8"
    assert [t.text for t in draft_tokens(found) if "masked" in t.classes] == [" Ge", " <Kel>"]
    assert "masked out of the query" in having(draft_tokens(found), "span", "masked")[0].attrs[
        "title"]
    assert "struck through" in having(found, "div", "legend")[0].text
    # explicit queries mask nothing
    explicit = page(record(settings={"theta": 0.8, "beta": 0.4,
                                     "query_formulation": "explicit"}))
    assert not [t for t in draft_tokens(explicit) if "masked" in t.classes]
    assert having(explicit, "span", "beta") and "struck" not in having(explicit, "div",
                                                                        "legend")[0].text


def test_a_regenerated_sentence_says_whether_it_differs_from_its_draft():
    articles = having(page(record()), "article", "sentence")
    assert [a.attrs.get("data-differs") for a in articles] == ["true", None, "false"]
    assert "regenerated: differs from the draft" in articles[0].text
    assert "regenerated: the same words as the draft" in articles[2].text
    assert "regenerated" not in articles[1].text


def test_the_path_is_grouped_by_sentence():
    found = page(record())
    groups = having(found, "div", "group")
    assert [g.attrs["data-sentences"] for g in groups] == ["0", "1", "1", "1"]
    assert [e.text for e in having(found, "div", "glabel")] == [
        "before sentence 1 · 0.51 s", "sentence 1 · 3.23 s", "sentence 2 · 1.52 s",
        "sentence 3 · 3.88 s"]
    assert [e.attrs["data-node"] for e in found if e.tag == "li"] == PATH
    # three sentences, three sentence groups, whatever their length; an unfinished run's tail
    cut = record(path=PATH[:13], complete=False, sentences_at=record().sentences_at[:13])
    labels = [e.text.split(" ·")[0] for e in having(page(cut), "div", "glabel")]
    assert labels == ["before sentence 1", "sentence 1", "sentence 2", "unfinished"]
    assert len(having(page(record(), LOOP), "div", "group")) == 3  # no loop back to draft


class Two(TypedDict):
    question: str


async def slow(state: Two) -> dict:
    await asyncio.sleep(0.3)
    get_stream_writer()({"sentence": {"index": 0}})
    return {}


async def test_the_recorder_times_each_step_as_its_update_arrives():
    g = StateGraph(Two)
    g.add_node("quick", lambda state: {})
    g.add_node("slow", slow)
    g.add_edge(START, "quick")
    g.add_edge("quick", "slow")
    g.add_edge("slow", END)
    made = await record_run(g.compile(), {"question": "Q?"}, None)
    assert made.path == ["quick", "slow"] and made.sentences_at == [0, 1]
    assert made.seconds[0] < 0.2 <= 0.3 <= made.seconds[1] < 2
    assert made.total_seconds is not None and made.total_seconds >= sum(made.seconds)
    # a real FLARE run: one time per step, the sentence at the accept that wrote it, and the
    # decisions its nodes showed, by sentence
    made = await record_run(graph(ScriptedLM(list(LOW_DRAFT))), {"question": QUESTION},
                            FlareContext(theta=0.5, beta=0.4))
    assert len(made.seconds) == len(made.path) and made.sentences_at[-1] == 1
    shown = made.decisions[0]
    assert shown["confidence_gate"]["fire"] is True
    assert shown["formulate_query"]["masked"] == [[" Gepu.", 0.3]]

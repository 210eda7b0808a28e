"""The run page: layout of the graph picture, the recorded path, token colours, escaping and
that the page loads nothing from the network; runs are scripted."""

import re
from collections import Counter

from langgraph.graph import StateGraph
from page_dom import draft_tokens, elements, having, svg_nodes
from test_graph_routing import QUESTION, graph, retriever
from typing_extensions import TypedDict

from activerag import cli
from activerag.context import FlareContext
from activerag.drawing import END, START, Edge, Shape, layers, shape_of
from activerag.graphs import registry
from activerag.graphs.single import build_single_graph
from activerag.page import render_page, shape_for, token_colour
from activerag.page.record import RunRecord, record_run
from activerag.sentences import SentenceSplitter
from activerag.testing.scripted import ScriptedLM, ends

LOW_DRAFT = [ends("Alpha Beta was born in Gepu.", low={"Gepu.": 0.3}),
             ends("Alpha Beta was born in Kelmor.")]
LOOP = Shape(("a", "b", "c"), (Edge(START, "a"), Edge("a", "b"), Edge("b", "c"),
                                Edge("c", "a", True, "next"), Edge("a", "c", True),
                                Edge("c", END, True)))


def test_layers_follow_the_longest_path_with_loops_set_aside():
    assert layers(LOOP) == ({START: 0, "a": 1, "b": 2, "c": 3, END: 4}, {("c", "a")})


def test_flare_graph_layers_are_one_column_with_one_loop():
    layer, back = layers(shape_of(graph(ScriptedLM([]))))
    order = ["__start__", "begin", "retrieve_input", "draft", "confidence_gate",
             "formulate_query", "retrieve", "regenerate", "accept", "__end__"]
    assert layer == {name: i for i, name in enumerate(order)}
    assert back == {("accept", "draft")}


class Outer(TypedDict):
    question: str
    answer: str


def test_a_graph_that_runs_a_graph_in_a_node_is_drawn_as_its_stream_names_it():
    inner = build_single_graph()

    async def single(state: Outer) -> dict:
        return await inner.ainvoke({"question": state["question"]})

    g = StateGraph(Outer)
    g.add_node("single", single)
    g.add_edge(START, "single")
    g.add_edge("single", END)
    outer = g.compile()
    # opened, the picture shows the inner graph's nodes; the stream names the outer node
    assert "single:generate" in shape_for(RunRecord("Q?"), outer).nodes
    assert shape_for(RunRecord("Q?", path=["single"]), outer).nodes == (START, "single", END)
    flare = graph(ScriptedLM([]))
    assert "confidence_gate" in shape_for(RunRecord("Q?", path=["draft"]), flare).nodes


def test_token_colours_run_from_red_to_green():
    assert [token_colour(p) for p in (0.0, 0.5, 1.0, -1.0, 2.0)] == [
        "#f19d9d", "#f1f19d", "#9df19d", "#f19d9d", "#9df19d"]


async def flare_record(replies, theta=0.5) -> tuple[RunRecord, list]:
    g = graph(ScriptedLM(list(replies)))
    record = await record_run(g, {"question": QUESTION}, FlareContext(theta=theta, beta=0.4),
                              "flare")
    return record, elements(render_page(record, g))


async def test_a_token_below_theta_is_flagged():
    record, found = await flare_record(LOW_DRAFT)
    tokens = draft_tokens(found)
    assert [t.text for t in tokens] == ["Alpha", " Beta", " was", " born", " in", " Gepu."]
    assert [t.text for t in tokens if "low" in t.classes] == [" Gepu."]
    assert tokens[-1].attrs["style"] == f"background:{token_colour(0.3)}"
    assert "θ = 0.5" in having(found, "div", "legend")[0].text
    [article] = having(found, "article", "sentence")
    assert article.attrs["data-retrieved"] == "true" and "retrieval fired" in article.text
    assert "Alpha Beta was born in" in article.text  # the masked query


async def test_every_visited_node_is_marked_in_the_svg():
    record, found = await flare_record(LOW_DRAFT)
    nodes = svg_nodes(found)
    visited = {n: int(e.attrs["data-visits"]) for n, e in nodes.items() if "visited" in e.classes}
    assert visited == {**Counter(record.path), START: 1, END: 1}
    assert set(record.path) == set(nodes) - {START, END}  # this run went everywhere
    assert [e.attrs["data-node"] for e in found if e.tag == "li"] == record.path
    # a confident draft is kept: the retrieval branch is drawn, not marked, not taken
    record, found = await flare_record([ends("Alpha Beta was born in Kelmor.")])
    assert record.path == ["begin", "retrieve_input", "draft", "confidence_gate", "accept"]
    nodes = svg_nodes(found)
    assert {n for n, e in nodes.items() if "visited" in e.classes} == {*record.path, START, END}
    assert nodes["regenerate"].attrs["data-visits"] == "0"
    taken = {(e.attrs["data-source"], e.attrs["data-target"])
             for e in having(found, "path", "taken")}
    assert ("confidence_gate", "accept") in taken and ("accept", END) in taken
    assert ("confidence_gate", "formulate_query") not in taken


async def test_the_record_keeps_the_documents_the_run_retrieved():
    record, found = await flare_record(LOW_DRAFT)
    assert ("Alpha Beta", "Alpha Beta was born in Kelmor.") in record.documents.values()
    docs = " ".join(d.text for d in having(found, "div", "doc"))
    assert "Alpha Beta was born in Kelmor." in docs
    costs = {e.attrs["data-key"]: e.text for e in found if e.tag == "tr" and "data-key" in e.attrs}
    # the masked draft found the passage the draft was written with: it is kept, not asked again
    assert costs["lm_calls"] == "LM calls1" and costs["retrievals"] == "retriever calls2"


def hostile_record() -> RunRecord:
    trace = [{"index": 0, "draft": "<b>x</b>", "draft_tokens": [("<b>", 0.2), ("x</b>", 0.9)],
              "min_prob": 0.2, "retrieved": True, "queries": ["<img src=x onerror=alert(1)>"],
              "fallback": False, "doc_ids": ["d1"], "doc_titles": ["<i>T</i>"],
              "sentence": "a & b"}]
    return RunRecord(
        "Is <script>alert(1)</script> escaped?", "flare", {"theta": 0.5},
        ["begin", "accept"],
        {"d1": ("<i>T</i>", 'See <script src="https://cdn.example.com/x.js"></script> and '
                            "http://example.com/a.png")},
        {"answer": "<script>alert(2)</script>", "trace": trace, "lm_calls": 1}, True)


def test_every_text_is_escaped():
    page = render_page(hostile_record(), LOOP)
    assert "<script" not in page.lower() and "<img" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;script src=&quot;https://cdn.example.com/x.js&quot;&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "a &amp; b" in page
    found = elements(page)
    assert [t.text for t in draft_tokens(found)] == ["<b>", "x</b>"]
    assert having(found, "div", "doc")[0].text.startswith("<i>T</i>")


def test_the_page_loads_nothing_from_the_network():
    found = elements(render_page(hostile_record(), LOOP))
    loading = {"src", "href", "xlink:href", "srcset", "action", "data", "poster"}
    assert not [e.tag for e in found if loading & set(e.attrs)]
    urls = {u for e in found for v in e.attrs.values() for u in re.findall(r"url\((.*?)\)", v)}
    assert urls == {"#ar-arrow-off"}  # the SVG's own arrowheads (this path took no edge)
    [style] = [e for e in found if e.tag == "style"]
    assert "url(" not in style.text and "@import" not in style.text
    assert {e.tag for e in found} <= {
        "html", "head", "meta", "title", "body", "div", "style", "h1", "h2", "h3", "p", "b",
        "span", "small", "svg", "defs", "marker", "path", "g", "rect", "text", "ol", "li",
        "table", "tr", "th", "td", "article", "details", "summary", "code"}


def test_a_run_without_a_trace_shows_what_it_kept():
    final = {"answer": "Kelmor", "route": "fb_rag", "samples": ["I think <Kelmor>"],
             "selected": [1], "chunk_list": [{"index": 0, "start": 0, "end": 3, "text": "zero"},
                                             {"index": 1, "start": 3, "end": 6,
                                              "text": "Alpha was born in Kelmor."}],
             "lm_calls": 2, "stage_seconds": {"sample": 1.5}}
    shape = Shape(("prepare", "generate"), (Edge(START, "prepare"), Edge("prepare", "generate"),
                                            Edge("generate", END)))
    found = elements(render_page(RunRecord("Q?", "fb_rag", {}, ["prepare", "generate"], {},
                                           final, True), shape))
    assert draft_tokens(found) == [] and not having(found, "article", "sentence")
    text = " ".join(e.text for e in having(found, "div", "runcol"))
    assert "keeps no per-sentence drafts" in text and "I think <Kelmor>" in text
    assert "Alpha was born in Kelmor." in text and "zero" not in text
    assert "sample (s)1.50" in text and "LM calls2" in text


def test_a_replug_sentence_shows_its_weights_and_flags_nothing():
    trace = [{"index": 0, "sentence": "Kelmor.", "tokens": [("Kel", 0.1), ("mor.", 0.9)],
              "certified": 0.5, "doc_ids": ["a", "b"], "doc_titles": ["A", "B"],
              "weights": [0.75, 0.25]}]
    found = elements(render_page(RunRecord("Q?", "replug", {"k": 2}, ["accept"], {},
                                           {"answer": "Kelmor.", "trace": trace}, True), LOOP))
    tokens = draft_tokens(found)
    assert [t.text for t in tokens] == ["Kel", "mor."] and not any("low" in t.classes
                                                                   for t in tokens)
    [article] = having(found, "article", "sentence")
    assert "certified 50%" in article.text and "λ=0.75" in article.text
    assert "λ=0.25" in article.text and "no threshold θ" in having(found, "div", "legend")[0].text


async def test_single_retrieval_has_no_gate_and_no_drafts():
    lm = ScriptedLM([ends("Alpha Beta was born in Kelmor. So the answer is Kelmor.",
                          low={"Kelmor.": 0.2})])
    g = build_single_graph(lm=lm, retriever=retriever(), splitter=SentenceSplitter())
    record = await record_run(g, {"question": QUESTION}, FlareContext(theta=0.5))
    found = elements(render_page(record, g))
    assert record.path == ["begin", "retrieve_input", "generate"]
    articles = having(found, "article", "sentence")
    assert len(articles) == 2 and all("no retrieval of its own" in a.text for a in articles)
    assert "does not gate on θ" in having(found, "div", "legend")[0].text
    assert [t.text for t in draft_tokens(found) if "low" in t.classes] == [" Kelmor.",
                                                                           " Kelmor."]


def test_ask_writes_the_page(tmp_path, monkeypatch, capsys):
    lm = ScriptedLM(list(LOW_DRAFT))
    monkeypatch.setitem(registry.METHODS, "scripted", registry.Method(
        "scripted", graph(lm), FlareContext, {}, "FLARE", "FLARE over a scripted LM"))
    page = tmp_path / "run.html"
    # the first draft sees no passage, so the retrieval brings it one and it is written again
    assert cli.main(["ask", "--method", "scripted", "--theta", "0.5", "--no-initial-retrieval",
                     "--html", str(page), QUESTION]) == 0
    assert capsys.readouterr().out.splitlines() == ["Alpha Beta was born in Kelmor.",
                                                    f"page: {page}"]
    found = elements(page.read_text())
    assert "visited" in svg_nodes(found)["regenerate"].classes
    assert [t.text for t in draft_tokens(found) if "low" in t.classes] == [" Gepu."]

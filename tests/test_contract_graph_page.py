"""A graph run's page shows what the run did (issue #38), on literal records: the table of node
visits has one row per node of the graph that ran, with its count, and none for START or END
(which are not nodes that run); a trace step's documents are shown whatever the record kept of
their ids and titles (an id without a title, or a title without an id, never stops the page)."""

from __future__ import annotations

from collections import Counter

import pytest
from page_dom import elements, having

from activerag.drawing import END, START, Edge, Shape
from activerag.page import render_page
from activerag.page.record import RunRecord

SHAPE = Shape(("a", "b", "c"), (Edge(START, "a"), Edge("a", "b"), Edge("b", "c"),
                                 Edge("c", "a", True, "next"), Edge("c", END, True)))


@pytest.mark.parametrize(("path", "complete"), [
    (["a", "b", "c"], True),
    (["a", "b", "c", "a", "b", "c"], True),
    (["a", "b"], False),
    (["a"], True),
])
def test_the_visits_table_counts_each_node_that_ran_and_no_other(path, complete):
    found = elements(render_page(RunRecord("Q?", "flare", {}, path, {}, {"answer": "x"},
                                           complete), SHAPE))
    rows = {e.attrs["data-node"]: e.text for e in found
            if e.tag == "tr" and "data-node" in e.attrs}
    assert rows == {n: f"{n}{k}" for n, k in Counter(path).items()}
    assert START not in rows and END not in rows


@pytest.mark.parametrize(("ids", "titles", "shown"), [
    (["d1", "d2"], ["One", "Two"], ["One", "Two"]),
    (["d1"], ["One", "Two"], ["One"]),
    (["d1", "d2"], ["One"], ["One"]),
])
def test_a_step_s_documents_are_shown_whatever_ids_and_titles_it_kept(ids, titles, shown):
    trace = [{"index": 0, "sentence": "Kelmor.", "draft": "Kelmor.",
              "draft_tokens": [("Kelmor.", 0.9)], "retrieved": True, "queries": ["q"],
              "doc_ids": ids, "doc_titles": titles}]
    known = {"d1": ("One", "the first text"), "d2": ("Two", "the second text")}
    found = elements(render_page(RunRecord("Q?", "flare", {"theta": 0.5}, ["a"], known,
                                           {"answer": "Kelmor.", "trace": trace}, True),
                                 SHAPE))
    docs = [d.text for d in having(found, "div", "doc")]
    assert [t for t in ("One", "Two") if any(d.startswith(t) for d in docs)] == shown
    assert any("the first text" in d for d in docs)

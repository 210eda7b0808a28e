"""FLARE-instruct's generate node ends a sentence only where the LM ended it (issue #38): a
segment the server stopped at the search's close ")]" goes on in the next segment, whether it
asked for a search or only wrote the close; a segment the LM ended is the answer's end.
Scripted LM, an in-memory retriever, the store of tmp_path."""

from __future__ import annotations

import asyncio

import pytest

from activerag.context import FlareContext
from activerag.graphs.flare_instruct import build_instruct_graph
from activerag.testing.retriever import memory_retriever
from activerag.testing.scripted import ScriptedLM, ends, sentence

QUESTION = "Where was Alpha Beta born?"
DOCS = {"Alpha Beta": "Alpha Beta was born in Kelmor.", "Gepu": "Gepu is a town."}


@pytest.mark.parametrize(("first", "answer", "calls"), [
    ("Alpha Beta was born [Search(Alpha Beta birthplace)]", "Alpha Beta was born in Kelmor.", 2),
    ("Alpha Beta was born)]", "Alpha Beta was born in Kelmor.", 2),
    (None, "Alpha Beta was born in Kelmor.", 1),
])
def test_a_segment_stopped_at_the_search_close_goes_on(tmp_path, first, answer, calls):
    replies = ([[*sentence(first)], ends(" in Kelmor.")] if first
               else [ends("Alpha Beta was born in Kelmor.")])
    lm = ScriptedLM([*replies, ends(" An extra sentence.")])
    graph = build_instruct_graph(lm=lm, retriever=memory_retriever(DOCS))
    ctx = FlareContext(max_answer_tokens=40, store_dir=str(tmp_path / "store"))
    out = asyncio.run(graph.ainvoke({"question": QUESTION}, context=ctx))
    assert out["answer"] == answer
    assert len(lm.prompts) == calls

"""REPLUG's nodes give each sentence as soon as it is complete (issue #38): in a streamed run,
when a sentence's event arrives the decided text runs at most into the one sentence after it,
for every look-ahead; the events are the final trace, in order. Scripted token LM, an
in-memory BM25 store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from activerag.graphs.replug import build_replug_graph
from activerag.nodes.replug.context import ReplugContext
from activerag.sentences import SentenceSplitter
from activerag.stores.base import StoreRetriever
from activerag.stores.bm25 import BM25Store
from activerag.stores.documents import make_document
from activerag.testing.scripted_tokens import ScriptedTokenLM, says

QUESTION = "Where was Alpha Beta born?"
ANSWER = "Alpha was born in Vesk. Gepu is a town. Ulm is far away. So the answer is Vesk."


def graph(lm: ScriptedTokenLM) -> Any:
    store = BM25Store()
    store.add([make_document("Alpha Beta was born in Vesk.", "Alpha Beta"),
               make_document("Alpha Beta moved to Ulm.", "Alpha Move")])
    return build_replug_graph(token_lm=lm, retriever=StoreRetriever(store=store, k=2),
                              splitter=SentenceSplitter())


async def streamed(lookahead: int) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """(each sentence event's index, the sentences begun in the text decided by then), and the
    final trace."""
    lm = ScriptedTokenLM({m: says(ANSWER) for m in ("Vesk", "Ulm")})
    splitter, text, seen, trace = SentenceSplitter(), "", [], []
    async for mode, chunk in graph(lm).astream(
            {"question": QUESTION}, context=ReplugContext(k=2, lookahead=lookahead,
                                                          max_answer_tokens=64),
            stream_mode=["custom", "updates", "values"]):
        if mode == "updates":
            for update in chunk.values():
                if isinstance(update, dict) and "text" in update:
                    text = update["text"]
        elif mode == "custom" and "sentence" in chunk:
            seen.append((chunk["sentence"]["index"], len(splitter.spans(text))))
        elif mode == "values":
            trace = chunk.get("trace", [])
    return seen, trace


@pytest.mark.parametrize("lookahead", [1, 3, 6])
def test_each_sentence_is_given_before_the_one_after_it_is_complete(lookahead):
    seen, trace = asyncio.run(streamed(lookahead))
    assert [i for i, _ in seen] == [e["index"] for e in trace] == [0, 1, 2, 3]
    assert [e["sentence"] for e in trace][-1] == "So the answer is Vesk."
    for index, begun in seen[:-1]:
        assert begun <= index + 2, (lookahead, seen)

"""Previous-sentence (IRCoT-style) and previous-window baselines (FLARE §4): wiring only."""

from __future__ import annotations

from typing import Literal

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY, Compiled, add_start, new_graph
from activerag.nodes import loop
from activerag.nodes.flare import previous
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_previous_graph(
    *,
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    unit: Literal["sentence", "window"] = "sentence",
    name: str | None = None,
    checkpointer: Checkpointer = None,
) -> Compiled:
    """Retrieve before every unit with the previous unit as the query; the first uses D_x.

    unit="sentence" is previous-sentence; unit="window" retrieves every ctx.window_tokens
    tokens (l=16 by default) with the previous window (or ctx.query_tokens) as the query.
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = new_graph()
    add_start(g, parts, "generate")
    g.add_node("generate", loop.make_generate(parts, unit), retry_policy=LM_RETRY)
    g.add_node("accept", loop.make_accept(parts, count_sentences=unit == "sentence"))
    g.add_node("previous_query", previous.previous_query)
    g.add_node("retrieve", loop.make_retrieve(parts))
    g.add_edge("generate", "accept")
    g.add_conditional_edges("accept", loop.route_after_accept,
                            {"next": "previous_query", "__end__": END})
    g.add_edge("previous_query", "retrieve")
    g.add_edge("retrieve", "generate")
    return g.compile(name=name or f"previous_{unit}", checkpointer=checkpointer)


previous_sentence_graph = build_previous_graph(unit="sentence")
previous_window_graph = build_previous_graph(unit="window")

"""FLARE-direct (§3.2) and its every-sentence "next" variant (Table 3): wiring only."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END
from langgraph.types import Checkpointer

from activerag.context import FlareContext
from activerag.graphs.base import LM_RETRY, Compiled, add_start, new_graph
from activerag.nodes import loop, triggers
from activerag.nodes.flare import steps as flare
from activerag.nodes.loop import FlareNode
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_flare_graph(
    *,
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    gate: FlareNode | None = None,
    formulate_query: FlareNode | None = None,
    regenerate: FlareNode | None = None,
    retrieve: FlareNode | None = None,
    context: type[FlareContext] = FlareContext,
    name: str = "flare",
    checkpointer: Checkpointer = None,
) -> Compiled:
    """Compile FLARE-direct; pass any component or node to swap it, None for the default.

    Unset components are made per run from the context (endpoint, model, store); a
    checkpointer makes runs resumable and threads persistent (each run still starts clean).
    RETRIEVE replaces the step's retrieval (SeaKR-lite reranks there; given one, it is retried
    on LM server errors); CONTEXT is the context class the graph's settings form shows (a
    FlareContext subclass).
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = new_graph(context)
    add_start(g, parts, "draft")
    g.add_node("draft", flare.make_draft(parts), retry_policy=LM_RETRY)
    g.add_node("confidence_gate", gate or triggers.trigger_gate)
    g.add_node("formulate_query", formulate_query or flare.make_formulate_query(parts),
               retry_policy=LM_RETRY)
    g.add_node("retrieve", retrieve or loop.make_retrieve(parts),
               retry_policy=LM_RETRY if retrieve else None)
    g.add_node("regenerate", regenerate or loop.make_generate(parts, "sentence",
                                                              reuse_draft=True),
               retry_policy=LM_RETRY)
    g.add_node("accept", loop.make_accept(parts))
    g.add_edge("draft", "confidence_gate")
    g.add_conditional_edges("confidence_gate", flare.route_after_gate)
    g.add_edge("formulate_query", "retrieve")
    g.add_edge("retrieve", "regenerate")
    g.add_edge("regenerate", "accept")
    g.add_conditional_edges("accept", loop.route_after_accept, {"next": "draft", "__end__": END})
    return g.compile(name=name, checkpointer=checkpointer)


def build_next_sentence_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                              splitter: SentenceSplitter | None = None,
                              checkpointer: Checkpointer = None) -> Compiled:
    """Retrieve at every sentence with the whole next sentence as query (Table 3, "Next")."""
    return build_flare_graph(lm=lm, retriever=retriever, splitter=splitter,
                             gate=triggers.always_fire,
                             formulate_query=flare.whole_draft_query, name="next_sentence",
                             checkpointer=checkpointer)


# The graphs langgraph.json serves: every component comes from the run's context.
graph = build_flare_graph()
next_sentence_graph = build_next_sentence_graph()

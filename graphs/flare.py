"""FLARE-direct as a LangGraph graph: only wiring; the nodes live in activerag.nodes."""

from __future__ import annotations

from activerag.nodes import flare
from activerag.nodes.parts import Parts
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from activerag.context import FlareContext
from activerag.errors import LMServerUnreachable
from activerag.lm import LM, LMServerError
from activerag.sentences import SentenceSplitter
from activerag.state import FlareInput, FlareOutput, FlareState

# Transient server trouble (restarts, 5xx) is retried; bad requests are not.
LM_RETRY = RetryPolicy(max_attempts=3, initial_interval=1.0,
                       retry_on=(LMServerError, LMServerUnreachable))


def build_flare_graph(
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    *,
    gate: flare.Node | None = None,
    formulate_query: flare.Node | None = None,
    name: str = "flare",
) -> CompiledStateGraph[FlareState, FlareContext, FlareInput, FlareOutput]:
    """Compile FLARE-direct; pass any component or node to swap it, None for the default.

    Unset components are made per run from the context (endpoint, model, store).
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = StateGraph(FlareState, context_schema=FlareContext, input_schema=FlareInput,
                   output_schema=FlareOutput)
    g.add_node("begin", flare.begin)
    g.add_node("retrieve", flare.make_retrieve(parts))
    g.add_node("draft", flare.make_draft(parts), retry_policy=LM_RETRY)
    g.add_node("confidence_gate", gate or flare.confidence_gate)
    g.add_node("formulate_query", formulate_query or flare.make_formulate_query(parts),
               retry_policy=LM_RETRY)
    g.add_node("regenerate", flare.make_regenerate(parts), retry_policy=LM_RETRY)
    g.add_node("accept", flare.accept)
    g.add_edge(START, "begin")
    g.add_conditional_edges("begin", flare.route_after_begin)
    g.add_conditional_edges("retrieve", flare.route_after_retrieve)
    g.add_edge("draft", "confidence_gate")
    g.add_conditional_edges("confidence_gate", flare.route_after_gate)
    g.add_edge("formulate_query", "retrieve")
    g.add_edge("regenerate", "accept")
    g.add_conditional_edges("accept", flare.route_after_accept)
    return g.compile(name=name)


# The graph langgraph.json serves: every component comes from the run's context.
graph = build_flare_graph()

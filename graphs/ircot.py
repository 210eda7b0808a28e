"""IRCoT (Trivedi et al. 2023, §3): interleaved reason and retrieve steps, then a reader:
wiring only."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY
from activerag.nodes.ircot import steps as ircot
from activerag.nodes.ircot.context import IRCoTContext
from activerag.nodes.ircot.state import IRCoTState
from activerag.nodes.ircot.steps import IRCoTNode
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM
from activerag.state import FlareInput, FlareOutput

IRCoTCompiled = CompiledStateGraph[IRCoTState, IRCoTContext, FlareInput, FlareOutput]


def build_ircot_graph(
    *,
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    reason: IRCoTNode | None = None,
    retrieve: IRCoTNode | None = None,
    context: type[IRCoTContext] = IRCoTContext,
    name: str = "ircot",
    checkpointer: Checkpointer = None,
) -> IRCoTCompiled:
    """Compile IRCoT: begin -> retrieve (the question) -> collect -> reason -> accept, looping
    through retrieve (the sentence) until the chain stops, then read.

    REASON replaces the reason step (it sets `step.sentence`); RETRIEVE the search for the
    step's query (it sets `step.documents`, which `collect` adds to the paragraphs: a reranker
    goes here; given one, it is retried on LM server errors). Unset components are made per
    run from the context; input and output are FLARE's, so the graph drops into a larger app.
    CONTEXT is the context class the graph's settings form shows (an IRCoTContext subclass).
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = StateGraph(IRCoTState, context_schema=context, input_schema=FlareInput,
                   output_schema=FlareOutput)
    g.add_node("begin", ircot.begin)
    g.add_node("retrieve", retrieve or ircot.make_retrieve(parts),
               retry_policy=LM_RETRY if retrieve else None)
    g.add_node("collect", ircot.collect)
    g.add_node("reason", reason or ircot.make_reason(parts), retry_policy=LM_RETRY)
    g.add_node("accept", ircot.accept)
    g.add_node("read", ircot.make_read(parts), retry_policy=LM_RETRY)
    g.add_edge(START, "begin")
    g.add_conditional_edges("begin", ircot.route_after_begin)
    g.add_edge("retrieve", "collect")
    g.add_edge("collect", "reason")
    g.add_edge("reason", "accept")
    g.add_conditional_edges("accept", ircot.route_after_accept)
    g.add_edge("read", END)
    return g.compile(name=name, checkpointer=checkpointer)


# The graph langgraph.json serves (and Adaptive-RAG's multi-step strategy): every component
# comes from the run's context.
graph = build_ircot_graph()

"""The paper's single-pass baselines: no retrieval and single-time retrieval (FLARE §2.2)."""

from __future__ import annotations

from activerag.graphs.flare import LM_RETRY
from activerag.nodes import flare
from activerag.nodes.baselines import make_generate
from activerag.nodes.parts import Parts
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from activerag.context import FlareContext
from activerag.lm import LM
from activerag.sentences import SentenceSplitter
from activerag.state import FlareInput, FlareOutput, FlareState


def build_single_graph(
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    *,
    retrieval: bool = True,
    name: str | None = None,
) -> CompiledStateGraph[FlareState, FlareContext, FlareInput, FlareOutput]:
    """Retrieve once with the question, then generate the whole answer.

    With retrieval=False this is the no-retrieval baseline.
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = StateGraph(FlareState, context_schema=FlareContext, input_schema=FlareInput,
                   output_schema=FlareOutput)
    g.add_node("begin", flare.begin)
    g.add_node("generate", make_generate(parts), retry_policy=LM_RETRY)
    g.add_edge(START, "begin")
    if retrieval:
        g.add_node("retrieve", flare.make_retrieve(parts))
        g.add_edge("begin", "retrieve")
        g.add_edge("retrieve", "generate")
    else:
        g.add_edge("begin", "generate")
    g.add_edge("generate", END)
    return g.compile(name=name or ("single" if retrieval else "no_retrieval"))


single_graph = build_single_graph()
no_retrieval_graph = build_single_graph(retrieval=False)

"""The paper's single-pass baselines: no retrieval and single-time retrieval (FLARE §2.2)."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY, Compiled, new_graph
from activerag.nodes import loop
from activerag.nodes.flare.single import make_generate_answer
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_single_graph(
    *,
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    retrieval: bool = True,
    name: str | None = None,
    checkpointer: Checkpointer = None,
) -> Compiled:
    """Retrieve once with the question, then generate the whole answer.

    With retrieval=False this is the no-retrieval baseline.
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    g = new_graph()
    g.add_node("begin", loop.begin)
    g.add_node("generate", make_generate_answer(parts), retry_policy=LM_RETRY)
    g.add_edge(START, "begin")
    if retrieval:
        g.add_node("retrieve_input", loop.make_retrieve_input(parts))
        g.add_edge("begin", "retrieve_input")
        g.add_edge("retrieve_input", "generate")
    else:
        g.add_edge("begin", "generate")
    g.add_edge("generate", END)
    return g.compile(name=name or ("single" if retrieval else "no_retrieval"),
                     checkpointer=checkpointer)


single_graph = build_single_graph()
no_retrieval_graph = build_single_graph(retrieval=False)

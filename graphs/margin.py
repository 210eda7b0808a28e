"""The margin gate (after TARG): the uncertainty gates' graph with MarginContext's settings,
its estimate the margin (nodes/margin/): wiring only.

    begin -> answer (no documents) -> estimate -> [retrieve with x -> answer_with_documents]
"""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.types import Checkpointer

from activerag.graphs.base import Compiled
from activerag.graphs.gated import build_gated_graph
from activerag.nodes.gated.steps import GateNode
from activerag.nodes.margin.context import MarginContext
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM


def build_margin_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                       splitter: SentenceSplitter | None = None,
                       answer: GateNode | None = None, estimate: GateNode | None = None,
                       name: str = "gate_margin", checkpointer: Checkpointer = None) -> Compiled:
    """Compile the margin gate: the gated graph, its settings MarginContext's. Pass any
    component or node to swap it (build_gated_graph's)."""
    return build_gated_graph(lm=lm, retriever=retriever, splitter=splitter, answer=answer,
                             estimate=estimate, context=MarginContext, name=name,
                             checkpointer=checkpointer)


# The graph langgraph.json serves: every component comes from the run's context.
margin_graph = build_margin_graph()

"""Uncertainty-gated single retrieval (Moskvoretskii et al. 2025), and ETC and DRAGIN-lite as
FLARE's graph with its gate (and DRAGIN-lite's query) swapped: wiring only.

    begin -> answer (no documents) -> estimate -> [retrieve with x -> answer_with_documents]
"""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY, Compiled, new_graph
from activerag.graphs.flare import build_flare_graph
from activerag.nodes import loop
from activerag.nodes.gated import steps as gated
from activerag.nodes.gated.context import DraginContext, EtcContext, GateContext
from activerag.nodes.gated.steps import GateNode
from activerag.nodes.loop import FlareNode
from activerag.nodes.parts import Parts
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM
from activerag.serving.token_lm import Sampler


def build_gated_graph(
    *,
    lm: LM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    token_lm: Sampler | None = None,
    answer: GateNode | None = None,
    estimate: GateNode | None = None,
    context: type[GateContext] = GateContext,
    name: str = "gated",
    checkpointer: Checkpointer = None,
) -> Compiled:
    """Compile the gated graph: the whole answer without documents, its uncertainty by the
    context's estimator, and only when uncertain one retrieval with the question and the whole
    answer again over its documents.

    ANSWER replaces the answer without documents, ESTIMATE the estimate (any node that sets
    {"step": {"fire": ...}}); TOKEN_LM is the sampler lexsim draws its answers from (unset:
    the run's server); CONTEXT is the context class the graph's settings form shows (a
    GateContext subclass: a gate with settings of its own).
    """
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter, token_lm=token_lm)  # type: ignore[arg-type]
    g = new_graph(context)
    g.add_node("begin", loop.begin)
    g.add_node("answer", answer or gated.make_answer_without_documents(parts),
               retry_policy=LM_RETRY)
    g.add_node("estimate", estimate or gated.make_estimate(parts), retry_policy=LM_RETRY)
    g.add_node("retrieve", loop.make_retrieve_input(parts))
    g.add_node("answer_with_documents", gated.make_answer_with_documents(parts),
               retry_policy=LM_RETRY)
    g.add_edge(START, "begin")
    g.add_edge("begin", "answer")
    g.add_edge("answer", "estimate")
    g.add_conditional_edges("estimate", gated.route_after_estimate,
                            {"retrieve": "retrieve", "__end__": END})
    g.add_edge("retrieve", "answer_with_documents")
    g.add_edge("answer_with_documents", END)
    return g.compile(name=name, checkpointer=checkpointer)


def build_etc_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                    splitter: SentenceSplitter | None = None,
                    gate: FlareNode | None = None, formulate_query: FlareNode | None = None,
                    regenerate: FlareNode | None = None, name: str = "flare_etc",
                    checkpointer: Checkpointer = None) -> Compiled:
    """FLARE with ETC's gate (Li et al. 2026): retrieve from the first word where the draft's
    entropy rises sharply, with FLARE's masked query (ETC's own query step reads attention),
    and continue the sentence from that word over the documents."""
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    return build_flare_graph(lm=lm, retriever=retriever, splitter=splitter,
                             gate=gate or gated.etc_gate,
                             formulate_query=formulate_query,
                             regenerate=regenerate or gated.make_continue(parts),
                             context=EtcContext, name=name, checkpointer=checkpointer)


def build_dragin_graph(*, lm: LM | None = None, retriever: BaseRetriever | None = None,
                       splitter: SentenceSplitter | None = None,
                       gate: FlareNode | None = None, formulate_query: FlareNode | None = None,
                       regenerate: FlareNode | None = None, name: str = "dragin_lite",
                       checkpointer: Checkpointer = None) -> Compiled:
    """FLARE with DRAGIN-lite's gate and query (after Su et al. 2024, without attention):
    retrieve from the first content word whose entropy is high, with the question and the
    draft's most surprising words, and continue the sentence from that word."""
    parts = Parts(lm=lm, retriever=retriever, splitter=splitter)
    return build_flare_graph(lm=lm, retriever=retriever, splitter=splitter,
                             gate=gate or gated.dragin_gate,
                             formulate_query=formulate_query or gated.dragin_query,
                             regenerate=regenerate or gated.make_continue(parts),
                             context=DraginContext, name=name, checkpointer=checkpointer)


# The graphs langgraph.json serves: every component comes from the run's context.
gated_graph = build_gated_graph()
etc_graph = build_etc_graph()
dragin_graph = build_dragin_graph()

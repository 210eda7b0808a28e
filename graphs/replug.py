"""REPLUG (Shi et al. 2023): an ensemble over the retrieved documents, one Send branch each."""

from __future__ import annotations

from typing import TypeAlias

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.graphs.base import LM_RETRY, Compiled
from activerag.graphs.flare import build_flare_graph
from activerag.nodes.base import Node
from activerag.nodes.loop import FlareNode
from activerag.nodes.parts import Parts
from activerag.nodes.replug import answers as replug_answers
from activerag.nodes.replug import flare_replug
from activerag.nodes.replug import steps as replug
from activerag.nodes.replug.context import ReplugContext
from activerag.nodes.replug.state import ReplugOutput, ReplugState
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM
from activerag.serving.token_lm import TokenLM
from activerag.state import FlareInput

ReplugGraph = CompiledStateGraph[ReplugState, ReplugContext, FlareInput, ReplugOutput]


ReplugNode: TypeAlias = Node[ReplugState, ReplugContext]


def build_replug_graph(
    *,
    lm: LM | None = None,
    token_lm: TokenLM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    retrieve: ReplugNode | None = None,
    ensemble: ReplugNode | None = None,
    combine: ReplugNode | None = None,
    name: str = "replug",
    checkpointer: Checkpointer = None,
) -> ReplugGraph:
    """Compile REPLUG: retrieve k scored documents, then round after round one look-ahead per
    document (Send), the ensemble's tokens (Eq. 2), and a trace entry per complete sentence.

    The answer modes (vote, rescore) instead let each document answer alone (LM, a Send
    branch each) and combine the answers; the token modes ensemble TOKEN_LM's next-token
    distributions. Pass a component or a node (RETRIEVE: documents and their weights;
    ENSEMBLE: one round's tokens from the look-aheads; COMBINE: the answer from the documents'
    own answers) to swap it; unset ones come from the run's context (endpoint, model, store).
    """
    parts = Parts(lm=lm, token_lm=token_lm, retriever=retriever, splitter=splitter)
    g = StateGraph(ReplugState, context_schema=ReplugContext, input_schema=FlareInput,
                   output_schema=ReplugOutput)
    g.add_node("begin", replug.begin)
    g.add_node("retrieve", retrieve or replug.make_retrieve(parts), retry_policy=LM_RETRY)
    g.add_node("propose", replug.make_propose(parts), retry_policy=LM_RETRY)
    g.add_node("ensemble", ensemble or replug.make_ensemble(parts), retry_policy=LM_RETRY)
    g.add_node("accept", replug.make_accept(parts))
    g.add_node("answer_alone", replug_answers.make_answer_alone(parts), retry_policy=LM_RETRY)
    g.add_node("combine", combine or replug_answers.make_combine(parts), retry_policy=LM_RETRY)
    g.add_edge(START, "begin")
    g.add_edge("begin", "retrieve")
    g.add_conditional_edges("retrieve", replug.route_after_retrieve,
                            ["propose", "answer_alone"])
    g.add_edge("answer_alone", "combine")
    g.add_edge("combine", END)
    g.add_edge("propose", "ensemble")
    g.add_conditional_edges("ensemble", replug.route_after_ensemble, ["propose", "accept"])
    g.add_conditional_edges("accept", replug.route_after_accept, ["propose", END])
    return g.compile(name=name, checkpointer=checkpointer)


graph = build_replug_graph()


def build_flare_replug_graph(
    *,
    lm: LM | None = None,
    token_lm: TokenLM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    gate: FlareNode | None = None,
    formulate_query: FlareNode | None = None,
    checkpointer: Checkpointer = None,
) -> Compiled:
    """FLARE whose regenerated sentences REPLUG writes: FLARE's gate decides when to retrieve
    and with what query (GATE and FORMULATE_QUERY swap them, as in build_flare_graph); the
    retrieved documents are ensembled (Eq. 2) instead of concatenated. Its context is
    FlareContext (k documents per retrieval)."""
    parts = Parts(lm=lm, token_lm=token_lm, retriever=retriever, splitter=splitter)
    return build_flare_graph(lm=lm, retriever=retriever, splitter=splitter,
                             gate=gate, formulate_query=formulate_query,
                             regenerate=flare_replug.make_ensemble_sentence(parts),
                             name="flare_replug", checkpointer=checkpointer)


flare_replug_graph = build_flare_replug_graph()

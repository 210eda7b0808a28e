"""SeaKR-lite (after Yao et al. 2025, self-aware re-ranking): FLARE and IRCoT whose retrieve
node keeps the documents that leave the LM least uncertain. Wiring only."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever
from langgraph.types import Checkpointer

from activerag.graphs.base import Compiled
from activerag.graphs.flare import build_flare_graph
from activerag.graphs.ircot import IRCoTCompiled, build_ircot_graph
from activerag.nodes.ircot import steps as ircot
from activerag.nodes.ircot.steps import IRCoTNode
from activerag.nodes.loop import FlareNode
from activerag.nodes.parts import Parts
from activerag.nodes.seakr.context import IRCoTSeakrContext, SeakrContext
from activerag.nodes.seakr.steps import collected_paragraphs, ircot_prompts, make_seakr_retrieve
from activerag.sentences import SentenceSplitter
from activerag.serving.lm import LM
from activerag.serving.token_lm import TokenLM


def build_flare_seakr_graph(
    *,
    lm: LM | None = None,
    token_lm: TokenLM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    gate: FlareNode | None = None,
    formulate_query: FlareNode | None = None,
    retrieve: FlareNode | None = None,
    checkpointer: Checkpointer = None,
) -> Compiled:
    """FLARE (§3.2) whose every retrieval fetches a pool of rerank_pool documents and keeps
    the k under which TOKEN_LM's pseudo-generation is least uncertain (SeakrContext). GATE and
    FORMULATE_QUERY swap FLARE's nodes; RETRIEVE the reranking retrieval itself."""
    parts = Parts(lm=lm, token_lm=token_lm, retriever=retriever, splitter=splitter)
    return build_flare_graph(lm=lm, retriever=retriever, splitter=splitter,
                             gate=gate, formulate_query=formulate_query,
                             retrieve=retrieve or make_seakr_retrieve(parts),
                             context=SeakrContext, name="flare_seakr",
                             checkpointer=checkpointer)


def build_ircot_seakr_graph(
    *,
    lm: LM | None = None,
    token_lm: TokenLM | None = None,
    retriever: BaseRetriever | None = None,
    splitter: SentenceSplitter | None = None,
    reason: IRCoTNode | None = None,
    retrieve: IRCoTNode | None = None,
    checkpointer: Checkpointer = None,
) -> IRCoTCompiled:
    """IRCoT (§3) whose every retrieval, the question's included, fetches a pool of
    rerank_pool paragraphs and adds the k under which TOKEN_LM's pseudo-generation of the next
    CoT sentence, over the paragraphs collected so far, is least uncertain (IRCoTSeakrContext).
    REASON swaps IRCoT's reason step; RETRIEVE the reranking retrieval itself."""
    parts = Parts(lm=lm, token_lm=token_lm, retriever=retriever, splitter=splitter)
    seakr = make_seakr_retrieve(parts, pool_retrieve=ircot.make_retrieve(parts),
                                beside=collected_paragraphs, prompts=ircot_prompts)
    return build_ircot_graph(lm=lm, retriever=retriever, splitter=splitter, reason=reason,
                             retrieve=retrieve or seakr, context=IRCoTSeakrContext,
                             name="ircot_seakr", checkpointer=checkpointer)


# The graphs langgraph.json serves: every component comes from the run's context.
flare_seakr_graph = build_flare_seakr_graph()
ircot_seakr_graph = build_ircot_seakr_graph()

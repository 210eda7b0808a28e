"""FB-RAG (Chawla et al. 2025) and its baselines, each a graph over the same nodes: a question
and its long context in, the strong reader's answer out, with the chunks each stage chose."""

from __future__ import annotations

from typing import Literal, TypeAlias

from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from activerag.errors import ActiveRagError
from activerag.graphs.base import LM_RETRY
from activerag.nodes.base import Node
from activerag.nodes.fb_rag import prompts as fb_rag_prompts
from activerag.nodes.fb_rag import steps as fb_rag
from activerag.nodes.fb_rag.context import FBRagContext
from activerag.nodes.fb_rag.parts import FBParts
from activerag.nodes.fb_rag.state import FBRagInput, FBRagOutput, FBRagState
from activerag.nodes.parts import Parts
from activerag.serving.lm import LM
from activerag.serving.token_lm import Sampler, TokenLM

FBRagGraph = CompiledStateGraph[FBRagState, FBRagContext, FBRagInput, FBRagOutput]
Baseline = Literal["long_context", "vanilla_rag", "op_rag", "self_route"]


FBRagNode: TypeAlias = Node[FBRagState, FBRagContext]


def _parts(lm: LM | None, token_lm: TokenLM | None, light_lm: Sampler | None,
           retriever: BaseRetriever | None) -> FBParts:
    return FBParts(Parts(lm=lm, token_lm=token_lm, retriever=retriever), light_lm)


def _graph() -> StateGraph[FBRagState, FBRagContext, FBRagInput, FBRagOutput]:
    return StateGraph(FBRagState, context_schema=FBRagContext, input_schema=FBRagInput,
                      output_schema=FBRagOutput)


def build_fb_rag_graph(*, lm: LM | None = None, token_lm: TokenLM | None = None,
                       light_lm: Sampler | None = None, retriever: BaseRetriever | None = None,
                       sample: FBRagNode | None = None, rerank: FBRagNode | None = None,
                       generate: FBRagNode | None = None, name: str = "fb_rag",
                       checkpointer: Checkpointer = None) -> FBRagGraph:
    """Compile FB-RAG: chunk the context, stage I (the question's BM25 chunks, X words),
    stage II (K samples of the light LM over them), rerank every chunk by the max over samples,
    stage III (the strong LM reads the best Y words in the context's order). LM, TOKEN_LM: the
    strong reader and its tokenizer; LIGHT_LM: the sampler; SAMPLE, RERANK, GENERATE swap
    those nodes; unset parts come from the context."""
    parts = _parts(lm, token_lm, light_lm, retriever)
    g = _graph()
    g.add_node("prepare", fb_rag.make_prepare(parts), retry_policy=LM_RETRY)
    g.add_node("recall_retrieve", fb_rag.recall_retrieve)
    g.add_node("sample", sample or fb_rag.make_sample(parts), retry_policy=LM_RETRY)
    g.add_node("rerank", rerank or fb_rag.rerank)
    g.add_node("generate", generate or fb_rag.make_generate(parts, "fb_rag"),
               retry_policy=LM_RETRY)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "recall_retrieve")
    g.add_edge("recall_retrieve", "sample")
    g.add_edge("sample", "rerank")
    g.add_edge("rerank", "generate")
    g.add_edge("generate", END)
    return g.compile(name=name, checkpointer=checkpointer)


def build_baseline_graph(kind: Baseline, *, lm: LM | None = None, token_lm: TokenLM | None = None,
                         retriever: BaseRetriever | None = None,
                         generate: FBRagNode | None = None,
                         checkpointer: Checkpointer = None) -> FBRagGraph:
    """Compile one of FB-RAG's baselines over the same nodes: long_context (the whole context,
    cut in the middle to fit), vanilla_rag (the question's best chunks, best first), op_rag
    (the same chunks in the context's order) or self_route (OP-RAG whose reader may answer
    "unanswerable", then the whole context). GENERATE swaps the reader of the chosen chunks
    (every kind but long_context)."""
    if kind == "long_context" and generate is not None:
        raise ActiveRagError("long_context reads the whole context with its own reader; "
                             "generate swaps the reader of chosen chunks (vanilla_rag, op_rag, "
                             "self_route): build one of those, or drop generate")
    parts = _parts(lm, token_lm, None, retriever)
    g = _graph()
    g.add_node("prepare", fb_rag.make_prepare(parts), retry_policy=LM_RETRY)
    g.add_edge(START, "prepare")
    if kind == "long_context":
        g.add_node("long_context", fb_rag.make_long_context(parts), retry_policy=LM_RETRY)
        g.add_edge("prepare", "long_context")
        g.add_edge("long_context", END)
        return g.compile(name=kind, checkpointer=checkpointer)
    g.add_node("select", fb_rag.make_select("score" if kind == "vanilla_rag" else "original"))
    instruction = fb_rag_prompts.SELF_ROUTE if kind == "self_route" else fb_rag_prompts.READ
    route = "vanilla_rag" if kind == "vanilla_rag" else "op_rag"
    g.add_node("generate", generate or fb_rag.make_generate(parts, route, instruction),
               retry_policy=LM_RETRY)
    g.add_edge("prepare", "select")
    g.add_edge("select", "generate")
    if kind == "self_route":
        g.add_node("long_context", fb_rag.make_long_context(parts), retry_policy=LM_RETRY)
        g.add_conditional_edges("generate", fb_rag.route_self, ["long_context", END])
        g.add_edge("long_context", END)
    else:
        g.add_edge("generate", END)
    return g.compile(name=kind, checkpointer=checkpointer)


graph = build_fb_rag_graph()
long_context_graph = build_baseline_graph("long_context")
vanilla_rag_graph = build_baseline_graph("vanilla_rag")
op_rag_graph = build_baseline_graph("op_rag")
self_route_graph = build_baseline_graph("self_route")
